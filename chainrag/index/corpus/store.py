"""The corpus index folder: what a streamed build writes and how it is opened, memory-mapped.

    DIR/manifest.json        format, recipe digest, sources and their sha256, counts, stages,
                             the devices the encoders ran on (one mapping per device set)
    DIR/corpus.sqlite        passages, sentences (provenance and text), entity mentions, key
                             entities, each stage's progress (committed with its rows) and the
                             sha256 of every finished batch of passages
    DIR/embeddings.npy       (n, d) float32 or float16 sentence embeddings
    DIR/layers/NAME/{data,indices,indptr}.npy    one CSR matrix per edge layer
    DIR/search/DIGEST.index  a vector index per ``search:`` used (exact or FAISS), built once

An edge layer is three ``.npy`` files rather than one ``.npz`` because a member of an ``.npz``
cannot be memory-mapped. :class:`CorpusIndex` opens the folder in well under a second whatever
its size: the embeddings and the layers are memory-mapped, texts and provenance are read from
SQLite when asked for, so nothing proportional to the corpus is loaded into Python objects.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import threading
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import attrs
import numpy as np
from scipy import sparse

from chainrag.core.errors import ChainragError
from chainrag.core.types import FloatArray, Passage, Sentence
from chainrag.protocols.index import Embedder, VectorIndex, VectorSearch

FORMAT = 1
KIND = "corpus_index"
MANIFEST = "manifest.json"
DATABASE = "corpus.sqlite"
EMBEDDINGS = "embeddings.npy"
LAYERS = "layers"
SEARCH = "search"

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (
    pid INTEGER PRIMARY KEY, source_id TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sentences (
    sid INTEGER PRIMARY KEY, passage INTEGER NOT NULL, position INTEGER NOT NULL,
    start INTEGER NOT NULL, end INTEGER NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mentions (sid INTEGER NOT NULL, name TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS mentions_sid ON mentions (sid);
CREATE TABLE IF NOT EXISTS keys (sid INTEGER NOT NULL, name TEXT NOT NULL, score REAL NOT NULL);
CREATE TABLE IF NOT EXISTS progress (stage TEXT PRIMARY KEY, done INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS batches (number INTEGER PRIMARY KEY, digest TEXT NOT NULL);
"""


class CorpusIndexError(ChainragError):
    """A corpus index folder is missing, of another format, or built from something else."""


def corpus_label(sources: Sequence[str]) -> str:
    """A short name of a corpus for folders and tables: ``2wiki+dev-2wiki``."""
    names = [Path(s).stem if s.endswith((".json", ".jsonl")) else s for s in sources]
    return "+".join(n.replace(":", "-").replace("/", "-") for n in names)


def connect(folder: Path) -> sqlite3.Connection:
    """The folder's SQLite database (created with its schema if new)."""
    db = sqlite3.connect(folder / DATABASE, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise CorpusIndexError(f"{folder}: not a corpus index (no {MANIFEST})")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorpusIndexError(f"{path}: unreadable ({exc})") from None
    if not isinstance(value, dict) or (value.get("kind"), value.get("format")) != (KIND, FORMAT):
        raise CorpusIndexError(
            f"{path}: not a {KIND} of format {FORMAT} (found {value.get('kind')!r} format "
            f"{value.get('format')!r})"
        )
    return value


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> None:
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def save_layer(folder: Path, name: str, matrix: sparse.csr_matrix) -> None:
    """Write one layer's CSR arrays into ``layers/NAME/`` atomically."""
    matrix = sparse.csr_matrix(matrix, dtype=np.float32)
    root = folder / LAYERS
    root.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{name}.tmp-", dir=root))
    try:
        for part in ("data", "indices", "indptr"):
            np.save(tmp / f"{part}.npy", getattr(matrix, part), allow_pickle=False)
        if (root / name).exists():
            shutil.rmtree(root / name)
        os.replace(tmp, root / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@attrs.frozen
class Layer:
    """A memory-mapped CSR layer: rows are read by slicing, never the whole matrix."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray

    @classmethod
    def open(cls, folder: Path) -> Layer:
        parts = (np.load(folder / f"{p}.npy", mmap_mode="r") for p in ("data", "indices", "indptr"))
        return cls(*parts)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def rows(self, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(columns, values) of every stored entry in the rows ``units``, concatenated."""
        starts, ends = self.indptr[units], self.indptr[units + 1]
        if not units.size or not (ends - starts).any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        spans = [slice(int(a), int(b)) for a, b in zip(starts, ends, strict=True) if b > a]
        cols = np.concatenate([self.indices[s] for s in spans]).astype(np.int64)
        vals = np.concatenate([self.data[s] for s in spans]).astype(np.float32)
        return cols, vals

    def csr(self, n: int) -> sparse.csr_matrix:
        """The whole layer as a scipy matrix (the arrays stay memory-mapped)."""
        return sparse.csr_matrix((self.data, self.indices, self.indptr), shape=(n, n))


class _Rows(Sequence[T]):
    """A lazy, read-only sequence over one SQLite table, one connection per thread: item ``i``
    is :meth:`_read` of the row ``QUERY`` gives for it."""

    QUERY: str
    """One row by its index (the ``?``)."""

    def __init__(self, folder: Path, n: int) -> None:
        self._folder, self._n, self._local = folder, n, threading.local()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(f"file:{self._folder / DATABASE}?mode=ro", uri=True)
            self._local.db = db
        return db

    def __len__(self) -> int:
        return self._n

    def _check(self, i: int) -> int:
        j = i + self._n if i < 0 else i
        if not 0 <= j < self._n:
            raise IndexError(f"unit {i} is not in 0..{self._n - 1}")
        return j

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        return self._read(self._db().execute(self.QUERY, (self._check(i),)).fetchone())

    @abstractmethod
    def _read(self, row: tuple[Any, ...]) -> T:
        """The item of one row."""


class SentenceTexts(_Rows[str]):
    """The sentences' texts, read from SQLite when asked for."""

    QUERY = "SELECT text FROM sentences WHERE sid = ?"

    def _read(self, row: tuple[Any, ...]) -> str:
        return str(row[0])


class SentenceRows(_Rows[Sentence]):
    """The sentences with their provenance (title from the passage), read when asked for."""

    QUERY = (
        "SELECT s.sid, s.text, s.passage, p.title, s.position, s.start, s.end "
        "FROM sentences s JOIN passages p ON p.pid = s.passage WHERE s.sid = ?"
    )

    def _read(self, row: tuple[Any, ...]) -> Sentence:
        return Sentence(int(row[0]), row[1], int(row[2]), row[3], *map(int, row[4:]))


class PassageRows(_Rows[Passage]):
    """The passages by their number in the corpus, read from SQLite when asked for."""

    QUERY = "SELECT source_id, title, text FROM passages WHERE pid = ?"

    def _read(self, row: tuple[Any, ...]) -> Passage:
        return Passage(str(row[0]), row[1], row[2])


@attrs.frozen(eq=False)
class CorpusIndex:
    """A built corpus index, opened: ``Searchable`` and ``Graph`` for retrieval.

    ``neighbours`` orders the sentences one hop away by the summed weight of their edges into
    the given ones (layers weighted by ``weights``), strongest first, then by index — as
    :class:`chainrag.index.graph.GraphView` does — but reads only the rows of the given sentences:
    its cost is what the frontier touches, not the corpus size.
    """

    folder: Path
    manifest: Mapping[str, Any]
    embedder: Embedder
    embeddings: FloatArray
    layers: Mapping[str, Layer]
    weights: Mapping[str, float]
    texts: SentenceTexts
    sentences: SentenceRows
    passages: PassageRows
    _searchers: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    @classmethod
    def open(
        cls, folder: Path, embedder: Embedder, weights: Mapping[str, float] | None = None
    ) -> CorpusIndex:
        manifest = read_manifest(folder)
        if not manifest.get("complete"):
            raise CorpusIndexError(
                f"{folder}: the build has not finished (run the same chainrag index command "
                "again to resume it)"
            )
        n = int(manifest["counts"]["sentences"])
        layers = {name: Layer.open(folder / LAYERS / name) for name in manifest["layers"]}
        weights = dict.fromkeys(layers, 1.0) if weights is None else dict(weights)
        unknown = sorted(set(weights) - set(layers))
        if unknown:
            raise CorpusIndexError(f"{folder}: no edge layer {unknown}; it has {sorted(layers)}")
        embeddings = np.load(folder / EMBEDDINGS, mmap_mode="r")
        texts, rows = SentenceTexts(folder, n), SentenceRows(folder, n)
        passages = PassageRows(folder, int(manifest["counts"]["passages"]))
        return cls(folder, manifest, embedder, embeddings, layers, weights, texts, rows, passages)

    def __len__(self) -> int:
        return len(self.texts)

    def passage_of(self, unit: int) -> int:
        """The corpus number of unit ``unit``'s passage (``SourcePassages``)."""
        return self.sentences[unit].passage

    def passage(self, number: int) -> Passage:
        """The corpus passage numbered ``number`` (``SourcePassages``)."""
        return self.passages[number]

    def vector_index(self, search: VectorSearch) -> VectorIndex:
        """The vector index ``search`` makes of the embeddings: read from ``DIR/search/`` where
        an earlier call built it, else built once and written there (atomically)."""
        with self._lock:
            if search not in self._searchers:
                self._searchers[search] = self._open_or_build(search)
            found: VectorIndex = self._searchers[search]
            return found

    def _open_or_build(self, search: VectorSearch) -> VectorIndex:
        """The index file read, or built and saved under a temporary name, then the files the
        save wrote beside it (its name plus a suffix: blocked_ivf's vectors in list order)
        renamed, the index file last: where it exists, they are complete. A built index is
        read back from the folder, so a search is the same in the session that built it."""
        from chainrag.index.build import digest
        from chainrag.recipes.structure import unstructure

        folder = self.folder / SEARCH
        path = folder / f"{digest(unstructure(search))[:24]}.index"
        if not path.is_file():
            folder.mkdir(exist_ok=True)
            tmp = path.with_suffix(".tmp")
            search(self.embeddings).save(tmp)
            for beside in sorted(folder.glob(f"{tmp.name}.*")):
                os.replace(beside, path.with_name(path.name + beside.name[len(tmp.name) :]))
            os.replace(tmp, path)
        return search.load(path, self.embeddings)

    def neighbours(self, units: Sequence[int]) -> tuple[int, ...]:
        given = np.unique(np.asarray(units, dtype=np.int64))
        if given.size == 0:
            return ()
        rows, cols, vals = self._entries(given)
        if not cols.size:
            return ()
        # float32 sums in the order GraphView makes them (layers summed per edge, in layer
        # order; then edges summed per neighbour, by row), so both give the same order
        edges, per_edge = np.unique(rows * len(self) + cols, return_inverse=True)
        combined = np.zeros(edges.size, dtype=np.float32)
        np.add.at(combined, per_edge, vals)
        reached, per_col = np.unique(edges % len(self), return_inverse=True)
        strength = np.zeros(reached.size, dtype=np.float32)
        np.add.at(strength, per_col, combined)
        keep = (strength > 0) & ~np.isin(reached, given)
        reached, strength = reached[keep], strength[keep]
        order = reached[np.lexsort((reached, -strength))]
        return tuple(int(i) for i in order)

    def _entries(self, given: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, weighted value) of the given rows' entries, layer after layer."""
        rows, cols, vals = [], [], []
        for name, weight in self.weights.items():
            if weight:
                layer = self.layers[name]
                c, v = layer.rows(given)
                counts = (layer.indptr[given + 1] - layer.indptr[given]).astype(np.int64)
                rows.append(np.repeat(given, counts))
                cols.append(c)
                vals.append(v * np.float32(weight))
        if not cols:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0, dtype=np.float32)
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)

    def iter_texts(self, batch: int = 4096) -> Iterator[list[str]]:
        """Every sentence text in sid order, ``batch`` at a time (for BM25 and the like)."""
        db = self.texts._db()
        for start in range(0, len(self), batch):
            rows = db.execute(
                "SELECT text FROM sentences WHERE sid >= ? AND sid < ? ORDER BY sid",
                (start, start + batch),
            )
            yield [r[0] for r in rows]
