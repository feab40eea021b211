"""What a run's questions were asked over, beyond the run folder: the question as the dataset
file holds it (passages, gold evidence), and the index the run searched — the texts the
trace's unit numbers point at and, for a sentence graph, its edge layers. The view's pages and
the analyses of walks (:mod:`chainrag.analysis.gold_walks`) read them here.

    examples = Examples()                      # dataset files, each read once
    indexes = Indexes(IndexCache(), build=False)
    example = examples.example(run, "2hop__13548_13529")   # a QAExample, or Unavailable
    found = indexes.units(run, example)                    # Units, or Unavailable

An index is looked up in the index cache under the key the run stored it under (the question's
passages and the recipe's ``index:`` section, :meth:`~chainrag.index.build.IndexCache.path_for`);
with ``build`` a missing one is built as ``chainrag run`` built it (loading the recipe's spaCy
and embedding models) and cached. Whatever cannot be found is an :class:`Unavailable` saying
why, which the page shows in its place: nothing here raises for a missing file.

Layer: run (the reading side: a run's recipe through :mod:`chainrag.run.reading`); loads a
model only when asked to build a missing index, never the LLM layer nor the methods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
from scipy import sparse

from chainrag.context import StageContext
from chainrag.core.context import ModelStore
from chainrag.core.errors import ChainragError
from chainrag.core.types import Chunk, QAExample, Sentence
from chainrag.data.datasets import dataset_path, load_dataset
from chainrag.index.build import IndexCache, build_index
from chainrag.index.graph import ChunkIndex, SentenceGraph
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import RunError
from chainrag.run.meta import file_fingerprint
from chainrag.run.reading import Run, read_recipe

Unit = Sentence | Chunk


@attrs.frozen
class Unavailable:
    """Something the page cannot show, and why (shown in its place)."""

    reason: str


@attrs.frozen
class Units:
    """The units of the index a run searched for a question.

    Attributes:
        units: Sentences (a sentence graph) or chunks, ``units[i]`` is unit ``i`` of the trace.
        layers: The edge layers the walk used (weight > 0 in the recipe's ``edge_weights``),
            None for chunks.
        source: Where they came from (the cache folder, or "built now").
    """

    units: tuple[Unit, ...]
    layers: Mapping[str, sparse.csr_matrix] | None
    source: str


class Examples:
    """The runs' questions from their dataset files, each dataset read once; a file that
    differs from the one the run read (by fingerprint) gets a note."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self._loaded: dict[str, dict[str, QAExample] | Unavailable] = {}
        self.notes: dict[str, str] = {}

    def _load(self, run: Run) -> dict[str, QAExample] | Unavailable:
        name = run.meta.dataset
        if name not in self._loaded:
            try:
                examples = {e.qid: e for e in load_dataset(name, root=self.root)}
                path = dataset_path(name, self.root)[0]
                if file_fingerprint(path) != run.meta.dataset_fingerprint:
                    self.notes[name] = (
                        f"{path} is not the file the run read (another sha256): its gold "
                        "evidence and passages are shown as the file holds them now"
                    )
                self._loaded[name] = examples
            except (ChainragError, OSError) as exc:
                self._loaded[name] = Unavailable(f"dataset {name!r} cannot be read: {exc}")
        return self._loaded[name]

    def example(self, run: Run, qid: str) -> QAExample | Unavailable:
        """Question ``qid`` of the run's dataset."""
        loaded = self._load(run)
        if isinstance(loaded, Unavailable):
            return loaded
        found = loaded.get(qid)
        if found is None:
            return Unavailable(f"question {qid} is not in dataset {run.meta.dataset!r}")
        return found


def recipe_of(folder: Path) -> Recipe | Unavailable:
    """The run's stored recipe (:func:`~chainrag.run.reading.read_recipe`), or why it cannot
    be read."""
    try:
        return read_recipe(folder)
    except RunError as exc:
        return Unavailable(str(exc))


def walked_layers(recipe: Recipe, graph: SentenceGraph) -> dict[str, sparse.csr_matrix]:
    """The graph's layers the recipe's walk used: weight > 0 in ``retrieval.edge_weights``
    (every layer when it names none, as :meth:`SentenceGraph.view` sums them)."""
    weights = recipe.retrieval.edge_weights if recipe.retrieval is not None else {}
    if not weights:
        return dict(graph.layers)
    return {name: m for name, m in graph.layers.items() if weights.get(name, 0.0) > 0}


Progress = Callable[[str], None]


class Indexes:
    """The indexes of the runs' questions (see the module docstring); an index shared by
    several runs or questions (a pooled one) is read once."""

    def __init__(
        self,
        cache: IndexCache | None = None,
        *,
        build: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.cache = cache or IndexCache()
        self.build = build
        self.progress = progress
        self._recipes: dict[Path, Recipe | Unavailable] = {}
        self._indexes: dict[Path, SentenceGraph | ChunkIndex | Unavailable] = {}
        self._models = ModelStore()

    def recipe(self, run: Run) -> Recipe | Unavailable:
        if run.folder not in self._recipes:
            self._recipes[run.folder] = recipe_of(run.folder)
        return self._recipes[run.folder]

    def units(self, run: Run, example: QAExample) -> Units | Unavailable:
        """The units of the index ``run`` searched for ``example``."""
        if run.meta.index is not None:
            return Unavailable(
                f"answered over the shared corpus index {run.meta.index.folder}, which the "
                "view does not open: unit numbers are shown without their text"
            )
        recipe = self.recipe(run)
        if isinstance(recipe, Unavailable):
            return recipe
        if recipe.index is None:
            return Unavailable(f"the recipe of {run.folder} has no index: section")
        folder = self.cache.path_for(example.passages, recipe.index)
        index = self._index(folder, recipe, example)
        if isinstance(index, Unavailable):
            return index
        if isinstance(index, ChunkIndex):
            return Units(index.chunks, None, str(folder))
        return Units(index.sentences, walked_layers(recipe, index), str(folder))

    def _index(
        self, folder: Path, recipe: Recipe, example: QAExample
    ) -> SentenceGraph | ChunkIndex | Unavailable:
        if folder in self._indexes:
            return self._indexes[folder]
        spec = recipe.index
        assert spec is not None
        assert spec.embedder is not None
        found: SentenceGraph | ChunkIndex | Unavailable
        try:
            if (folder / "index.json").is_file():
                load = ChunkIndex.load if spec.chunker is not None else SentenceGraph.load
                found = load(folder, spec.embedder)
            elif self.build:
                if self.progress is not None:
                    self.progress(
                        f"building the index of {example.qid} ({len(example.passages)} passages)"
                    )
                ctx = StageContext(models=self._models)
                found = build_index(example.passages, spec, ctx, self.cache)[0]
            else:
                found = Unavailable(
                    f"the index is not in the index cache ({folder}); `chainrag view "
                    "--build-index` builds it with the recipe's models"
                )
        except (ChainragError, OSError, ImportError) as exc:
            found = Unavailable(f"the index at {folder} cannot be read: {exc}")
        self._indexes[folder] = found
        return found
