"""What the corpus-scale benches share: memory and time of a stage, larger corpora made of copies
of the real sentence vectors, exact ground truth and recall.

Imported by bench/corpus_scale.py and bench/ss_search.py (run as scripts, so this folder is on
``sys.path``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def note(message: str) -> None:
    """A time-stamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def status_mib(field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (peak RSS since the last reset) of this process, in MiB.

    ``VmHWM`` rather than ``ru_maxrss``: the latter survives ``exec`` and so starts at the RSS
    of the parent that forked a worker.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def timed(fn: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """fn's result and its seconds, the RSS before it (baseline) and the peak RSS while it ran
    (VmHWM reset first; where the kernel refuses, the process's peak so far)."""
    gc.collect()
    load, base = os.getloadavg()[0], status_mib("VmRSS")
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    return out, {
        "seconds": seconds,
        "baseline_mib": base,
        "peak_mib": status_mib("VmHWM"),
        "load": load,
    }


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """The share of ``truth``'s ids (one row per query) that ``found``'s rows hold."""
    hits = sum(len(set(f) & set(t)) for f, t in zip(found.tolist(), truth.tolist(), strict=True))
    return hits / truth.size


# --------------------------------------------------------------------------- larger corpora


def uniform_rotation(real: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random orthogonal matrix, uniform over all of them (d × d, d = the vectors' width)."""
    d = real.shape[1]
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    out: np.ndarray = q * np.sign(np.diag(r))
    return out


def keeping_rotation(direction: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random orthogonal matrix that maps ``direction`` (unit) to itself: uniform on its
    orthogonal complement."""
    d = direction.shape[0]
    basis = np.linalg.qr(np.column_stack([direction, rng.standard_normal((d, d - 1))]))[0]
    rest = basis[:, 1:]
    q, r = np.linalg.qr(rng.standard_normal((d - 1, d - 1)))
    out: np.ndarray = np.outer(direction, direction) + rest @ (q * np.sign(np.diag(r))) @ rest.T
    return out


def rotated_copy(real: np.ndarray, seed: int, noise: float = 0.02) -> np.ndarray:
    """The real vectors under one uniform random rotation, plus Gaussian noise, re-normalised
    (bench/ss_search.py's copies)."""
    rng = np.random.default_rng(seed)
    x = real @ uniform_rotation(real, rng).astype(np.float32)
    x += noise * rng.standard_normal(x.shape).astype(np.float32)
    out: np.ndarray = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def perturbed_copy(real: np.ndarray, copy: int, noise: float, seed: int) -> np.ndarray:
    """The real vectors under a random rotation that keeps their mean direction (so every copy
    shares the corpus's common component), plus Gaussian noise, re-normalised
    (bench/corpus_scale.py's copies)."""
    rng = np.random.default_rng([seed, copy, 1])
    mean = real.mean(axis=0, dtype=np.float64)
    rotation = keeping_rotation(mean / np.linalg.norm(mean), rng).astype(np.float32)
    x = real @ rotation.T
    x += noise * rng.standard_normal(x.shape, dtype=np.float32)
    out: np.ndarray = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def write_copies(
    real: np.ndarray, n: int, path: Path, copy: Callable[[np.ndarray, int], np.ndarray]
) -> Path:
    """A float32 .npy of n vectors: the real ones, then ``copy(real, c)`` for c = 1, 2, …, cut
    to n; written beside ``path`` and moved into place whole."""
    base = np.asarray(real, dtype=np.float32)
    tmp = path.with_suffix(".tmp.npy")
    out = np.lib.format.open_memmap(tmp, "w+", np.float32, (n, base.shape[1]))
    for c, start in enumerate(range(0, n, len(base))):
        block = base if c == 0 else copy(base, c)
        out[start : start + len(base)] = block[: n - start]
    out.flush()
    del out
    os.replace(tmp, path)
    return path


def sample_rows(n: int, sample: int, seed: int) -> np.ndarray:
    """``sample`` distinct rows of n (all where fewer), sorted, drawn with ``seed``."""
    return np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
