"""The ChainRAG paper's tables, as data: Table 1 (F1 and EM of each method with three LLMs) and
Tables 7–8 (its ablations with GPT-4o-mini), on MuSiQue, 2Wiki and HotpotQA (200 LongBench
questions each). The report prints them beside our rows, labelled as the paper's.
The tables are package data (``chainrag/report/data``), one row a line: ``A|B|F1 EM F1 EM F1 EM``.
"""

from __future__ import annotations

import functools
from importlib import resources

Scores = dict[str, tuple[float, float]]
"""Dataset -> (F1, EM) in %."""

DATASETS = ("musique", "2wiki", "hotpotqa")
"""The order of a row's F1 / EM pairs."""

ABLATION_LABELS = {
    "full": "full",
    "no_rewrite": "w/o rewriting",
    "no_ec": "w/o EC edges",
    "no_ss": "w/o SS edges",
    "no_sa": "w/o SA edges",
    "no_graph": "w/o graph",
}


def parse_rows(text: str) -> list[tuple[str, str, Scores]]:
    """``"A|B|F1 EM F1 EM F1 EM"`` lines -> (A, B, dataset -> (F1, EM)), in the text's order;
    ``#`` lines are comments."""
    rows = []
    for line in text.strip().splitlines():
        if line.startswith("#"):
            continue
        first, second, numbers = line.split("|")
        v = [float(x) for x in numbers.split()]
        rows.append((first, second, {d: (v[2 * i], v[2 * i + 1]) for i, d in enumerate(DATASETS)}))
    return rows


def _table(name: str) -> list[tuple[str, str, Scores]]:
    return parse_rows(resources.files("chainrag.report").joinpath("data", name).read_text("utf-8"))


@functools.cache
def table_1() -> dict[str, dict[str, Scores]]:
    """LLM -> method -> dataset -> (F1, EM): the paper's Table 1."""
    out: dict[str, dict[str, Scores]] = {}
    for llm, method, scores in _table("table_1.txt"):
        out.setdefault(llm, {})[method] = scores
    return out


@functools.cache
def ablations() -> dict[tuple[str, str], Scores]:
    """(integration, run) -> dataset -> (F1, EM): the paper's Tables 7–8, ``run`` one of
    :data:`ABLATION_LABELS`."""
    return {(variant, run): scores for variant, run, scores in _table("tables_7_8.txt")}
