"""Indexing from a recipe file: what ``chainrag index`` builds, with typed summaries.

Two ways, as the command offers them:

- the indexes of a dataset's contexts (one per question of a dev set, or one over a shared
  corpus), each built or loaded from the index cache by :func:`chainrag.index.build_index`:
  :func:`contexts_of`, then :func:`index_contexts`, which sums what they hold
  (:class:`IndexTotals`);
- one corpus index built in a stream into a folder, resumable (:mod:`chainrag.index.corpus.build`):
  :func:`build_from_recipe` (:class:`CorpusBuild`), then :func:`prepare_search`, which builds
  the vector index the recipe's seed retriever searches so the first question does not wait.

Layer: index and graph (see :mod:`chainrag.index.corpus`); reads recipes and datasets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.context import StageContext
from chainrag.core.types import Passage
from chainrag.data.datasets import load_corpus, load_dataset, shared_corpus
from chainrag.index.build import IndexBuildError, IndexCache, build_index, spacy_stages
from chainrag.index.corpus.build import Dtype, Engine, LocalEngine, build_corpus_index
from chainrag.index.corpus.store import CorpusIndexError
from chainrag.protocols.index import VectorSearch
from chainrag.protocols.parts import Searched
from chainrag.protocols.resources import Resources
from chainrag.recipes.recipe import IndexSpec, Recipe, load_recipe

Progress = Callable[[str, int, int], None]
"""``progress(label, done, total)``."""

Contexts = list[tuple[str, tuple[Passage, ...]]]
"""``(name, passages)`` per context to index: a question id, or a corpus's name."""

ENGINES = ("local", "ray")


def loaded(recipe: Path | Recipe) -> Recipe:
    """A recipe given by its file (loaded now) or already loaded (with ``--set`` changes)."""
    return recipe if isinstance(recipe, Recipe) else load_recipe(recipe)


def index_section(recipe: Path | Recipe) -> IndexSpec:
    """The ``index:`` section of a recipe (file), or an error naming it."""
    spec = loaded(recipe).index
    if spec is None:
        name = recipe.name if isinstance(recipe, Recipe) else recipe
        raise IndexBuildError(f"{name} has no index: section")
    return spec


def contexts_of(
    dataset: str | None,
    corpus: str | None,
    limit: int | None = None,
    say: Callable[[str], None] | None = None,
) -> Contexts:
    """The contexts to index: one per question of ``dataset`` (its first ``limit``), or one
    over ``corpus`` (a name or a file), or over the corpus ``dataset``'s questions share (a
    HippoRAG train set's, or the ``NAME_corpus.json`` beside a question file); ``say`` is told
    the format detected in a dataset given as a file."""
    if (dataset is None) == (corpus is None):
        raise ValueError("give exactly one of dataset and corpus")
    shared = shared_corpus(dataset) if dataset is not None else None
    if shared is not None:
        corpus, dataset = shared, None
    if dataset is not None:
        questions = load_dataset(dataset, limit, say=say)
        if not any(q.passages for q in questions):
            raise IndexBuildError(
                f"{dataset}: its questions carry no passages of their own; index a corpus "
                "instead (--corpus FILE)"
            )
        return [(q.qid, q.passages) for q in questions]
    assert corpus is not None
    return [(corpus, tuple(load_corpus(corpus)))]


@attrs.frozen
class IndexTotals:
    """What the indexes of some contexts hold, summed; ``seconds`` per stage of those built."""

    contexts: int
    built: int
    chunked: bool
    units: int
    entities: int
    edges: Mapping[str, int]
    seconds: Mapping[str, float]

    def lines(self) -> list[str]:
        """The summary ``chainrag index`` prints."""
        kind = "chunks" if self.chunked else "sentences"
        cached = self.contexts - self.built
        lines = [f"{self.contexts} index(es): {self.built} built, {cached} from the cache",
                 f"{kind}: {self.units:,}   entities: {self.entities:,}"]  # fmt: skip
        lines += [f"edges {name}: {count:,}" for name, count in self.edges.items()]
        if self.seconds:
            lines.append("seconds per stage (built indexes only):")
            lines += [f"  {stage:<14} {s:8.2f}" for stage, s in self.seconds.items()]
        return lines


def index_contexts(
    contexts: Contexts,
    spec: IndexSpec,
    ctx: Resources,
    cache: IndexCache | None = None,
    progress: Progress | None = None,
) -> IndexTotals:
    """Build (or load from ``cache``) the index of every context; what they hold, summed.

    ``progress("indexing", done, total)`` is called before the first and after each context.
    """
    seconds: dict[str, float] = {}
    edges: dict[str, int] = {}
    units = entities = built = 0
    if progress:
        progress("indexing", 0, len(contexts))
    for done, (_, passages) in enumerate(contexts, 1):
        _, report = build_index(passages, spec, ctx, cache)
        built += not report.cached
        units, entities = units + report.units, entities + report.entities
        for stage, s in report.seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + s
        for name, count in report.edges.items():
            edges[name] = edges.get(name, 0) + count
        if progress:
            progress("indexing", done, len(contexts))
    return IndexTotals(len(contexts), built, spec.chunker is not None, units, entities,
                       edges, seconds)  # fmt: skip


@attrs.frozen
class CorpusBuild:
    """A corpus index's folder after a build session, as its manifest counts it.

    ``stages`` are the seconds of every stage (this and earlier sessions); ``seconds`` this
    session's.
    """

    folder: Path
    passages: int
    units: int
    entities: int
    key_entities: int
    edges: Mapping[str, int]
    stages: Mapping[str, float]
    seconds: float

    @classmethod
    def of(cls, folder: Path, manifest: Mapping[str, Any], seconds: float) -> CorpusBuild:
        """Read a complete build's manifest (as :func:`build_corpus_index` returns it)."""
        counts = manifest["counts"]
        return cls(folder, counts["passages"], counts["sentences"], counts["entities"],
                   counts["key_entities"], dict(counts["edges"]), dict(manifest["stages"]),
                   seconds)  # fmt: skip

    def lines(self) -> list[str]:
        """The summary ``chainrag index --out-dir`` prints."""
        edges = ", ".join(f"{k} {v:,}" for k, v in self.edges.items()) or "none"
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in self.stages.items())
        return [
            f"{self.folder}: {self.passages:,} passages, {self.units:,} units, "
            f"{self.entities:,} entities ({self.key_entities:,} key), edges: {edges}",
            f"stages (this and earlier sessions): {stages}; this session {self.seconds:.1f} s",
        ]


def engine_named(name: str, ctx: Resources) -> Engine:
    """The encoding engine called ``name``: ``local`` (this process, ``ctx``'s models) or
    ``ray`` (Ray Data; ``RAY_ADDRESS`` joins a cluster)."""
    if name == "local":
        return LocalEngine(ctx)
    if name == "ray":
        from chainrag.index.corpus.ray_engine import RayEngine

        return RayEngine()
    raise CorpusIndexError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")


def build_from_recipe(
    recipe: Path | Recipe,
    sources: Sequence[str],
    out: Path,
    *,
    dtype: Dtype = "float32",
    batch_passages: int = 512,
    batch_sentences: int = 4096,
    engine: str = "local",
    progress: Progress | None = None,
) -> CorpusBuild:
    """Build, or resume building, the corpus index of ``sources`` into ``out`` with the
    recipe's ``index:`` section (see :func:`build_corpus_index`). Built in this process
    (``local``), its spaCy stages that leave ``workers`` unset run in worker processes that
    live as long as the build
    (:func:`~chainrag.components.index.spacy_workers.build_placement`): a script calling this
    keeps its own work under ``if __name__ == "__main__":``, as for a threaded run."""
    from chainrag.components.index.spacy_workers import build_placement, workers_placed

    started = time.perf_counter()
    spec = index_section(recipe)
    ctx = StageContext()
    encoding = engine_named(engine, ctx)
    placing = build_placement() if isinstance(encoding, LocalEngine) else 0
    with workers_placed(spacy_stages(spec), ctx.models, placing):
        manifest = build_corpus_index(
            sources, spec, out, ctx, batch_passages=batch_passages,
            batch_sentences=batch_sentences, dtype=dtype, engine=encoding, progress=progress,
        )  # fmt: skip
    return CorpusBuild.of(out, manifest, time.perf_counter() - started)


@attrs.frozen
class SearchReady:
    """The vector index a recipe's seed retriever searches, built (or read) in ``seconds``."""

    search: VectorSearch
    seconds: float


def prepare_search(recipe: Path | Recipe, out: Path) -> SearchReady | None:
    """Build the vector index the recipe's seed retriever searches the corpus index in ``out``
    with, so that the first question does not pay for it; None when it searches exactly (no
    vector index) or names no search."""
    from chainrag.components.retrieval.search import ExactSearch
    from chainrag.index.corpus.store import CorpusIndex

    recipe = loaded(recipe)
    seed = recipe.retrieval.seed if recipe.retrieval else None
    search = seed.search if isinstance(seed, Searched) else None
    if search is None or isinstance(search, ExactSearch) or recipe.index is None:
        return None
    assert recipe.index.embedder is not None
    started = time.perf_counter()
    CorpusIndex.open(out, recipe.index.embedder).vector_index(search)
    return SearchReady(search, time.perf_counter() - started)
