"""Sentence-graph build time per stage, against a straightforward reference build.

    .venv/bin/python bench/graph_build.py [--sizes 200 2000 20000] [--reference-sizes ...]
                                          [--repeats 5]

Sentences come from the 2Wiki corpus (``2wiki_hipporag_corpus``, chainrag/data/files/hipporag/),
split by spaCy, cut to n. Split, NER and embeddings (spaCy en_core_web_sm, all-MiniLM-L6-v2
through FlagModel) are measured once and shared by both builds, so both graph parts start from
the same NER output and embeddings. The graph part is: key entities (BM25, α = 60), the EC, SS
(m = 10) and SA (window 3) layers, and the entity index.

The reference does the graph part the way the authors' code does: per-entity BM25 scores by a
Python loop over all sentences, one networkx graph, a full n×n similarity matrix with an
argsort per row, and all-pairs loops over the sentences of each entity. Peak memory of each
graph part is tracemalloc's peak (numpy's buffers are traced). Each graph part is run
--repeats times (the reference only up to --reference-memory-max sentences: at 20,000 one run
takes minutes) and the run of median total time is reported, stage by stage.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.index.edges import EntityCooccurrence, SimilarityTopK, StructuralAdjacency
from chainrag.components.index.embedders import FlagModelEmbedder
from chainrag.components.index.key_entities import BM25KeyEntities, entity_vocabulary
from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences
from chainrag.context import StageContext
from chainrag.core.types import GraphInputs, Sentence
from chainrag.data.datasets import load_corpus
from chainrag.index.build import entity_name
from chainrag.protocols.context import Context


def measure(fn: Callable[[], Any], trace: bool = False) -> tuple[Any, float, float | None]:
    """(result, seconds, peak MiB traced while it ran, when ``trace``).

    Tracing slows Python-level code several times over, so times come from untraced runs and
    peaks from separate traced runs.
    """
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
    if trace:
        tracemalloc.stop()
    return out, seconds, peak


def median_run(run: Callable[[], dict[str, float]], repeats: int) -> dict[str, float]:
    """The stage times of the run whose total is the median of ``repeats`` runs."""
    runs = sorted((run() for _ in range(max(1, repeats))), key=lambda r: sum(r.values()))
    return runs[(len(runs) - 1) // 2]


def sentences_of(n: int, ctx: Context) -> tuple[list[Sentence], float]:
    passages = load_corpus("2wiki_hipporag_corpus")
    splitter = SpacySentences()
    out: list[Sentence] = []
    seconds, start = 0.0, 0
    while len(out) < n and start < len(passages):
        batch = passages[start : start + 200]
        t = time.perf_counter()
        found = splitter(batch, ctx)
        seconds += time.perf_counter() - t
        out.extend(found)
        start += 200
    return out[:n], seconds * min(1.0, n / max(len(out), 1))


def ours(
    sentences: list[Sentence], names: list[list[str]], vectors: np.ndarray
) -> dict[str, float]:
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    keys = BM25KeyEntities(alpha=60)(names)
    seconds["key_entities"] = time.perf_counter() - t
    inputs = GraphInputs(tuple(sentences), keys, vectors)
    for label, builder in (("ec", EntityCooccurrence()), ("ss", SimilarityTopK(m=10)),
                           ("sa", StructuralAdjacency(window=3))):  # fmt: skip
        t = time.perf_counter()
        builder(inputs)
        seconds[label] = time.perf_counter() - t
    t = time.perf_counter()
    entity_vocabulary(names)
    seconds["entity_index"] = time.perf_counter() - t
    return seconds


def reference(
    sentences: list[Sentence], names: list[list[str]], vectors: np.ndarray
) -> dict[str, float]:
    import networkx as nx

    seconds: dict[str, float] = {}
    t = time.perf_counter()
    n = len(names)
    vocabulary = sorted({e for row in names for e in row})
    doc_freqs = [{e: row.count(e) for e in row} for row in names]
    lengths = [len(row) for row in names]
    avgdl = (sum(lengths) / n) or 1.0
    df = dict.fromkeys(vocabulary, 0)
    for row in doc_freqs:
        for e in row:
            df[e] += 1
    idf = {e: math.log((n - d + 0.5) / (d + 0.5)) for e, d in df.items()}
    mean_idf = sum(idf.values()) / max(len(idf), 1)
    idf = {e: (0.25 * mean_idf if v < 0 else v) for e, v in idf.items()}
    norm = 1.5 * (0.25 + 0.75 * np.asarray(lengths, dtype=np.float64) / avgdl)
    score = {}
    for e in vocabulary:  # one BM25 query per entity, as rank_bm25's get_scores does it
        tf = np.array([freqs.get(e, 0) for freqs in doc_freqs], dtype=np.float64)
        score[e] = float(np.mean(idf[e] * tf * 2.5 / (tf + norm)))
    keys = []
    for row in names:
        unique = sorted(set(row), key=lambda e: (-score[e], e))
        keys.append(unique[: math.ceil(0.6 * len(unique) - 1e-9)])
    seconds["key_entities"] = time.perf_counter() - t

    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    t = time.perf_counter()
    by_entity: dict[str, list[int]] = {}
    for i, row in enumerate(keys):
        for e in row:
            by_entity.setdefault(e, []).append(i)
    for e, members in by_entity.items():
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                graph.add_edge(members[a], members[b], type="EC", weight=score[e])
    seconds["ec"] = time.perf_counter() - t
    t = time.perf_counter()
    sim = vectors @ vectors.T
    for i in range(n):
        for j in np.argsort(-sim[i])[1:11]:
            graph.add_edge(i, int(j), type="SS", weight=float(sim[i, j]))
    seconds["ss"] = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(n):
        for j in range(i + 1, min(n, i + 4)):
            if sentences[i].passage == sentences[j].passage:
                graph.add_edge(i, j, type="SA", weight=1.0 / (j - i + 1))
    seconds["sa"] = time.perf_counter() - t
    t = time.perf_counter()
    entity_index: dict[str, list[int]] = {}
    for i, row in enumerate(names):
        for e in row:
            entity_index.setdefault(e, []).append(i)
    nx.to_scipy_sparse_array(graph)
    seconds["entity_index"] = time.perf_counter() - t
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", type=int, default=[200, 2000, 20000])
    parser.add_argument(
        "--reference-sizes",
        nargs="+",
        type=int,
        default=None,
        help="sizes at which to run the reference too (default: all)",
    )
    parser.add_argument(
        "--reference-memory-max",
        type=int,
        default=2000,
        help="largest n at which to trace the reference's memory (a second, slower run)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="runs of each graph part")
    args = parser.parse_args()
    ref_sizes = set(args.sizes if args.reference_sizes is None else args.reference_sizes)
    ctx = StageContext()
    FlagModelEmbedder()(["warm up"], ctx)
    SpacyNER()(["Warm up."], ctx)
    rows = []
    for n in args.sizes:
        print(f"n = {n}: splitting, NER, embedding ...", file=sys.stderr, flush=True)
        sentences, split_s = sentences_of(n, ctx)
        texts = [s.text for s in sentences]
        mentions, ner_s, _ = measure(lambda texts=texts: SpacyNER()(texts, ctx))  # type: ignore[misc]
        names = [[x for x in map(entity_name, row) if x] for row in mentions]
        t = time.perf_counter()
        vectors = FlagModelEmbedder()(texts, ctx)
        embed_s = time.perf_counter() - t
        print(f"n = {n}: graph part (ours) ...", file=sys.stderr, flush=True)
        run_ours = lambda s=sentences, e=names, v=vectors: ours(s, e, v)  # noqa: E731
        run_ref = lambda s=sentences, e=names, v=vectors: reference(s, e, v)  # noqa: E731
        mine = median_run(run_ours, args.repeats)
        mine_peak = measure(run_ours, trace=True)[2]
        ref, ref_peak = None, None
        if n in ref_sizes:
            print(f"n = {n}: graph part (reference) ...", file=sys.stderr, flush=True)
            ref = median_run(run_ref, args.repeats if n <= args.reference_memory_max else 1)
            if n <= args.reference_memory_max:
                ref_peak = measure(run_ref, trace=True)[2]
        rows.append((n, split_s, ner_s, embed_s, mine, mine_peak, ref, ref_peak))
    print_tables(rows)
    return 0


def print_tables(rows: list[tuple[Any, ...]]) -> None:
    stages = ["key_entities", "ec", "ss", "sa", "entity_index"]
    print(
        "| n | split | NER | embed | "
        + " | ".join(stages)
        + " | graph part | whole build | graph share |"
    )
    print("|---|---|---|---|" + "---|" * len(stages) + "---|---|---|")
    for n, split_s, ner_s, embed_s, mine, _, ref, _ in rows:
        shared = split_s + ner_s + embed_s
        for label, times in (("chainrag", mine), ("reference", ref)):
            if times is None:
                continue
            graph = sum(times.values())
            cells = " | ".join(f"{times[s]:.3f}" for s in stages)
            print(
                f"| {n:,} {label} | {split_s:.2f} | {ner_s:.2f} | {embed_s:.2f} | {cells} "
                f"| {graph:.3f} | {shared + graph:.1f} | {graph / (shared + graph):.1%} |"
            )
    print()
    print(
        "| n | graph part: chainrag (s) | reference (s) | speed-up | whole build speed-up "
        "| peak MiB chainrag | peak MiB reference |"
    )
    print("|---|---|---|---|---|---|---|")
    for n, split_s, ner_s, embed_s, mine, mine_peak, ref, ref_peak in rows:
        shared = split_s + ner_s + embed_s
        g = sum(mine.values())
        if ref is None:
            print(f"| {n:,} | {g:.3f} | not run | | | {mine_peak:.1f} | |")
            continue
        r = sum(ref.values())
        ref_mem = f"{ref_peak:.1f}" if ref_peak is not None else "not traced"
        print(
            f"| {n:,} | {g:.3f} | {r:.3f} | {r / g:.0f}× | {(shared + r) / (shared + g):.2f}× "
            f"| {mine_peak:.1f} | {ref_mem} |"
        )


if __name__ == "__main__":
    sys.exit(main())
