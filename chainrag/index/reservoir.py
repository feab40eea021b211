"""Shi et al.'s Memory Knowledge Reservoir: filtered knowledge kept across questions and runs.

A SQLite file (WAL mode, so several processes may read and write at once) of knowledge items
stored as ``title → content``, each with the embedding of its title: docs/decisions.md §3 —
"embed the new query, compare with the stored titles". Embeddings are stored as float32 bytes
with their dimension and the embedder's name, and a query is only compared with entries of the same
embedder and dimension. An item (title, content) is stored once, whichever question found it.

    reservoir = Reservoir(path)
    reservoir.add(items, title_embeddings, embedder="flag_model:...")
    match = reservoir.match(query_embedding, embedder="flag_model:...")  # ReservoirMatch

Shi et al.'s code never writes the reservoir; docs/decisions.md decides to write back what was
retrieved and filtered, which is what makes its recurring-question saving possible.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from chainrag.core.errors import ChainragError
from chainrag.core.sqlite_file import SQLiteFile
from chainrag.core.types import FloatArray, KnowledgeItem, ReservoirMatch

_SCHEMA = """
CREATE TABLE IF NOT EXISTS titled_knowledge (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    embedder TEXT NOT NULL,
    dim INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    created REAL NOT NULL,
    UNIQUE (title, content, embedder)
);
CREATE INDEX IF NOT EXISTS titled_knowledge_embedder ON titled_knowledge (embedder, dim);
"""
"""Version 2 of the file (title keys). Version 1's ``knowledge`` table, keyed by the question
an item was found for, is left untouched and unread."""


class ReservoirError(ChainragError):
    """The reservoir file cannot be used; the message names it."""


class Reservoir(SQLiteFile):
    """A persistent store of knowledge items keyed by the embeddings of their titles."""

    def __init__(self, path: Path | str, *, busy_timeout_s: float = 60.0) -> None:
        try:
            super().__init__(path, _SCHEMA, busy_timeout_s=busy_timeout_s)
        except sqlite3.DatabaseError as exc:
            raise ReservoirError(f"{path}: not a usable reservoir ({exc})") from None

    def add(
        self, items: Sequence[KnowledgeItem], title_embeddings: FloatArray, *, embedder: str
    ) -> int:
        """Store ``items`` (row i of ``title_embeddings`` embeds item i's title) in one
        transaction; items already stored are skipped. Returns how many were new."""
        vectors = np.asarray(title_embeddings, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(items):
            raise ValueError(
                f"{len(items)} items need one title embedding each (a {len(items)} × d array); "
                f"got shape {vectors.shape}"
            )
        now = time.time()
        rows = [
            (item.title, item.text, embedder, vector.size, _unit(vector).tobytes(), now)
            for item, vector in zip(items, vectors, strict=True)
        ]
        con = self._connect()
        con.execute("BEGIN IMMEDIATE")
        try:
            before = con.total_changes
            con.executemany(
                "INSERT OR IGNORE INTO titled_knowledge (title, content, embedder, dim, embedding,"
                " created) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            added = con.total_changes - before
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return added

    def match(self, embedding: FloatArray, *, embedder: str, limit: int = 20) -> ReservoirMatch:
        """Stored items by cosine between their title and ``embedding``, best first (at most
        ``limit``), with those cosines."""
        query = _unit(np.asarray(embedding, dtype=np.float32).ravel())
        rows = (
            self._connect()
            .execute(
                "SELECT title, content, embedding FROM titled_knowledge"
                " WHERE embedder = ? AND dim = ?",
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
        return self._count("titled_knowledge")

    def last_id(self) -> int:
        """The id of the newest item (ids only grow), 0 when none was ever stored."""
        row = self._connect().execute("SELECT COALESCE(MAX(id), 0) FROM titled_knowledge")
        return int(row.fetchone()[0])

    def remove_after(self, last_id: int) -> int:
        """Remove the items stored after the one of id ``last_id``: what a question cut off by a
        crash had written, so that it can be asked again from the state before it. Returns how
        many were removed."""
        con = self._connect()
        before = con.total_changes
        con.execute("DELETE FROM titled_knowledge WHERE id > ?", (last_id,))
        return con.total_changes - before


def _unit(vector: FloatArray) -> FloatArray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
