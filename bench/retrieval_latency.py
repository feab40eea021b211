"""Retrieval latency per sub-question, excluding the LLM, by stage, at 2,000 and 20,000 sentences.

    .venv/bin/python bench/retrieval_latency.py [--sizes 2000 20000] [--queries 50]

The sentence graph of the first passages of the 2Wiki corpus (recipes/index/sentence_graph.yaml:
spaCy, BM25 key entities, EC + SS + SA, all-MiniLM-L6-v2) is built once and cached like any
index. Queries are 2Wiki dev questions. Stages: embed the query, dense scores of all sentences
(one matrix product) and the top 100, the reranker (``none``: no model ships offline), and the
graph expansion (iterative_hops, word budget 3000, three hops) with a judge that always says
"no" so every hop is walked — the LLM's time is not counted. Median and 90th percentile in ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.retrieval.expanders import expand_hops
from chainrag.components.retrieval.retrievers import DenseRerank, top_k_hits
from chainrag.context import StageContext
from chainrag.core.budget import words
from chainrag.core.types import Verdict
from chainrag.data.datasets import load_corpus, load_dataset
from chainrag.index.build import IndexCache, build_index
from chainrag.index.graph import SentenceGraph
from chainrag.protocols.context import Context
from chainrag.recipes.recipe import load_recipe

ROOT = Path(__file__).resolve().parent.parent


def graph_of(n: int, ctx: Context) -> SentenceGraph:
    spec = load_recipe(ROOT / "recipes" / "index" / "sentence_graph.yaml").index
    assert spec is not None
    passages = load_corpus("2wiki_hipporag_corpus")
    count = max(1, n // 4)  # about 4 sentences a passage; grow until n sentences
    while True:
        graph, report = build_index(passages[:count], spec, ctx, IndexCache())
        how = "cached" if report.cached else "built"
        print(f"  {count} passages → {len(graph)} sentences ({how})", file=sys.stderr)
        if len(graph) >= n or count >= len(passages):
            assert isinstance(graph, SentenceGraph)
            return graph
        count = int(count * n / max(len(graph), 1)) + 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", type=int, default=[2000, 20000])
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    ctx = StageContext()
    queries = [q.question for q in load_dataset("2wiki")][: args.queries]
    retriever = DenseRerank(k=3, candidates=100)
    print("| sentences | stage | median ms | p90 ms |")
    print("|---|---|---|---|")
    for n in args.sizes:
        print(f"n = {n}: index ...", file=sys.stderr, flush=True)
        graph = graph_of(n, ctx)
        view = graph.view({"ec": 1.0, "ss": 1.0, "sa": 1.0})
        texts = graph.texts
        times: dict[str, list[float]] = {
            k: [] for k in ("embed query", "dense top-100", "rerank", "expand (3 hops)", "total")
        }
        graph.embedder(["warm up"], ctx, "query")
        for query in queries:
            t0 = time.perf_counter()
            q = graph.embedder([query], ctx, "query")
            t1 = time.perf_counter()
            hits = top_k_hits(graph.embeddings @ q[0], retriever.candidates)
            t2 = time.perf_counter()
            seeds = retriever.reranker(query, hits, [texts[h.index] for h in hits], ctx)[:3]
            t3 = time.perf_counter()
            expand_hops([h.index for h in seeds], view.neighbours, lambda u, t=texts: words(t[u]),
                        lambda units: Verdict(False), word_budget=3000, max_hops=3)  # fmt: skip
            t4 = time.perf_counter()
            for key, value in zip(
                times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True
            ):
                value_ms = value * 1000
                times[key].append(value_ms)
        for stage, values in times.items():
            median, p90 = statistics.median(values), percentile(values, 0.9)
            print(f"| {len(graph):,} | {stage} | {median:.2f} | {p90:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
