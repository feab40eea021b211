"""Several spawned processes at once, for the tests of stores that many processes write."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path


def write_at_once(writer: Callable[[str, int], None], path: Path, workers: int = 4) -> None:
    """``writer(str(path), i)`` in ``workers`` spawned processes at once; each must exit 0."""
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=writer, args=(str(path), w)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
