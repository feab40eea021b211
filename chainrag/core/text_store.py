"""A store of values by text: one SQLite file (WAL), shared by threads and processes, bounded.

    store = TextStore(cache_root() / "embeddings" / "vectors.sqlite")
    found = store.get(space, texts)            # {text: bytes} for the texts it holds
    store.put(space, {text: value, ...})
    values = stored(store, space, texts, compute, (encode, decode))   # computed where missing

A value is kept under a hash of its *space* (what computed it: an embedder's identity and role,
a spaCy pipeline's identity) and its text, so one text is computed once per space whatever
question, index build, retriever or reranker asks for it. Several processes may read and write
at once (WAL, a busy timeout; a value is written with ``INSERT OR IGNORE``, so two writers of one
text keep the first). The file is bounded: past ``max_bytes`` of live pages the oldest values
are dropped (their pages are reused, so the file stops growing). A damaged file (not a database,
a malformed page) is moved aside and started afresh: what it held is computed again, nothing
else is lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from chainrag.core.sqlite_file import SQLiteFile
from chainrag.core.types import FloatArray

SCHEMA = "CREATE TABLE IF NOT EXISTS entries (key BLOB PRIMARY KEY, value BLOB NOT NULL);"
DEFAULT_MAX_BYTES = 4 * 1024**3
"""The bound of one store's live pages (4 GiB: about 2.7 million 384-dim float32 vectors)."""
R = TypeVar("R")
T = TypeVar("T")
Codec = tuple[Callable[[T], bytes], Callable[[bytes], T]]
"""How a value is written to bytes and read back (a damaged value raises ValueError)."""

CHUNK = 1024
"""Texts computed (and stored) at a time: small enough that a killed build keeps most of its
work, large enough that FlagModel's batch-size probe (one extra batch a call) costs little."""
_CHUNK = 500
"""Keys per ``IN (...)`` query (below SQLite's smallest limit on bound parameters)."""


def digest(payload: object) -> str:
    """sha256 of the canonical JSON of ``payload`` (a store's space is one)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_key(space: str, text: str) -> bytes:
    """The 16-byte key of ``text`` in ``space``."""
    return hashlib.blake2b(f"{space}\x00{text}".encode(), digest_size=16).digest()


def _damaged(err: sqlite3.DatabaseError) -> bool:
    """Whether ``err`` says the file is damaged (not a lock held by another connection)."""
    # "file is not a database", "database disk image is malformed"; not locked, busy or I/O
    return not isinstance(err, sqlite3.OperationalError)


def _fetch(query: str, values: list[Any]) -> Callable[[sqlite3.Connection], list[Any]]:
    """A statement: ``query`` with ``values``, its rows."""
    return lambda con: con.execute(query, values).fetchall()


class TextStore(SQLiteFile):
    """Values (bytes) by (space, text) in the SQLite file ``path``, at most ``max_bytes``."""

    def __init__(self, path: Path | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._reset_lock = threading.Lock()
        try:
            super().__init__(path, SCHEMA)
        except sqlite3.DatabaseError as err:
            if not _damaged(err):
                raise
            self._local = threading.local()
            self._make_afresh()

    def get(self, space: str, texts: Iterable[str]) -> dict[str, bytes]:
        """The stored value of each of ``texts`` that the store holds."""
        by_key = {text_key(space, t): t for t in texts}
        keys = list(by_key)
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), _CHUNK):
            part = keys[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            query = f"SELECT key, value FROM entries WHERE key IN ({marks})"  # noqa: S608
            for key, value in self._run(_fetch(query, part)):
                found[by_key[bytes(key)]] = bytes(value)
        return found

    def put(self, space: str, values: Mapping[str, bytes]) -> None:
        """Store ``values`` (text → value) in one transaction, then keep within the bound."""
        if not values:
            return
        rows = [(text_key(space, t), sqlite3.Binary(v)) for t, v in values.items()]

        def write(con: sqlite3.Connection) -> None:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.executemany("INSERT OR IGNORE INTO entries (key, value) VALUES (?, ?)", rows)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

        self._run(write)
        if self.live_bytes() > self.max_bytes:
            self._evict()

    def live_bytes(self) -> int:
        """Bytes of the file's pages in use (free pages left by dropped values excluded)."""

        def pages(con: sqlite3.Connection) -> int:
            total = con.execute("PRAGMA page_count").fetchone()[0]
            free = con.execute("PRAGMA freelist_count").fetchone()[0]
            size = con.execute("PRAGMA page_size").fetchone()[0]
            return int((total - free) * size)

        return self._run(pages)

    def __len__(self) -> int:
        return self._run(lambda con: int(con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]))

    def clear(self) -> None:
        """Drop every value and give the space back to the file system."""
        self._run(lambda con: con.execute("DELETE FROM entries"))
        self._run(lambda con: con.execute("VACUUM"))

    def _evict(self) -> None:
        """Drop the oldest quarter of the values (the first written), until within the bound."""
        while self.live_bytes() > self.max_bytes and len(self):
            oldest = "(SELECT rowid FROM entries ORDER BY rowid LIMIT ?)"
            query = f"DELETE FROM entries WHERE rowid IN {oldest}"  # noqa: S608
            self._run(_fetch(query, [max(1, len(self) // 4)]))

    def _run(self, statement: Callable[[sqlite3.Connection], R]) -> R:
        """``statement`` on this thread's connection; a damaged file is replaced once first."""
        try:
            return statement(self._connect())
        except sqlite3.DatabaseError as err:
            if not _damaged(err):
                raise
            self._make_afresh()
            return statement(self._connect())

    def _make_afresh(self) -> None:
        """Move the damaged file aside (``.damaged``) and open an empty one in its place."""
        with self._reset_lock:
            self.close()
            for suffix in ("", "-wal", "-shm"):
                part = Path(f"{self.path}{suffix}")
                if part.exists():
                    os.replace(part, Path(f"{self.path}.damaged{suffix}"))
            self._local = threading.local()  # every thread opens the new file
            self._connect().executescript(SCHEMA)


def stored(
    store: TextStore,
    space: str,
    texts: Sequence[str],
    compute: Callable[[list[str]], Sequence[T]],
    codec: Codec[T],
    chunk: int = CHUNK,
) -> list[T]:
    """The value of each of ``texts``: from ``store`` where it holds one (and it decodes), else
    by ``compute`` on the distinct missing texts, ``chunk`` at a time, each chunk stored."""
    encode, decode = codec
    known: dict[str, T] = {}
    for text, raw in store.get(space, texts).items():
        with contextlib.suppress(ValueError):  # a damaged value is computed again
            known[text] = decode(raw)
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    for start in range(0, len(missing), chunk):
        part = missing[start : start + chunk]
        made = dict(zip(part, compute(part), strict=True))
        store.put(space, {t: encode(v) for t, v in made.items()})
        known.update(made)
    return [known[t] for t in texts]


def vector_codec() -> Codec[FloatArray]:
    """float32 bytes, exactly as computed."""

    def decode(raw: bytes) -> FloatArray:
        vector: FloatArray = np.frombuffer(raw, dtype=np.float32)  # ValueError if damaged
        return vector

    def encode(vector: FloatArray) -> bytes:
        return np.ascontiguousarray(vector, dtype=np.float32).tobytes()

    return encode, decode


ENDPOINTS = "endpoints"
"""The space where a store marks each endpoint identity it holds values of."""


def mark_endpoint(store: TextStore, identity: str) -> None:
    """Note in ``store`` that it holds values computed at the endpoint ``identity``."""
    store.put(ENDPOINTS, {identity: b"1"})


def holds_endpoint(path: Path, identity: str) -> bool:
    """Whether the store at ``path`` (which may not exist) holds values of ``identity``."""
    if not path.is_file():
        return False
    store = TextStore(path)
    try:
        return bool(store.get(ENDPOINTS, [identity]))
    finally:
        store.close()
