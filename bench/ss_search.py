"""SS search at corpus scale: exact against FAISS HNSW and IVF, on real MiniLM structure; and
the SS layer's k-NN graph built by ``blocked_ivf`` against NN-descent (FAISS, pynndescent).

    .venv/bin/python bench/ss_search.py [--sizes 0 100000 1000000] [--sample 1000]
        [--hnsw M:EF_CONSTRUCTION:EF_SEARCH[,EF_SEARCH...] ...]
        [--ivf LISTS_PER_SQRT_N:NPROBE[,NPROBE...] ...] [--no-exact]
    .venv/bin/python bench/ss_search.py --graphs blocked_ivf faiss_nndescent:K pynndescent:K
        [--sizes ...] [--limit SECONDS]

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

``--graphs``: what the SS layer needs, the 10 nearest others of every one of the n vectors, by
each builder in a fresh process, timed whole (index or graph built, every row's neighbours
taken), with the process's peak RSS and recall@10 of the sample's exact top-10:
``blocked_ivf`` (chainrag's, at its defaults: 4·√n lists, nprobe 32, one refinement step);
``faiss_nndescent:K`` (FAISS's IndexNNDescentFlat, inner product, a K-neighbour graph at its
other defaults, the 10 best of each row's K kept); ``pynndescent:K`` (pynndescent's NNDescent,
metric dot, K neighbours, its numba compilation included; chainrag's ``nndescent`` search).
A builder still running after ``--limit`` seconds is stopped and its row says so.
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

from chainrag.components.retrieval.search import ExactSearch, FaissHNSW, FaissIVF, exact_top_k
from chainrag.protocols import VectorSearch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import recall, rotated_copy, sample_rows, status_mib, timed, write_copies

CACHE = Path("/tmp/ss_search")
M = 10
SINGLE = 100


# --------------------------------------------------------------------------- vectors


def real_vectors() -> np.ndarray:
    """MiniLM vectors of the 2Wiki corpus's spaCy sentences (cached)."""
    path = CACHE / "real.npy"
    if not path.exists():
        from chainrag.components.index.embedders import FlagModelEmbedder
        from chainrag.components.index.spacy_nlp import SpacySentences
        from chainrag.context import StageContext
        from chainrag.data.datasets import load_corpus

        ctx = StageContext()
        sentences = SpacySentences()(load_corpus("2wiki_hipporag_corpus"), ctx)
        vectors = FlagModelEmbedder()([s.text for s in sentences], ctx)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors.astype(np.float32))
    return np.load(path)


def vectors_file(n: int) -> Path:
    """A float32 .npy of n vectors: the real ones, then rotated copies (cached)."""
    path = CACHE / f"vectors_{n}.npy"
    if path.exists():
        return path
    return write_copies(real_vectors(), n, path, lambda real, c: rotated_copy(real, seed=c))


def ground_truth(n: int, sample: int) -> tuple[np.ndarray, np.ndarray]:
    """(sampled rows, their exact top-M ids, self excluded), cached."""
    path = CACHE / f"truth_{n}_{sample}.npz"
    if not path.exists():
        x = np.load(vectors_file(n), mmap_mode="r")
        rows = sample_rows(n, sample, 0)
        ids, _ = exact_top_k(np.asarray(x[rows]), x, M, rows)
        np.savez(path, rows=rows, ids=ids)
    saved = np.load(path)
    return saved["rows"], saved["ids"]


# --------------------------------------------------------------------------- one build


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


GRAPHS = ("blocked_ivf", "faiss_nndescent", "pynndescent")


def knn_graph(kind: str, spec: str, x: np.ndarray) -> tuple[np.ndarray, str]:
    """Every row's M nearest others by the builder ``kind`` (``spec``: its K), and a label."""
    if kind == "blocked_ivf":
        from chainrag.components.retrieval.search import BlockedIVF

        ids, _ = BlockedIVF()(x).self_join(M, 65536)
        return ids, "4·√n lists, nprobe 32, refine 1"
    k = int(spec or 32)
    if kind == "faiss_nndescent":
        import faiss

        from chainrag.components.retrieval.search import NNDescentIndex

        dense = np.ascontiguousarray(x, dtype=np.float32)
        index = faiss.IndexNNDescentFlat(dense.shape[1], k, faiss.METRIC_INNER_PRODUCT)
        index.add(dense)
        graph = faiss.vector_to_array(index.nndescent.final_graph).reshape(len(dense), -1)
        # its K candidates a row, read as chainrag's nndescent index reads pynndescent's
        return NNDescentIndex(dense, graph.astype(np.int64)).self_join(M, 0)[0], f"K={k}"
    from chainrag.components.retrieval.search import NNDescentSearch

    return NNDescentSearch(n_neighbors=k)(x).self_join(M, 0)[0], f"K={k}"


def graph_worker(n: int, sample: int, kind: str, spec: str) -> list[dict[str, Any]]:
    x = np.load(vectors_file(n), mmap_mode="r")
    rows, truth = ground_truth(n, sample)
    (ids, label), run = timed(lambda: knn_graph(kind, spec, x))
    return [{"params": label, "build_s": run["seconds"], "recall": recall(ids[rows], truth),
             "rss_mib": run["peak_mib"], "load": run["load"]}]  # fmt: skip


def run_graph(n: int, sample: int, kind: str, spec: str, limit: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--graph-worker", str(n), str(sample), kind, spec]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"n": n, "kind": kind, "params": spec, "build_s": None, "recall": None,
                "rss_mib": None, "load": None}  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{kind} {spec} at n={n} failed:\n{done.stderr}")
    row: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])[0]
    return row | {"n": n, "kind": kind}


def graph_table(rows: list[dict[str, Any]], limit: float) -> str:
    head = ("| n | builder | parameters | seconds (built + all rows) | recall@10 | peak RSS MiB "
            "| load |\n|---|---|---|---|---|---|---|")  # fmt: skip
    lines = [
        f"| {r['n']:,} | {r['kind']} | {r['params']} | {r['build_s']:,.1f} | {r['recall']:.3f} "
        f"| {r['rss_mib']:,.0f} | {r['load']:.1f} |"
        if r["build_s"] is not None
        else f"| {r['n']:,} | {r['kind']} | {r['params']} | > {limit:,.0f} (stopped) | — | — | — |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def arguments() -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 100_000])
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--hnsw", nargs="*", default=["32:40:32,64"])
    parser.add_argument("--ivf", nargs="*", default=["1:24"])
    parser.add_argument("--no-exact", action="store_true")
    parser.add_argument(
        "--graphs",
        nargs="*",
        default=None,
        metavar="BUILDER[:K]",
        help=f"compare k-NN graph builders instead ({', '.join(GRAPHS)})",
    )
    parser.add_argument(
        "--limit",
        type=float,
        default=1800.0,
        help="--graphs: seconds a builder may run at one size",
    )
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--graph-worker", nargs=4, help=argparse.SUPPRESS)
    return parser, parser.parse_args()


def compare_graphs(args: argparse.Namespace) -> None:
    """--graphs: each builder at each size, a table line on stderr as each ends."""
    graphs = []
    for size in args.sizes:
        n = size or len(real_vectors())
        ground_truth(n, args.sample)
        for builder in args.graphs:
            kind, _, spec = builder.partition(":")
            graphs.append(run_graph(n, args.sample, kind, spec, args.limit))
            print(graph_table(graphs[-1:], args.limit), file=sys.stderr, flush=True)
    print(graph_table(graphs, args.limit))


def compare_searches(args: argparse.Namespace) -> None:
    """Exact search and each FAISS setting at each size, a table line on stderr as each ends."""
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


def main() -> None:
    parser, args = arguments()
    for flag, work in (("worker", worker), ("graph_worker", graph_worker)):
        if given := getattr(args, flag):
            n, sample, kind, spec = given
            print(json.dumps(work(int(n), int(sample), kind, spec)))
            return
    if args.graphs is None:
        compare_searches(args)
        return
    unknown = [b for b in args.graphs if b.partition(":")[0] not in GRAPHS]
    if unknown:  # before any ground truth is computed
        parser.error(f"--graphs {unknown[0]}: unknown builder (known: {', '.join(GRAPHS)})")
    compare_graphs(args)


if __name__ == "__main__":
    main()
