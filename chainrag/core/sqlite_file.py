"""A SQLite file shared by threads and processes: WAL mode, one connection per thread.

The LLM response cache and Shi et al.'s knowledge reservoir both keep their data this way:
several processes may read and write at once (WAL, a busy timeout), and each thread gets its
own connection (a ``sqlite3.Connection`` must not cross threads).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

_LOCKED = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


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
            self._to_wal(con)
            con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def _to_wal(self, con: sqlite3.Connection) -> None:
        """Put the file in WAL mode, waiting out other connections' locks.

        WAL is a property of the file, so once one connection has switched it the rest only read
        the mode. The switch needs the file to itself, and SQLite does not run the busy handler
        for it: while another process holds a write lock, ``PRAGMA journal_mode=WAL`` fails at
        once with "database is locked" (seen with four processes opening one new cache). So the
        switch is retried, backing off, within the same busy timeout as every other statement.
        """
        deadline = time.monotonic() + self._busy_timeout_s
        pause = 0.005
        while True:
            try:
                if con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                    return
                # A mode SQLite cannot switch (an in-memory file) comes back unchanged: kept.
                con.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as err:
                # SQLITE_BUSY or SQLITE_LOCKED, extended codes (BUSY_RECOVERY, ...) included.
                if getattr(err, "sqlite_errorcode", 0) & 0xFF not in _LOCKED:
                    raise
                if time.monotonic() >= deadline:
                    raise sqlite3.OperationalError(
                        f"{self.path}: still locked by another connection after "
                        f"{self._busy_timeout_s:g}s, so it could not be put in WAL mode ({err})"
                    ) from err
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _count(self, table: str) -> int:
        row = self._connect().execute(f"SELECT COUNT(*) FROM {table}").fetchone()  # noqa: S608
        return int(row[0])

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None
