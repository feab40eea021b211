"""The sentence graph (ChainRAG §3.1) and the chunk index, with their on-disk format.

A :class:`SentenceGraph` holds the sentences with provenance, their embeddings, the entity
incidence (every entity, not only the key ones), each sentence's key entities, and one sparse
matrix per edge layer (``ec``, ``ss``, ``sa`` or whatever the recipe names them). Layers are
never merged implicitly: :meth:`SentenceGraph.adjacency` sums them with explicit weights.

On disk an index is a folder: ``index.json`` (format version, texts, provenance, entities) and
``arrays.npz`` (embeddings and the CSR arrays of every matrix; read with ``allow_pickle=False``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from scipy import sparse

from chainrag.core.errors import ChainragError
from chainrag.core.types import Chunk, FloatArray, Passage, ScoredEntity, Sentence
from chainrag.protocols.index import Embedder
from chainrag.protocols.units import Chunked, Searchable, Sentenced

FORMAT_VERSION = 2


class IndexFormatError(ChainragError):
    """An index folder is missing, from another format version, or inconsistent."""


def _same_matrix(a: sparse.csr_matrix, b: sparse.csr_matrix) -> bool:
    return bool(a.shape == b.shape and (a != b).nnz == 0)


def _same_layers(a: Mapping[str, sparse.csr_matrix], b: Mapping[str, sparse.csr_matrix]) -> bool:
    return a.keys() == b.keys() and all(_same_matrix(a[k], b[k]) for k in a)


def _same_array(a: FloatArray, b: FloatArray) -> bool:
    return bool(a.shape == b.shape and np.array_equal(a, b))


@attrs.frozen
class SentenceGraph:
    """Sentences as nodes, one CSR matrix per edge layer; implements ``Graph`` for retrieval.

    Attributes:
        passages: The passages the sentences come from.
        sentences: The nodes, ``sentences[i].sid == i``.
        embeddings: (n, d) L2-normalised sentence embeddings.
        embedder: The embedder that made them (queries must use the same one).
        entities: Entity names, the columns of ``incidence``.
        incidence: (n × E) 0/1 matrix: sentence i mentions entity j.
        key_entities: Each sentence's key entities with their importance.
        layers: Edge layer name → n×n symmetric CSR float32 matrix.
    """

    passages: tuple[Passage, ...]
    sentences: tuple[Sentence, ...]
    embeddings: FloatArray = attrs.field(eq=attrs.cmp_using(eq=_same_array), hash=False)
    embedder: Embedder = attrs.field(eq=False, hash=False)
    entities: tuple[str, ...]
    incidence: sparse.csr_matrix = attrs.field(eq=attrs.cmp_using(eq=_same_matrix), hash=False)
    key_entities: tuple[tuple[ScoredEntity, ...], ...]
    layers: Mapping[str, sparse.csr_matrix] = attrs.field(
        eq=attrs.cmp_using(eq=_same_layers), hash=False
    )

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(s.text for s in self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    def passage_of(self, unit: int) -> int:
        """The number of sentence ``unit``'s passage (``SourcePassages``)."""
        return self.sentences[unit].passage

    def passage(self, number: int) -> Passage:
        """The passage numbered ``number`` (``SourcePassages``)."""
        return self.passages[number]

    def adjacency(self, weights: Mapping[str, float] | None = None) -> sparse.csr_matrix:
        """``Σ_t w_t · A_t`` over the named layers (default: every layer with weight 1)."""
        weights = dict.fromkeys(self.layers, 1.0) if weights is None else weights
        unknown = sorted(set(weights) - set(self.layers))
        if unknown:
            raise KeyError(f"no edge layer {unknown}; this graph has {sorted(self.layers)}")
        n = len(self.sentences)
        total = sparse.csr_matrix((n, n), dtype=np.float32)
        for name, w in weights.items():
            if w:
                total = total + self.layers[name] * np.float32(w)
        out = sparse.csr_matrix(total, dtype=np.float32)
        out.sort_indices()
        return out

    def neighbours(
        self, units: Sequence[int], hops: int = 1, layers: Sequence[str] | None = None
    ) -> tuple[int, ...]:
        """Sentences within ``hops`` steps of ``units`` over ``layers`` (default all), excluding
        ``units``; nearer first, then by index."""
        names = list(self.layers) if layers is None else list(layers)
        adjacency = self.adjacency(dict.fromkeys(names, 1.0))
        seen = np.zeros(len(self.sentences), dtype=bool)
        frontier = np.unique(np.asarray(units, dtype=np.int64))
        seen[frontier] = True
        found: list[int] = []
        for _ in range(hops):
            if frontier.size == 0:
                break
            reached = np.unique(adjacency[frontier].indices)
            new = reached[~seen[reached]]
            seen[new] = True
            found.extend(new.tolist())
            frontier = new
        return tuple(found)

    def view(self, weights: Mapping[str, float] | None = None) -> GraphView:
        """This graph as retrieval walks it: the layers summed with ``weights`` (default 1 each)."""
        return GraphView(self, self.adjacency(weights))

    def edge_counts(self) -> dict[str, int]:
        """Undirected edges per layer."""
        return {name: int(m.nnz // 2) for name, m in self.layers.items()}

    # ------------------------------------------------------------------- save / load

    def save(self, folder: Path) -> None:
        """Write the graph to ``folder`` atomically (a temporary folder renamed into place)."""
        arrays: dict[str, np.ndarray] = {"embeddings": self.embeddings}
        _put_csr(arrays, "incidence", self.incidence)
        for name, matrix in self.layers.items():
            _put_csr(arrays, f"layer.{name}", matrix)
        meta = {
            "format": FORMAT_VERSION,
            "kind": "sentence_graph",
            "passages": [attrs.asdict(p) for p in self.passages],
            "sentences": [attrs.astuple(s) for s in self.sentences],
            "entities": list(self.entities),
            "key_entities": [[[e.name, e.score] for e in row] for row in self.key_entities],
            "layers": list(self.layers),
        }
        _write_folder(folder, meta, arrays)

    @classmethod
    def load(cls, folder: Path, embedder: Embedder) -> SentenceGraph:
        """Read a graph written by :meth:`save`; ``embedder`` is the recipe's."""
        meta, arrays = _read_folder(folder, "sentence_graph")
        try:
            sentences = tuple(Sentence(*row) for row in meta["sentences"])
            return cls(
                passages=tuple(_passage(p) for p in meta["passages"]),
                sentences=sentences,
                embeddings=arrays["embeddings"],
                embedder=embedder,
                entities=tuple(meta["entities"]),
                incidence=_get_csr(arrays, "incidence"),
                key_entities=tuple(
                    tuple(ScoredEntity(n, float(s)) for n, s in row) for row in meta["key_entities"]
                ),
                layers={name: _get_csr(arrays, f"layer.{name}") for name in meta["layers"]},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"index at {folder} is inconsistent: {exc!r}") from exc


@attrs.frozen
class GraphView:
    """A sentence graph with its layers combined: what an expander walks (``Graph`` protocol).

    ``neighbours`` orders the units one hop away by the summed weight of their edges into the
    given units, strongest first, then by index: under a word budget the best-connected
    sentences come first.
    """

    graph: SentenceGraph
    weighted: sparse.csr_matrix = attrs.field(eq=attrs.cmp_using(eq=_same_matrix), hash=False)

    @property
    def texts(self) -> tuple[str, ...]:
        return self.graph.texts

    @property
    def sentences(self) -> tuple[Sentence, ...]:
        return self.graph.sentences

    @property
    def embeddings(self) -> FloatArray:
        return self.graph.embeddings

    @property
    def embedder(self) -> Embedder:
        return self.graph.embedder

    def passage_of(self, unit: int) -> int:
        """The number of sentence ``unit``'s passage (``SourcePassages``)."""
        return self.graph.passage_of(unit)

    def passage(self, number: int) -> Passage:
        """The passage numbered ``number`` (``SourcePassages``)."""
        return self.graph.passage(number)

    def neighbours(self, units: Sequence[int]) -> tuple[int, ...]:
        given = np.unique(np.asarray(units, dtype=np.int64))
        if given.size == 0:
            return ()
        strength = np.asarray(self.weighted[given].sum(axis=0)).ravel()
        strength[given] = 0.0
        reached = np.nonzero(strength > 0)[0]
        order = reached[np.lexsort((reached, -strength[reached]))]
        return tuple(int(i) for i in order)


@attrs.frozen
class ChunkIndex:
    """Passages cut into word chunks with their embeddings: NaiveRAG's index, "w/o Graph"."""

    passages: tuple[Passage, ...]
    chunks: tuple[Chunk, ...]
    embeddings: FloatArray = attrs.field(eq=attrs.cmp_using(eq=_same_array), hash=False)
    embedder: Embedder = attrs.field(eq=False, hash=False)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(c.text for c in self.chunks)

    def __len__(self) -> int:
        return len(self.chunks)

    def passage_of(self, unit: int) -> int:
        """The number of chunk ``unit``'s passage (``SourcePassages``)."""
        return self.chunks[unit].passage

    def passage(self, number: int) -> Passage:
        """The passage numbered ``number`` (``SourcePassages``)."""
        return self.passages[number]

    def save(self, folder: Path) -> None:
        meta = {
            "format": FORMAT_VERSION,
            "kind": "chunks",
            "passages": [attrs.asdict(p) for p in self.passages],
            "chunks": [attrs.astuple(c) for c in self.chunks],
        }
        _write_folder(folder, meta, {"embeddings": self.embeddings})

    @classmethod
    def load(cls, folder: Path, embedder: Embedder) -> ChunkIndex:
        meta, arrays = _read_folder(folder, "chunks")
        try:
            return cls(
                passages=tuple(_passage(p) for p in meta["passages"]),
                chunks=tuple(Chunk(*row) for row in meta["chunks"]),
                embeddings=arrays["embeddings"],
                embedder=embedder,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"index at {folder} is inconsistent: {exc!r}") from exc


# --------------------------------------------------------------------------- files


def _passage(data: dict[str, Any]) -> Passage:
    spans = tuple((int(a), int(b)) for a, b in data.get("sentence_spans", ()))
    return Passage(data["pid"], data["title"], data["text"], spans)


def _put_csr(arrays: dict[str, np.ndarray], name: str, m: sparse.csr_matrix) -> None:
    m = sparse.csr_matrix(m)
    arrays[f"{name}.data"] = m.data
    arrays[f"{name}.indices"] = m.indices
    arrays[f"{name}.indptr"] = m.indptr
    arrays[f"{name}.shape"] = np.asarray(m.shape, dtype=np.int64)


def _get_csr(arrays: Mapping[str, np.ndarray], name: str) -> sparse.csr_matrix:
    shape = tuple(int(x) for x in arrays[f"{name}.shape"])
    parts = (arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"])
    return sparse.csr_matrix(parts, shape=shape)


def _write_folder(folder: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".tmp-", dir=folder.parent))
    try:
        (tmp / "index.json").write_text(json.dumps(meta), encoding="utf-8")
        with (tmp / "arrays.npz").open("wb") as fh:
            np.savez(fh, allow_pickle=False, **arrays)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _read_folder(folder: Path, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    try:
        meta = json.loads((folder / "index.json").read_text(encoding="utf-8"))
        with np.load(folder / "arrays.npz", allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"cannot read the index at {folder}: {exc}") from exc
    if meta.get("format") != FORMAT_VERSION or meta.get("kind") != kind:
        raise IndexFormatError(
            f"index at {folder} is {meta.get('kind')!r} format {meta.get('format')!r}; "
            f"this chainrag reads {kind!r} format {FORMAT_VERSION}"
        )
    return meta, arrays


def units_of(index: Searchable) -> Sequence[Sentence | Chunk]:
    """The retrievable units of a built index (its sentences, or its chunks), by unit index."""
    if isinstance(index, Sentenced):
        return index.sentences
    if isinstance(index, Chunked):
        return index.chunks
    raise TypeError(f"{type(index).__name__} is an index of neither sentences nor chunks")
