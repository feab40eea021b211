"""The ChainRAG paper's tables, as data: Table 1 (F1 and EM of each method with three LLMs) and
Tables 7–8 (its ablations with GPT-4o-mini), on MuSiQue, 2Wiki and HotpotQA (200 LongBench
questions each). The report prints them beside our rows, labelled as the paper's.
"""

from __future__ import annotations

import functools

Scores = dict[str, tuple[float, float]]
"""Dataset -> (F1, EM) in %."""

DATASETS = ("musique", "2wiki", "hotpotqa")
"""The order of a row's F1 / EM pairs."""

# The ChainRAG paper's Table 1: F1 and EM (%) on MuSiQue, 2Wiki, HotpotQA (200 LongBench
# questions each); the LongRAG and HippoRAG rows are left out (not implemented here).
_TABLE_1 = """
GPT-4o-mini|NaiveRAG|29.82 19.00 50.61 42.50 56.92 42.00
GPT-4o-mini|NaiveRAG w/ QD|37.49 26.00 56.88 38.50 60.00 43.50
GPT-4o-mini|Iter-RetGen|38.41 33.00 58.43 50.50 57.77 42.00
GPT-4o-mini|ChainRAG (AnsInt)|50.54 37.00 62.55 52.00 60.73 46.00
GPT-4o-mini|ChainRAG (CxtInt)|47.87 38.50 56.54 50.50 64.59 50.00
Qwen2.5-72B|NaiveRAG|27.08 16.50 39.82 28.50 50.25 34.50
Qwen2.5-72B|NaiveRAG w/ QD|33.91 20.50 53.84 37.00 52.14 34.50
Qwen2.5-72B|Iter-RetGen|40.15 31.50 53.59 41.50 58.41 45.00
Qwen2.5-72B|ChainRAG (AnsInt)|47.75 37.00 64.23 54.00 60.55 46.00
Qwen2.5-72B|ChainRAG (CxtInt)|49.37 39.00 65.85 55.50 64.54 52.00
GLM-4-Plus|NaiveRAG|37.86 28.00 57.78 45.50 58.42 44.00
GLM-4-Plus|NaiveRAG w/ QD|30.33 22.50 60.93 48.00 59.05 44.00
GLM-4-Plus|Iter-RetGen|52.57 44.50 66.56 56.50 61.03 48.50
GLM-4-Plus|ChainRAG (AnsInt)|51.66 40.00 67.35 58.00 55.40 42.00
GLM-4-Plus|ChainRAG (CxtInt)|49.40 38.00 70.58 61.50 64.22 50.00
"""


# The paper's Tables 7 (F1) and 8 (EM), appendix C: its ablations with GPT-4o-mini on the same
# 200 LongBench questions per dataset; per integration, the full method then each ablation,
# F1 and EM on MuSiQue, 2Wiki, HotpotQA.
_TABLES_7_8 = """
ansint|full|50.54 37.00 62.55 52.00 60.73 46.00
ansint|no_rewrite|38.18 26.50 59.69 51.50 55.19 42.00
ansint|no_ec|47.52 36.00 58.28 48.50 57.99 45.00
ansint|no_ss|47.40 35.50 59.78 49.50 58.40 45.50
ansint|no_sa|48.83 37.00 59.87 50.50 56.64 44.00
ansint|no_graph|47.97 35.00 60.96 45.00 58.05 42.00
cxtint|full|47.87 38.50 56.54 50.50 64.59 50.00
cxtint|no_rewrite|36.60 25.00 56.36 47.00 61.57 47.00
cxtint|no_ec|45.34 33.00 55.12 47.00 61.73 47.00
cxtint|no_ss|43.39 34.00 55.68 46.00 60.85 48.00
cxtint|no_sa|47.36 36.50 55.08 46.50 61.32 47.00
cxtint|no_graph|40.18 27.00 54.76 39.50 60.19 44.00
"""
ABLATION_LABELS = {
    "full": "full",
    "no_rewrite": "w/o rewriting",
    "no_ec": "w/o EC edges",
    "no_ss": "w/o SS edges",
    "no_sa": "w/o SA edges",
    "no_graph": "w/o graph",
}


def parse_rows(text: str) -> list[tuple[str, str, Scores]]:
    """``"A|B|F1 EM F1 EM F1 EM"`` lines -> (A, B, dataset -> (F1, EM)), in the text's order."""
    rows = []
    for line in text.strip().splitlines():
        first, second, numbers = line.split("|")
        v = [float(x) for x in numbers.split()]
        rows.append((first, second, {d: (v[2 * i], v[2 * i + 1]) for i, d in enumerate(DATASETS)}))
    return rows


@functools.cache
def table_1() -> dict[str, dict[str, Scores]]:
    """LLM -> method -> dataset -> (F1, EM): the paper's Table 1."""
    out: dict[str, dict[str, Scores]] = {}
    for llm, method, scores in parse_rows(_TABLE_1):
        out.setdefault(llm, {})[method] = scores
    return out


@functools.cache
def ablations() -> dict[tuple[str, str], Scores]:
    """(integration, run) -> dataset -> (F1, EM): the paper's Tables 7–8, ``run`` one of
    :data:`ABLATION_LABELS`."""
    return {(variant, run): scores for variant, run, scores in parse_rows(_TABLES_7_8)}
