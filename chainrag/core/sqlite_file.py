"""A SQLite file shared by threads and processes: WAL mode, one connection per thread.

The LLM response cache and Shi et al.'s knowledge reservoir both keep their data this way:
several processes may read and write at once (WAL, a busy timeout), and each thread gets its
own connection (a ``sqlite3.Connection`` must not cross threads).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


class SQLiteFile:
    """Opens (and creates) ``path`` with ``schema``; connections are per thread, autocommit."""

    def __init__(self, path: Path | str, schema: str, *, busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._connect().executescript(schema)

    def _connect(self) -> sqlite3.Connection:
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=self._busy_timeout_s, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def _count(self, table: str) -> int:
        row = self._connect().execute(f"SELECT COUNT(*) FROM {table}").fetchone()  # noqa: S608
        return int(row[0])

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None
