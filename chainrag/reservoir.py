"""Seed 004's Memory Knowledge Reservoir: filtered knowledge kept across questions and runs.

A SQLite file (WAL mode, so several processes may read and write at once) of knowledge items,
each with the embedding of its *key* — seed 004 compares a new query with the stored titles,
and its code stores ``title → content``; here the key is the question or search query the
item was found for, so a recurring (or paraphrased) question finds what was kept for it.
Embeddings are stored as float32 bytes with their dimension and the embedder's name, and a
query is only compared with entries of the same embedder and dimension.

    reservoir = Reservoir(path)
    reservoir.add("Who wrote X?", items, key_embedding, embedder="flag_model:...")
    match = reservoir.match(query_embedding, embedder="flag_model:...")  # ReservoirMatch

Seed 004's code never writes the reservoir; method.md decides to write back what was retrieved
and filtered, which is what makes its recurring-question saving possible.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from chainrag.errors import ChainragError
from chainrag.sqlite_file import SQLiteFile
from chainrag.types import FloatArray, KnowledgeItem, ReservoirMatch

_SCHEMA = """
CREATE TABLE IF NOT EXISTS knowledge (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    embedder TEXT NOT NULL,
    dim INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    created REAL NOT NULL,
    UNIQUE (key, title, content, embedder)
);
CREATE INDEX IF NOT EXISTS knowledge_embedder ON knowledge (embedder, dim);
"""


class ReservoirError(ChainragError):
    """The reservoir file cannot be used; the message names it."""


class Reservoir(SQLiteFile):
    """A persistent store of knowledge items keyed by the embedding of what they answered."""

    def __init__(self, path: Path | str, *, busy_timeout_s: float = 60.0) -> None:
        try:
            super().__init__(path, _SCHEMA, busy_timeout_s=busy_timeout_s)
        except sqlite3.DatabaseError as exc:
            raise ReservoirError(f"{path}: not a usable reservoir ({exc})") from None

    def add(
        self, key: str, items: Sequence[KnowledgeItem], embedding: FloatArray, *, embedder: str
    ) -> int:
        """Store ``items`` under ``key`` (whose embedding is ``embedding``) in one transaction;
        items already stored under the same key are skipped. Returns how many were new."""
        vector = _unit(np.asarray(embedding, dtype=np.float32).ravel())
        now = time.time()
        rows = [
            (key, item.title, item.text, embedder, vector.size, vector.tobytes(), now)
            for item in items
        ]
        con = self._connect()
        con.execute("BEGIN IMMEDIATE")
        try:
            before = con.total_changes
            con.executemany(
                "INSERT OR IGNORE INTO knowledge (key, title, content, embedder, dim, embedding,"
                " created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            added = con.total_changes - before
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return added

    def match(self, embedding: FloatArray, *, embedder: str, limit: int = 20) -> ReservoirMatch:
        """Stored items by cosine between their key and ``embedding``, best first (at most
        ``limit``), with those cosines."""
        query = _unit(np.asarray(embedding, dtype=np.float32).ravel())
        rows = (
            self._connect()
            .execute(
                "SELECT title, content, embedding FROM knowledge WHERE embedder = ? AND dim = ?",
                (embedder, query.size),
            )
            .fetchall()
        )
        if not rows:
            return ReservoirMatch((), np.zeros(0, dtype=np.float32))
        keys = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        cosines = keys @ query
        order = np.lexsort((np.arange(len(rows)), -cosines))[:limit]
        items = tuple(
            KnowledgeItem(text=rows[i][1], title=rows[i][0], score=float(cosines[i])) for i in order
        )
        return ReservoirMatch(items, cosines[order].astype(np.float32))

    def __len__(self) -> int:
        return self._count("knowledge")


def _unit(vector: FloatArray) -> FloatArray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
