"""Reading a question's vectors from the store of vectors by text: SQLite (what
chainrag.core.text_store does) against an append-only memory-mapped file with a key → row
table, as the alternative the design weighed.

    .venv/bin/python bench/vector_store.py [--stored 20000] [--read 1500] [--dim 384]

Both hold ``--stored`` random float32 vectors keyed by text; each reads ``--read`` of them
(a long:musique question's sentences), median of 7 reads, in a warm page cache. The mmap file's
key table must be read by every process before its first look-up (its open cost is printed);
SQLite finds a key through its B-tree index on disk.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chainrag.core.text_store import TextStore  # noqa: E402


def median_ms(fn: object, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stored", type=int, default=20_000)
    parser.add_argument("--read", type=int, default=1_500)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.stored, args.dim)).astype(np.float32)
    texts = [f"sentence {i} of a padded context" for i in range(args.stored)]
    wanted = [texts[i] for i in rng.choice(args.stored, args.read, replace=False)]

    store = TextStore(folder / "vectors.sqlite")
    start = time.perf_counter()
    for lo in range(0, args.stored, 1024):
        store.put(
            "space",
            {
                t: v.tobytes()
                for t, v in zip(texts[lo : lo + 1024], vectors[lo : lo + 1024], strict=True)
            },
        )
    write_s = time.perf_counter() - start

    def sqlite_read() -> np.ndarray:
        found = store.get("space", wanted)
        return np.stack([np.frombuffer(found[t], dtype=np.float32) for t in wanted])

    keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
    vectors.tofile(folder / "vectors.f32")
    (folder / "keys.bin").write_bytes(b"".join(keys))

    def mmap_open() -> tuple[dict[bytes, int], np.ndarray]:
        raw = (folder / "keys.bin").read_bytes()
        table = {raw[i : i + 16]: i // 16 for i in range(0, len(raw), 16)}
        rows = np.memmap(folder / "vectors.f32", dtype=np.float32, mode="r")
        return table, rows.reshape(-1, args.dim)

    table, rows = mmap_open()

    def mmap_read() -> np.ndarray:
        ids = [table[hashlib.blake2b(t.encode(), digest_size=16).digest()] for t in wanted]
        return np.asarray(rows[np.sort(ids)])

    assert np.array_equal(np.sort(sqlite_read(), axis=0), np.sort(mmap_read(), axis=0))
    print(f"{args.stored:,} vectors of {args.dim} stored (SQLite write {write_s:.2f} s); "
          f"reading {args.read:,}:")  # fmt: skip
    print(f"| SQLite (WAL, one B-tree look-up a key) | {median_ms(sqlite_read):.1f} ms |")
    print(
        f"| mmap file + key table in memory | {median_ms(mmap_read):.1f} ms "
        f"(+ {median_ms(mmap_open):.1f} ms to read the key table once a process) |"
    )


if __name__ == "__main__":
    main()
