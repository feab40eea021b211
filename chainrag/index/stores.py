"""What an index build computes per text, computed once: vectors and spaCy's annotations.

    vectors = EmbeddingCache().embed(embedder, texts, ctx)           # role "passage"
    mentions = AnnotationCache().mentions(ner, texts, ctx)
    sentences = AnnotationCache().sentences(splitter, passages, ctx)

Each is a :class:`~chainrag.core.text_store.TextStore` under ``$CHAINRAG_CACHE``: a value per
(space, text), where the space is what computed it — an embedder's identity and role, the file
identities and the device rule the index keys hold (so a retrained adapter or a GPU never
serves a stale vector); a NER's or splitter's identity and its model's version. A build asks
for all its texts, computes only those the store lacks (in chunks of ``chunk`` texts, each
stored as it is done, so a build killed half-way keeps what it computed), and every index,
question and recipe sharing a text shares its value.

:func:`stores` lists the caches under ``$CHAINRAG_CACHE`` with their sizes, :func:`clear`
empties them (``chainrag cache``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import attrs
import numpy as np

from chainrag.core.device import cache_devices
from chainrag.core.parts import parts
from chainrag.core.paths import cache_root, llm_cache_path
from chainrag.core.text_store import CHUNK, Codec, TextStore, vector_codec
from chainrag.core.text_store import digest as digest  # where callers found it
from chainrag.core.text_store import stored as stored  # where callers found it
from chainrag.core.types import FloatArray, Mention, Passage, Sentence
from chainrag.protocols.index import (
    NER,
    Embedder,
    EmbedRole,
    SentenceSplitter,
    StoresItsVectors,
    VersionedModel,
)
from chainrag.protocols.parts import FileIdentified, RemoteEncoder
from chainrag.protocols.resources import Resources
from chainrag.recipes.structure import identity


def file_identities(component: object) -> list[str]:
    """The ``cache_identity()`` of every component inside ``component`` that has one: the
    content hash of a file it reads (a trained adapter), so that retraining it into the same
    path invalidates the cached embeddings and indexes built with it."""
    return [part.cache_identity() for _, part in parts(component)
            if isinstance(part, FileIdentified)]  # fmt: skip


def endpoint_identities(component: object) -> list[str]:
    """The endpoint identity of every remote encoder inside ``component`` (its model and
    normalised ``api_base``, :func:`chainrag.core.endpoint.endpoint_identity`): what a cache key
    adds to :func:`~chainrag.recipes.structure.identity`, which leaves out how an endpoint is
    reached, so that two servers behind one model name never share a cached index or vector."""
    return [part.identity() for _, part in parts(component) if isinstance(part, RemoteEncoder)]


def model_versions(component: object) -> list[str]:
    """The :meth:`~chainrag.protocols.index.VersionedModel.model_version` of every part of
    ``component`` that says one (a spaCy pipeline's package version)."""
    return [part.model_version() for _, part in parts(component)
            if isinstance(part, VersionedModel)]  # fmt: skip


def space_of(component: object, **more: str) -> str:
    """The space a component's values are stored in: its identity, file identities, device
    rule and model versions (each only where it has one, as the index keys hold them)."""
    payload: dict[str, object] = {"component": identity(component), **more}
    if files := file_identities(component):
        payload["files"] = files
    if devices := cache_devices(component):
        payload["devices"] = devices
    if endpoints := endpoint_identities(component):
        payload["endpoints"] = endpoints
    if versions := model_versions(component):
        payload["versions"] = versions
    return digest(payload)


class EmbeddingCache:
    """Vectors by (embedder, role, text) in ``folder``/vectors.sqlite; an embedder that stores
    its own (:class:`~chainrag.protocols.index.StoresItsVectors`: a remote model, by its
    endpoint's identity, in ``$CHAINRAG_CACHE``'s store) is handed its texts as they are."""

    def __init__(
        self, folder: Path | None = None, *, chunk: int = CHUNK, max_bytes: int | None = None
    ) -> None:
        self.folder = folder or cache_root() / "embeddings"
        self.chunk = chunk
        self._max_bytes = max_bytes
        self._store: TextStore | None = None

    @property
    def store(self) -> TextStore:
        """The store, opened on first use."""
        if self._store is None:
            bound = {} if self._max_bytes is None else {"max_bytes": self._max_bytes}
            self._store = TextStore(self.folder / "vectors.sqlite", **bound)
        return self._store

    def embed(
        self, embedder: Embedder, texts: Sequence[str], ctx: Resources, role: EmbedRole = "passage"
    ) -> FloatArray:
        """The (n, d) vectors of ``texts``; only the texts the store lacks are embedded."""
        if not texts or isinstance(embedder, StoresItsVectors):  # a remote model stores its own
            return embedder(texts, ctx, role)
        space = space_of(embedder, role=role)
        rows = stored(self.store, space, texts, lambda part: list(embedder(part, ctx, role)),
                      vector_codec(), self.chunk)  # fmt: skip
        return np.stack(rows).astype(np.float32, copy=False)


def _mentions_codec() -> Codec[tuple[Mention, ...]]:
    def encode(row: tuple[Mention, ...]) -> bytes:
        return json.dumps([[m.text, m.label, m.start, m.end] for m in row]).encode()

    def decode(raw: bytes) -> tuple[Mention, ...]:
        return tuple(Mention(t, label, s, e) for t, label, s, e in json.loads(raw))

    return encode, decode


Spans = tuple[tuple[int, int], ...]


def _spans_codec() -> Codec[Spans]:
    def encode(spans: Spans) -> bytes:
        return json.dumps(spans).encode()

    def decode(raw: bytes) -> Spans:
        return tuple((int(s), int(e)) for s, e in json.loads(raw))

    return encode, decode


def sentence_spans(sentences: Sequence[Sentence], passages: int) -> list[Spans]:
    """Each passage's sentences as (start, end) offsets, from a splitter's output."""
    spans: list[list[tuple[int, int]]] = [[] for _ in range(passages)]
    for s in sentences:
        spans[s.passage].append((s.start, s.end))
    return [tuple(row) for row in spans]


def sentences_from(passages: Sequence[Passage], spans: Sequence[Spans]) -> tuple[Sentence, ...]:
    """The sentences of ``passages`` at ``spans``, numbered in order, with their provenance."""
    out: list[Sentence] = []
    for p_index, (passage, row) in enumerate(zip(passages, spans, strict=True)):
        for position, (start, end) in enumerate(row):
            text = passage.text[start:end]
            out.append(Sentence(len(out), text, p_index, passage.title, position, start, end))
    return tuple(out)


class AnnotationCache:
    """spaCy's work by text in ``folder``/annotations.sqlite: a NER's mentions of a sentence,
    a splitter's sentences of a passage (their offsets in its text)."""

    def __init__(self, folder: Path | None = None, *, chunk: int = CHUNK) -> None:
        self.folder = folder or cache_root() / "annotations"
        self.chunk = chunk
        self._store: TextStore | None = None

    @property
    def store(self) -> TextStore:
        """The store, opened on first use."""
        if self._store is None:
            self._store = TextStore(self.folder / "annotations.sqlite")
        return self._store

    def mentions(
        self, ner: NER, texts: Sequence[str], ctx: Resources
    ) -> tuple[tuple[Mention, ...], ...]:
        """``ner``'s mentions of each of ``texts``; only the texts the store lacks are tagged."""
        space = space_of(ner, role="ner")
        rows = stored(self.store, space, texts, lambda part: ner(part, ctx), _mentions_codec(),
                      self.chunk)  # fmt: skip
        return tuple(rows)

    def sentences(
        self, splitter: SentenceSplitter, passages: Sequence[Passage], ctx: Resources
    ) -> tuple[Sentence, ...]:
        """``splitter``'s sentences of ``passages``: a passage's sentences depend on its text
        only, so only the passage texts the store lacks are split."""

        def split(part: list[str]) -> list[Spans]:
            bare = [Passage(str(i), "", text) for i, text in enumerate(part)]
            return sentence_spans(splitter(bare, ctx), len(part))

        texts = [p.text for p in passages]
        spans = stored(self.store, space_of(splitter, role="sentences"), texts, split,
                       _spans_codec(), self.chunk)  # fmt: skip
        return sentences_from(passages, spans)


Store = Literal["embeddings", "annotations", "indexes", "llm", "rerank"]
STORES: tuple[Store, ...] = ("embeddings", "annotations", "indexes", "llm", "rerank")


@attrs.frozen
class StoreSize:
    """One cache under ``$CHAINRAG_CACHE``: its name, where it is, its bytes on disk."""

    name: Store
    path: Path
    bytes: int


def store_paths(root: Path | None = None) -> dict[Store, Path]:
    """Where each cache lives (the LLM's response cache is one SQLite file)."""
    root = root or cache_root()
    return {"embeddings": root / "embeddings", "annotations": root / "annotations",
            "indexes": root / "indexes", "llm": root / llm_cache_path().name,
            "rerank": root / "rerank"}  # fmt: skip


def _files(path: Path) -> list[Path]:
    """The files a cache is made of: a folder's, or a SQLite file with its -wal and -shm."""
    if path.is_dir():
        return [p for p in path.rglob("*") if p.is_file()]
    return [p for p in path.parent.glob(path.name + "*") if p.is_file()]


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in _files(path))


def stores(root: Path | None = None) -> list[StoreSize]:
    """Every cache with its size on disk (0 where it does not exist yet)."""
    return [StoreSize(name, path, _bytes(path)) for name, path in store_paths(root).items()]


def clear(names: Sequence[Store], root: Path | None = None) -> list[StoreSize]:
    """Delete the caches ``names`` (their files: a run using one recomputes what it needs);
    what each held, as :func:`stores` said before."""
    before = {s.name: s for s in stores(root)}
    for name in names:
        path = store_paths(root)[name]
        if path.is_dir():
            shutil.rmtree(path)
        else:
            for part in _files(path):
                part.unlink()
    return [before[name] for name in names]
