"""SS search at corpus scale: exact against FAISS HNSW and IVF, on real MiniLM structure.

    .venv/bin/python bench/ss_search.py [--sizes 0 100000 1000000] [--sample 1000]
        [--hnsw M:EF_CONSTRUCTION:EF_SEARCH[,EF_SEARCH...] ...]
        [--ivf LISTS_PER_SQRT_N:NPROBE[,NPROBE...] ...] [--no-exact]

Vectors: HippoRAG's 2Wiki corpus (6,119 passages) split by the project's spaCy splitter and
embedded by the offline all-MiniLM-L6-v2 (cached in /tmp/ss_search/real.npy, so reruns skip
the encoders; size 0 means these 21,673 real sentences alone). Past them, copies of the real
vectors, each copy under its own random rotation plus a little noise and re-normalised: the
geometry of real sentences, never i.i.d. random unit vectors (on which every ANN index looks
broken). The n vectors are written to a float32 .npy in /tmp and searched memory-mapped, as
a corpus index does.

For each n and search (each build in a fresh process): build seconds; ms per query in one
batch of the sample (as the SS layer searches) and one query at a time (as seed retrieval
does, 100 queries); recall@10 of the sample's exact top-10 (self excluded); the SS layer's
time estimated as batch ms × n; and the worker process's peak RSS (VmHWM: its imports, the
sample, the index, and the file-backed pages of the mapped vectors it touched). Several
breadths (efSearch, nprobe) are measured on one build.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.search import ExactSearch, FaissHNSW, FaissIVF, exact_top_k
from chainrag.protocols import VectorSearch

CACHE = Path("/tmp/ss_search")
M = 10
SINGLE = 100


# --------------------------------------------------------------------------- vectors


def real_vectors() -> np.ndarray:
    """MiniLM vectors of the 2Wiki corpus's spaCy sentences (cached)."""
    path = CACHE / "real.npy"
    if not path.exists():
        from chainrag.components.embedders import FlagModelEmbedder
        from chainrag.components.spacy_nlp import SpacySentences
        from chainrag.core.context import Context
        from chainrag.data.datasets import load_corpus

        ctx = Context()
        sentences = SpacySentences()(load_corpus("2wiki_hipporag_corpus"), ctx)
        vectors = FlagModelEmbedder()([s.text for s in sentences], ctx)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors.astype(np.float32))
    return np.load(path)


def rotated_copy(real: np.ndarray, seed: int, noise: float = 0.02) -> np.ndarray:
    """The real vectors under one random rotation, plus Gaussian noise, re-normalised."""
    rng = np.random.default_rng(seed)
    q, r = np.linalg.qr(rng.standard_normal((real.shape[1], real.shape[1])))
    rotation = q * np.sign(np.diag(r))  # uniform over orthogonal matrices
    x = real @ rotation.astype(np.float32)
    x += noise * rng.standard_normal(x.shape).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def vectors_file(n: int) -> Path:
    """A float32 .npy of n vectors: the real ones, then rotated copies (cached)."""
    path = CACHE / f"vectors_{n}.npy"
    if path.exists():
        return path
    real = real_vectors()
    out = np.lib.format.open_memmap(path, "w+", np.float32, (n, real.shape[1]))
    for copy, start in enumerate(range(0, n, len(real))):
        block = real if copy == 0 else rotated_copy(real, seed=copy)
        out[start : start + len(real)] = block[: n - start]
    out.flush()
    return path


def ground_truth(n: int, sample: int) -> tuple[np.ndarray, np.ndarray]:
    """(sampled rows, their exact top-M ids, self excluded), cached."""
    path = CACHE / f"truth_{n}_{sample}.npz"
    if not path.exists():
        x = np.load(vectors_file(n), mmap_mode="r")
        rows = np.sort(np.random.default_rng(0).choice(n, min(sample, n), replace=False))
        ids, _ = exact_top_k(np.asarray(x[rows]), x, M, rows)
        np.savez(path, rows=rows, ids=ids)
    saved = np.load(path)
    return saved["rows"], saved["ids"]


# --------------------------------------------------------------------------- one build


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    hits = sum(len(set(f) & set(t)) for f, t in zip(found.tolist(), truth.tolist(), strict=True))
    return hits / truth.size


def searches(kind: str, spec: str) -> list[tuple[str, VectorSearch]]:
    """The searches of one build: one per breadth (efSearch or nprobe)."""
    if kind == "exact":
        return [("", ExactSearch())]
    head, _, breadths = spec.rpartition(":")
    if kind == "faiss_hnsw":
        m, ef_construction = (int(v) for v in head.split(":"))
        return [
            (f"m={m} efC={ef_construction} ef={b}", FaissHNSW(m, ef_construction, int(b)))
            for b in breadths.split(",")
        ]
    per = float(head)
    return [
        (f"{per:g}·√n lists, nprobe={b}", FaissIVF(lists_per_sqrt_n=per, nprobe=int(b)))
        for b in breadths.split(",")
    ]


def worker(n: int, sample: int, kind: str, spec: str) -> list[dict[str, Any]]:
    x = np.load(vectors_file(n), mmap_mode="r")
    rows, truth = ground_truth(n, sample)
    queries = np.ascontiguousarray(x[rows])
    variants = searches(kind, spec)
    start = time.perf_counter()
    index = variants[0][1](x)
    built = time.perf_counter() - start
    out = []
    for label, search in variants:  # one build, each breadth
        if isinstance(search, FaissHNSW | FaissIVF):
            breadth = search.ef_search if isinstance(search, FaissHNSW) else search.nprobe
            index = attrs.evolve(index, breadth=breadth)
        out.append(measure(index, queries, rows, truth) | {"params": label, "build_s": built})
    for row in out:
        row["rss_mib"] = status_mib("VmHWM")
    return out


def status_mib(field: str) -> float:
    """A memory figure of this process from /proc/self/status, in MiB.

    ``VmHWM`` (peak RSS) rather than ``ru_maxrss``: the latter survives ``exec`` and so starts
    at the RSS of the parent that forked this worker.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def measure(index: Any, queries: np.ndarray, rows: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    start = time.perf_counter()
    found, _ = index.search(queries, M, rows)
    batch = (time.perf_counter() - start) / len(rows)
    start = time.perf_counter()
    for i in range(min(SINGLE, len(rows))):
        index.search(queries[i : i + 1], M, rows[i : i + 1])
    single = (time.perf_counter() - start) / min(SINGLE, len(rows))
    return {"batch_ms": batch * 1e3, "single_ms": single * 1e3, "recall": recall(found, truth)}


# --------------------------------------------------------------------------- table


def run(n: int, sample: int, kind: str, spec: str) -> list[dict[str, Any]]:
    command = [sys.executable, __file__, "--worker", str(n), str(sample), kind, spec]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} {spec} at n={n} failed:\n{done.stderr}")
    rows: list[dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])
    return [r | {"n": n, "kind": kind} for r in rows]


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| n | search | parameters | build s | batch ms/query | single ms/query | recall@10 "
        "| SS layer s (est.) | peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {r['n']:,} | {r['kind']} | {r['params']} | {r['build_s']:.1f} | "
        f"{r['batch_ms']:.3f} | {r['single_ms']:.2f} | {r['recall']:.3f} | "
        f"{r['batch_ms'] * r['n'] / 1e3:,.0f} | {r['rss_mib']:,.0f} |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 100_000])
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--hnsw", nargs="*", default=["32:40:32,64"])
    parser.add_argument("--ivf", nargs="*", default=["1:24"])
    parser.add_argument("--no-exact", action="store_true")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        n, sample, kind, spec = args.worker
        print(json.dumps(worker(int(n), int(sample), kind, spec)))
        return
    rows = []
    for size in args.sizes:
        n = size or len(real_vectors())  # 0: the real sentences alone
        ground_truth(n, args.sample)
        jobs = [] if args.no_exact else [("exact", "")]
        jobs += [("faiss_hnsw", s) for s in args.hnsw] + [("faiss_ivf", s) for s in args.ivf]
        for kind, spec in jobs:
            rows += run(n, args.sample, kind, spec)
            print(table(rows[-len(spec.split(",")) :]), file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
