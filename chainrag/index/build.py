"""Building indexes from a recipe's ``index:``, timed per stage and cached by content hash.

    graph, report = build_index(passages, recipe.index, ctx, cache=IndexCache())

The sentence graph is split → NER → key entities → embeddings → one matrix per edge layer;
chunk mode is chunk → embeddings. An index is stored under the hash of its passages, its
``index:`` section and the format version, so it is rebuilt only when one of them changes;
what a build computes per text — a passage's sentences, a sentence's entities, a text's vector —
is kept by text (:mod:`chainrag.index.stores`), so a text shared by several questions' indexes,
or by recipes that differ only in an edge rule, is computed once.

A build given ``turns`` (a run's CPU build turns) holds one for its CPU work, and gives it back
while a remote embedder waits on the network, so another question builds meanwhile.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Protocol

import attrs
import numpy as np

from chainrag.components.index.key_entities import entity_vocabulary
from chainrag.core.device import cache_devices
from chainrag.core.errors import ChainragError
from chainrag.core.parts import parts
from chainrag.core.paths import cache_root
from chainrag.core.types import FloatArray, GraphInputs, Mention, Passage, ScoredEntity, Sentence
from chainrag.index.graph import FORMAT_VERSION, ChunkIndex, IndexFormatError, SentenceGraph
from chainrag.index.stores import AnnotationCache, endpoint_identities
from chainrag.index.stores import EmbeddingCache as EmbeddingCache  # where callers found them
from chainrag.index.stores import digest as digest
from chainrag.index.stores import file_identities as file_identities
from chainrag.protocols.index import NER, Embedder, SentenceSplitter
from chainrag.protocols.parts import RemoteEncoder
from chainrag.protocols.resources import Resources
from chainrag.recipes.recipe import IndexSpec
from chainrag.recipes.structure import identity

Index = SentenceGraph | ChunkIndex


class IndexBuildError(ChainragError):
    """The recipe's ``index:`` cannot build an index (a stage it needs is missing)."""


@attrs.frozen
class BuildReport:
    """What a build did: seconds per stage (empty when loaded from the cache) and sizes."""

    seconds: dict[str, float]
    cached: bool
    units: int
    entities: int = 0
    edges: dict[str, int] = attrs.field(factory=dict)


def entity_name(mention: Mention) -> str:
    """The name an entity is indexed under: whitespace collapsed, case folded, edges trimmed."""
    return re.sub(r"\s+", " ", mention.text).strip(" .,;:'\"()[]").casefold()


class IndexCache:
    """Built indexes on disk, one folder per (passages, ``index:`` section, format) hash, and
    beside them the stores of what a build computes per text (vectors, annotations)."""

    def __init__(
        self,
        folder: Path | None = None,
        embeddings: EmbeddingCache | None = None,
        annotations: AnnotationCache | None = None,
    ):
        self.folder = folder or cache_root() / "indexes"
        self.embeddings = embeddings or EmbeddingCache(self.folder.parent / "embeddings")
        self.annotations = annotations or AnnotationCache(self.folder.parent / "annotations")

    def path_for(self, passages: Sequence[Passage], spec: IndexSpec) -> Path:
        payload = {
            "format": FORMAT_VERSION,
            "index": identity(spec),
            "passages": [[p.pid, p.title, p.text] for p in passages],
        }
        if files := file_identities(spec):  # only then: older keys stay valid
            payload["files"] = files
        if devices := cache_devices(spec):
            payload["devices"] = devices
        if endpoints := endpoint_identities(spec):
            payload["endpoints"] = endpoints
        key = digest(payload)
        return self.folder / key[:32]


@contextmanager
def _timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - start


def waits_on_network(embedder: Embedder) -> bool:
    """Whether ``embedder``, or a model inside it (an adapter's base), sends its texts to an
    endpoint: its time is then the network's, not the CPU's."""
    return any(isinstance(part, RemoteEncoder) for _, part in parts(embedder))


def spacy_stages(spec: IndexSpec | None) -> tuple[object, ...]:
    """The stages of an ``index:`` section that may run spaCy in worker processes (its splitter
    and its NER; :mod:`~chainrag.components.index.spacy_workers`)."""
    return () if spec is None else (spec.splitter, spec.ner)


class Turn(Protocol):
    """A run's CPU build turns as a build takes them: a semaphore, or
    :class:`~chainrag.index.turns.Turns` (or its :meth:`~chainrag.index.turns.Turns.behind`)."""

    def acquire(self, blocking: bool = True) -> bool: ...

    def release(self) -> None: ...


@contextmanager
def held(turns: Turn | None) -> Iterator[None]:
    """One of ``turns`` held for the block (nothing where there are none)."""
    if turns is not None:
        turns.acquire()
    try:
        yield
    finally:
        if turns is not None:
            turns.release()


@contextmanager
def given_back(turns: Turn | None) -> Iterator[None]:
    """The turn the caller holds given back for the block and taken again after it (behind the
    builds that took it meanwhile)."""
    if turns is None:
        yield
        return
    turns.release()
    try:
        yield
    finally:
        turns.acquire()


def _embed(
    embedder: Embedder,
    texts: Sequence[str],
    ctx: Resources,
    cache: EmbeddingCache | None,
    turns: Turn | None,
) -> FloatArray:
    """The texts' vectors (from the store where it holds them); the caller's turn given back
    while a remote embedder waits on the network."""
    with given_back(turns) if waits_on_network(embedder) else nullcontext():
        vectors = cache.embed(embedder, texts, ctx) if cache is not None else embedder(texts, ctx)
    return vectors.reshape(len(texts), -1) if len(texts) == 0 else vectors


def annotated(
    passages: Sequence[Passage],
    splitter: SentenceSplitter,
    ner: NER | None,
    ctx: Resources,
    annotations: AnnotationCache | None,
    seconds: dict[str, float],
) -> tuple[tuple[Sentence, ...], list[list[str]]]:
    """The passages' sentences and each one's entity names (none without ``ner``), from the
    annotation store where it holds them; the seconds of each stage go into ``seconds``."""
    with _timed(seconds, "split"):
        sentences = (
            annotations.sentences(splitter, passages, ctx)
            if annotations is not None
            else splitter(passages, ctx)
        )
    names: list[list[str]] = [[] for _ in sentences]
    if ner is not None:
        texts = [s.text for s in sentences]
        with _timed(seconds, "ner"):
            mentions = (
                annotations.mentions(ner, texts, ctx)
                if annotations is not None
                else ner(texts, ctx)
            )
        names = [[n for n in map(entity_name, row) if n] for row in mentions]
    return tuple(sentences), names


def build_sentence_graph(
    passages: Sequence[Passage],
    spec: IndexSpec,
    ctx: Resources,
    embeddings: EmbeddingCache | None,
    annotations: AnnotationCache | None = None,
    turns: Turn | None = None,
) -> tuple[SentenceGraph, dict[str, float]]:
    """Build a :class:`SentenceGraph` from ``passages`` as ``spec`` says; seconds per stage.
    With the stores, a text they hold is not split, tagged or embedded again. The caller holds
    one of ``turns``, given back while a remote embedder waits."""
    if spec.splitter is None or spec.embedder is None:
        raise IndexBuildError("a sentence graph needs index.splitter and index.embedder")
    seconds: dict[str, float] = {}
    sentences, names = annotated(passages, spec.splitter, spec.ner, ctx, annotations, seconds)
    texts = [s.text for s in sentences]
    with _timed(seconds, "key_entities"):
        if spec.key_entities is not None:
            keys = spec.key_entities(names)
        else:  # no scorer: every entity is key (α = 100 without scores)
            keys = tuple(tuple(ScoredEntity(n, 0.0) for n in dict.fromkeys(row)) for row in names)
    with _timed(seconds, "embed"):
        vectors = _embed(spec.embedder, texts, ctx, embeddings, turns)
    inputs = GraphInputs(tuple(sentences), tuple(keys), vectors)
    layers = {}
    for name, builder in spec.edges.items():
        with _timed(seconds, f"edges.{name}"):
            layers[name] = builder(inputs)
    with _timed(seconds, "entity_index"):
        entities, counts = entity_vocabulary(names)
        incidence = counts.astype(np.float32)
        incidence.data[:] = 1.0
    graph = SentenceGraph(
        passages=tuple(passages),
        sentences=tuple(sentences),
        embeddings=vectors,
        embedder=spec.embedder,
        entities=tuple(entities),
        incidence=incidence,
        key_entities=tuple(keys),
        layers=layers,
    )
    return graph, seconds


def build_chunk_index(
    passages: Sequence[Passage], spec: IndexSpec, ctx: Resources,
    embeddings: EmbeddingCache | None, turns: Turn | None = None,
) -> tuple[ChunkIndex, dict[str, float]]:  # fmt: skip
    """Build a :class:`ChunkIndex` (chunk mode) from ``passages``; seconds per stage (the
    caller holds one of ``turns``, given back while a remote embedder waits)."""
    if spec.chunker is None or spec.embedder is None:
        raise IndexBuildError("chunk mode needs index.chunker and index.embedder")
    seconds: dict[str, float] = {}
    with _timed(seconds, "chunk"):
        chunks = spec.chunker(passages)
    texts = [c.text for c in chunks]
    with _timed(seconds, "embed"):
        vectors = _embed(spec.embedder, texts, ctx, embeddings, turns)
    return ChunkIndex(tuple(passages), tuple(chunks), vectors, spec.embedder), seconds


def build_index(
    passages: Sequence[Passage], spec: IndexSpec, ctx: Resources, cache: IndexCache | None = None,
    turns: Turn | None = None,
) -> tuple[Index, BuildReport]:  # fmt: skip
    """Load the index for ``passages`` from ``cache`` or build (and store) it, the build in one
    of ``turns`` (a run's CPU build turns), given back while a remote embedder waits on the
    network."""
    chunked = spec.chunker is not None
    folder = cache.path_for(passages, spec) if cache is not None else None
    if folder is not None and (folder / "index.json").is_file():
        assert spec.embedder is not None
        try:
            index: Index = (
                ChunkIndex.load(folder, spec.embedder)
                if chunked
                else SentenceGraph.load(folder, spec.embedder)
            )
            return index, _report(index, {}, cached=True)
        except IndexFormatError:
            pass  # rebuilt below and overwritten
    embeddings = cache.embeddings if cache is not None else None
    with held(turns):
        if chunked:
            index, seconds = build_chunk_index(passages, spec, ctx, embeddings, turns)
        else:
            annotations = cache.annotations if cache is not None else None
            index, seconds = build_sentence_graph(passages, spec, ctx, embeddings, annotations,
                                                  turns)  # fmt: skip
        if folder is not None:
            index.save(folder)
    return index, _report(index, seconds, cached=False)


def _report(index: Index, seconds: dict[str, float], cached: bool) -> BuildReport:
    if isinstance(index, SentenceGraph):
        return BuildReport(seconds, cached, len(index), len(index.entities), index.edge_counts())
    return BuildReport(seconds, cached, len(index))
