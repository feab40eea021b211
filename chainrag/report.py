"""Reports from stored runs: markdown tables per dataset beside the paper's Table 1, and plots.

    chainrag report runs/musique/ansint runs/musique/naive --plots docs/plots

Every row is one answer of one run (a ChainRAG run gives an AnsInt and a CxtInt row), averaged
over the questions the run answered: F1, EM (in %), Recall@k of the units the method retrieved
(paragraph level on MuSiQue, sentence level on HotpotQA/2Wiki; see :mod:`chainrag.metrics`),
LLM calls per question (requests the method made, answered by the model or by the response
cache), tokens per question (of the requests the model answered), USD per question when the
LLM is priced (litellm's price map; local models are free and show no column), and seconds
per question (wall time, index building included). The paper's Table 1 rows are printed below
ours, labelled as the paper's, since they were measured with other LLMs, other contexts
(LongBench's) and 200 questions per dataset. With runs on two datasets or more, a first table
puts F1 / EM side by side per dataset, in the layout of Table 1; below each dataset's table,
F1 by the dataset's question type when it has several (2Wiki's comparison, compositional...).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.run.files import RunError
from chainrag.run.folder import RunDir
from chainrag.run.meta import RunMeta
from chainrag.run.record import RunRecord

PRETTY = {
    "ansint": "ChainRAG (AnsInt)",
    "cxtint": "ChainRAG (CxtInt)",
    "naive": "NaiveRAG",
    "naive_qd": "NaiveRAG w/ QD",
    "iter_retgen": "Iter-RetGen",
    "naive_iteration": "Naive iteration (seed 002)",
    "guided_iteration": "Guided iteration (seed 002)",
    "tree": "Tree retrieval (seed 002)",
    "four_module": "Four modules (seed 004)",
}
MAIN_RECIPES = {"ansint", "cxtint", "naive", "naive_qd", "iter_retgen", "naive_iteration",
                "guided_iteration", "tree", "four_module"}  # fmt: skip
SEED_LABELS = {"vanilla": "Vanilla RAG, 4 passages (seed 002)",
               "vanilla_10": "Vanilla RAG, 10 passages (seed 002)",
               "three_module": "Three modules, no reservoir (seed 004)",
               "three_module_helps": "Three modules, yes/no filter (not seed 004's)"}  # fmt: skip

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


def _per_dataset(numbers: str) -> dict[str, tuple[float, float]]:
    """``"F1 EM F1 EM F1 EM"`` of the paper's tables -> dataset -> (F1, EM)."""
    v = [float(x) for x in numbers.split()]
    return {"musique": (v[0], v[1]), "2wiki": (v[2], v[3]), "hotpotqa": (v[4], v[5])}


PAPER_TABLE_1: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
for _line in _TABLE_1.strip().splitlines():
    _llm, _method, _numbers = _line.split("|")
    PAPER_TABLE_1.setdefault(_llm, {})[_method] = _per_dataset(_numbers)

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
PAPER_ABLATIONS: dict[tuple[str, str], dict[str, tuple[float, float]]] = {}
for _line in _TABLES_7_8.strip().splitlines():
    _variant, _run, _numbers = _line.split("|")
    PAPER_ABLATIONS[(_variant, _run)] = _per_dataset(_numbers)
ABLATION_LABELS = {
    "full": "full",
    "no_rewrite": "w/o rewriting",
    "no_ec": "w/o EC edges",
    "no_ss": "w/o SS edges",
    "no_sa": "w/o SA edges",
    "no_graph": "w/o graph",
}
ABLATIONS = tuple(name for name in ABLATION_LABELS if name != "full")
K_SWEEP = ("k1", "k2", "k3", "k4", "k5")


@attrs.frozen
class Run:
    """A stored run: its directory, description and finished records."""

    folder: Path
    meta: RunMeta
    records: tuple[RunRecord, ...]
    failed: int

    @property
    def name(self) -> str:
        return self.meta.recipe_name

    @property
    def dataset(self) -> str:
        """The dataset, or ``DATASET@CORPUS`` for a run over a shared corpus index."""
        if self.meta.index is None:
            return self.meta.dataset
        from chainrag.corpus.store import corpus_label

        return f"{self.meta.dataset}@{corpus_label(self.meta.index.sources)}"

    @property
    def llm(self) -> str:
        return self.meta.models.llm.model


def load_run(folder: Path) -> Run:
    """Read a run directory without changing it (a torn last line is ignored, not cut)."""
    run = RunDir(folder)
    meta = run.meta()
    records, _ = run.records(repair=False)
    failed_ids = {e.id for e in run.errors()} - {r.id for r in records}
    return Run(folder, meta, tuple(records), len(failed_ids))


def find_runs(paths: Iterable[Path]) -> list[Run]:
    """Runs in the given folders: each folder is a run or holds runs below it."""
    runs: list[Run] = []
    for path in paths:
        if not path.is_dir():
            raise RunError(f"{path}: no such run directory")
        found = (
            [path]
            if (path / "run.json").is_file()
            else sorted(p.parent for p in path.rglob("run.json"))
        )
        if not found:
            raise RunError(f"{path}: no run.json in it or below it")
        runs.extend(load_run(p) for p in found)
    return runs


@attrs.frozen
class Row:
    """One answer variant of one run, averaged over its questions (rates in %)."""

    label: str
    run: str
    variant: str
    dataset: str
    llm: str
    n: int
    failed: int
    f1: float
    em: float
    recall: dict[str, float]
    calls: float
    tokens: float
    cost: float | None
    seconds: float
    by_type: dict[str, tuple[int, float]] = attrs.field(factory=dict)
    """Question type -> (questions, F1 in %), from each record's ``question_type``."""


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def rows_of(run: Run) -> list[Row]:
    """The rows of a run: one per answer variant, the primary one first."""
    records = run.records
    if not records:
        return []
    variants = list(dict.fromkeys(v for r in records for v in r.answers))
    with_retrieval = [r.retrieval.scores for r in records if r.retrieval is not None]
    first = with_retrieval[0] if with_retrieval else {}
    recall_keys = [k for k in first if k.startswith("recall@") or k in ("hit@4", "hit@10")]
    recall = {k: 100 * _mean([float(r[k]) for r in with_retrieval]) for k in recall_keys}
    usage = [r.usage for r in records]
    calls = _mean([float(u.calls + u.cache_hits) for u in usage])
    tokens = _mean([float(u.prompt_tokens + u.completion_tokens) for u in usage])
    seconds = _mean([r.seconds for r in records])
    costs = [u.cost_usd for u in usage]
    cost = _mean([float(c or 0.0) for c in costs]) if any(c is not None for c in costs) else None
    out = []
    for variant in variants:
        scored = [r.answers[variant] for r in records if variant in r.answers]
        pretty = PRETTY.get(variant, variant)
        label = SEED_LABELS.get(run.name) or (
            pretty if run.name in MAIN_RECIPES else f"{pretty}, {run.name}"
        )
        out.append(
            Row(label, run.name, variant, run.dataset, run.llm, len(scored), run.failed,
                100 * _mean([s.f1 for s in scored]), 100 * _mean([s.em for s in scored]),
                recall, calls, tokens, cost, seconds, f1_by_type(records, variant))
        )  # fmt: skip
    return out


def f1_by_type(records: Sequence[RunRecord], variant: str) -> dict[str, tuple[int, float]]:
    """Question type -> (questions, mean F1 in %) of one answer variant; untyped questions
    count under "?"."""
    groups: dict[str, list[float]] = {}
    for record in records:
        scored = record.answers.get(variant)
        if scored is not None:
            groups.setdefault(record.question_type or "?", []).append(scored.f1)
    return {kind: (len(f1s), 100 * _mean(f1s)) for kind, f1s in sorted(groups.items())}


def _labels(rows: Sequence[Row]) -> list[str]:
    """Each row's label; a label seen before gets its run's name too."""
    labels, seen = [], set()
    for row in rows:
        labels.append(row.label if row.label not in seen else f"{row.label} ({row.run})")
        seen.add(row.label)
    return labels


def _fmt(value: float, digits: int = 2) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def dataset_table(rows: Sequence[Row], *, paper: bool = True) -> str:
    """Our rows for one dataset as a markdown table, then (``paper``) the paper's rows for it."""
    recall_keys = list(dict.fromkeys(k for r in rows for k in r.recall))
    head = ["method", "LLM", "n", "F1", "EM",
            *(k.replace("recall", "R").replace("hit", "Hit") for k in recall_keys),
            "calls/q", "tokens/q", "s/q"]  # fmt: skip
    priced = any(r.cost for r in rows)  # local models cost 0: no column for them
    if priced:
        head.insert(-1, "USD/q")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row, label in zip(rows, _labels(rows), strict=True):
        n = f"{row.n}" + (f" (+{row.failed} failed)" if row.failed else "")
        cells = [label, row.llm, n, _fmt(row.f1), _fmt(row.em),
                 *(_fmt(row.recall.get(k, math.nan), 1) for k in recall_keys),
                 _fmt(row.calls, 1), _fmt(row.tokens, 0), _fmt(row.seconds, 1)]  # fmt: skip
        if priced:
            cells.insert(-1, "–" if row.cost is None else f"{row.cost:.5f}")
        lines.append("| " + " | ".join(cells) + " |")
    dataset = rows[0].dataset if rows else ""
    methods = list(dict.fromkeys(m for table in PAPER_TABLE_1.values() for m in table))
    llms = list(PAPER_TABLE_1)
    if paper and any(dataset in PAPER_TABLE_1[llm].get(m, {}) for llm in llms for m in methods):
        lines += ["", "For reference, **the paper's Table 1** (F1 / EM; not measured here: 200 "
                  "LongBench questions, other LLMs and embedder, bge-reranker):", "",
                  "| method (paper) | " + " | ".join(llms) + " |",
                  "|---" * (len(llms) + 1) + "|"]  # fmt: skip
        for method in methods:
            cells = []
            for llm in llms:
                f1, em = PAPER_TABLE_1[llm].get(method, {}).get(dataset, (math.nan, math.nan))
                cells.append(f"{_fmt(f1)} / {_fmt(em)}")
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def type_table(rows: Sequence[Row]) -> str:
    """F1 by question type, one column per row, when the rows' questions have two types or
    more ("" otherwise). A cell whose row answered another number of questions of that type
    than the header's says how many."""
    counts: dict[str, int] = {}
    for row in rows:
        for kind, (n, _) in row.by_type.items():
            counts[kind] = max(counts.get(kind, 0), n)
    if len(counts) < 2:
        return ""
    head = "| question type (n) | " + " | ".join(_labels(rows)) + " |"
    lines = [head, "|---" * (len(rows) + 1) + "|"]
    for kind in sorted(counts, key=lambda k: (-counts[k], k)):
        cells = []
        for row in rows:
            n, f1 = row.by_type.get(kind, (0, math.nan))
            cells.append(_fmt(f1, 1) + (f" ({n})" if n != counts[kind] else ""))
        lines.append(f"| {kind} ({counts[kind]}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def across_datasets(by_dataset: Mapping[str, Sequence[Row]]) -> str:
    """One table in the layout of the paper's Table 1: a row per method, F1 / EM per dataset
    ("" when the rows cover fewer than two datasets)."""
    if len(by_dataset) < 2:
        return ""
    cells: dict[str, dict[str, str]] = {}
    for dataset, rows in by_dataset.items():
        for row in rows:
            cells.setdefault(row.label, {}).setdefault(
                dataset, f"{_fmt(row.f1)} / {_fmt(row.em)} ({row.n})"
            )
    datasets = list(by_dataset)
    lines = ["| method | " + " | ".join(f"{d} F1 / EM (n)" for d in datasets) + " |",
             "|---" * (len(datasets) + 1) + "|"]  # fmt: skip
    for label, of_label in cells.items():
        lines.append(f"| {label} | " + " | ".join(of_label.get(d, "–") for d in datasets) + " |")
    return "\n".join(lines)


def on_common_questions(runs: Sequence[Run]) -> tuple[list[Run], dict[str, tuple[int, ...]]]:
    """Each run restricted to the questions every run of its dataset answered, so that rows
    compare like with like; and, per dataset where that dropped questions, the runs' sizes.
    A run with no finished question yet (just started) has no row and trims nothing."""
    ids: dict[str, set[str]] = {}
    for run in runs:
        if not run.records:
            continue
        mine = {r.id for r in run.records}
        ids[run.dataset] = ids[run.dataset] & mine if run.dataset in ids else mine
    trimmed: dict[str, tuple[int, ...]] = {}
    out = []
    for run in runs:
        kept = tuple(r for r in run.records if r.id in ids.get(run.dataset, ()))
        if len(kept) != len(run.records):
            trimmed[run.dataset] = tuple(
                len(r.records) for r in runs if r.dataset == run.dataset and r.records
            )
        out.append(attrs.evolve(run, records=kept))
    return out, trimmed


GROUPS = ("main", "ablations", "k sweep")
"""The comparisons of a dataset, each a table: the methods; the ablations beside the full
ChainRAG run (``ansint``/``cxtint``, in both); the k sweep."""


def groups_of(run: Run) -> tuple[str, ...]:
    if run.name in ABLATIONS:
        return ("ablations",)
    if run.name in K_SWEEP:
        return ("k sweep",)
    if run.name in ("ansint", "cxtint"):
        return ("main", "ablations")
    return ("main",)


@attrs.frozen
class Comparison:
    """The runs of one table: one dataset, one group, each run (with ``common``) restricted
    to the questions all of them answered; ``sizes`` the runs' own sizes when that dropped
    some."""

    dataset: str
    group: str
    runs: tuple[Run, ...]
    sizes: tuple[int, ...] | None


def comparisons(runs: Sequence[Run], *, common: bool = True) -> list[Comparison]:
    """The tables to draw, dataset by dataset in the runs' order, groups in :data:`GROUPS`
    order; a group holding only the full ChainRAG run and no ablation is left out (that run
    is in the main table)."""
    grouped: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        for group in groups_of(run):
            grouped.setdefault((run.dataset, group), []).append(run)
    datasets = list(dict.fromkeys(run.dataset for run in runs))
    out = []
    for dataset in datasets:
        for group in GROUPS:
            members = grouped.get((dataset, group), [])
            if group == "ablations" and not any(r.name in ABLATIONS for r in members):
                continue  # only the full run: it is in the main table
            if not members:
                continue
            sizes = None
            if common:
                members, trimmed = on_common_questions(members)
                sizes = trimmed.get(dataset)
            out.append(Comparison(dataset, group, tuple(members), sizes))
    return out


def paper_ablations(dataset: str) -> str:
    """The paper's Tables 7–8 for one dataset as a reference table (F1 / EM, GPT-4o-mini),
    an ablation a row, AnsInt and CxtInt side by side; empty for a dataset it has no
    figures for."""
    if dataset not in PAPER_ABLATIONS[("ansint", "full")]:
        return ""
    lines = [
        "For reference, **the paper's Tables 7–8** (F1 / EM with GPT-4o-mini; not measured "
        "here: 200 LongBench questions, other embedder, bge-reranker):",
        "",
        "| ablation (paper) | AnsInt | CxtInt |",
        "|---|---|---|",
    ]
    for run, label in ABLATION_LABELS.items():
        cells = []
        for variant in ("ansint", "cxtint"):
            f1, em = PAPER_ABLATIONS[(variant, run)][dataset]
            cells.append(f"{_fmt(f1)} / {_fmt(em)}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _common_note(table: Comparison, n: int) -> str:
    if table.sizes is None:
        return ""
    sizes = ", ".join(map(str, table.sizes))
    return (
        f"Scored on the {n} questions every run below answered (the runs hold {sizes}; "
        "`--all-questions` scores each on all of its own).\n\n"
    )


def markdown(runs: Sequence[Run], *, common: bool = True) -> str:
    """The whole report: one section per dataset — the methods' table, then the ablations'
    and the k sweep's where such runs exist. With ``common``, every row of a table is scored
    on the questions all its runs answered (a note says when that drops some)."""
    tables = [(t, [row for run in t.runs for row in rows_of(run)]) for t in comparisons(
        runs, common=common)]  # fmt: skip
    tables = [(t, rows) for t, rows in tables if rows]
    if not tables:
        return "No finished questions in these runs yet."
    sections = [
        "Rates in %; calls, tokens and seconds per question; R@k = recall of the gold evidence "
        "in the first k units retrieved (paragraphs on MuSiQue, sentences on HotpotQA/2Wiki); "
        "Hit@4 = all of it in the first 4 (strict, as seed 002); Hit@10 the same in the first 10 "
        "(read tree retrieval, whose context holds up to 9 passages, there)."
        + (" DATASET@CORPUS: over a shared corpus index, R@k counts gold paragraphs by title."
           if any("@" in t.dataset for t, _ in tables) else "")
    ]  # fmt: skip
    main = {t.dataset: rows for t, rows in tables if t.group == "main"}
    if table := across_datasets(main):
        sections.append(f"## Across datasets\n\n{table}")
    for dataset in dict.fromkeys(t.dataset for t, _ in tables):
        parts = [f"## {dataset}"]
        for t, rows in tables:
            if t.dataset != dataset:
                continue
            note = _common_note(t, rows[0].n)
            if t.group == "main":
                parts.append(f"{note}{dataset_table(rows)}")
                if types := type_table(rows):
                    parts.append(f"F1 by the dataset's question type:\n\n{types}")
            else:
                title = ("Ablations (cf. the paper's Figures 4–5)" if t.group == "ablations"
                         else "k seed sentences (cf. the paper's Figure 7)")  # fmt: skip
                parts.append(f"### {dataset}: {title}\n\n{note}{dataset_table(rows, paper=False)}")
                if t.group == "ablations" and (reference := paper_ablations(dataset)):
                    parts.append(reference)
        sections.append("\n\n".join(parts))
    return "\n\n".join(sections) + "\n"


def plots(runs: Sequence[Run], folder: Path, *, common: bool = True) -> list[Path]:
    """PNG plots in ``folder``: F1 by method and dataset, F1 against LLM calls per question,
    and — where ablation or k-sweep runs exist — bars like the paper's Figures 4–5 and a line
    like its Figure 7, each from the rows of its table in :func:`markdown` (with ``common``,
    on the questions that table's runs have in common). Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grouped: dict[str, list[Row]] = {group: [] for group in GROUPS}
    for table in comparisons(runs, common=common):
        grouped[table.group].extend(row for run in table.runs for row in rows_of(run))
    rows = [row for group in GROUPS for row in grouped[group]]
    if not rows:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    main = [r for r in grouped["main"] if r.run in MAIN_RECIPES or r.run in SEED_LABELS]
    datasets = list(dict.fromkeys(r.dataset for r in rows))

    if main:
        # one bar per method a dataset has, grouped by dataset; a method keeps its colour
        labels = list(dict.fromkeys(r.label for r in main))
        palette = [plt.get_cmap("tab20")(i) for i in range(20)]
        colour = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
        fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(main) + 4), 4))
        x, ticks, named = 0, [], set()
        for d in datasets:
            here = sorted((r for r in main if r.dataset == d), key=lambda r: labels.index(r.label))
            first = x
            for r in here:
                ax.bar(x, r.f1, 0.8, color=colour[r.label],
                       label=None if r.label in named else r.label)  # fmt: skip
                named.add(r.label)
                x += 1
            ticks.append(((first + x - 1) / 2, d))
            x += 1  # a gap between datasets
        ax.set_xticks([t for t, _ in ticks], [d for _, d in ticks])
        ax.set_ylabel("F1 (%)")
        ax.set_title("F1 by method and dataset")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        written.append(_save(fig, folder / "f1_by_method.png"))

    # One panel per dataset (three to a row, shared axes): the labels of one dataset's
    # methods do not land on another's.
    shown = grouped["main"] or rows  # the ablations and the k sweep have their own plots
    on_plot = [d for d in datasets if any(r.dataset == d for r in shown)]
    if on_plot:
        cols = min(3, len(on_plot))
        lines = -(-len(on_plot) // cols)
        fig, axes = plt.subplots(lines, cols, figsize=(4.8 * cols, 3.6 * lines), sharex=True,
                                 sharey=True, squeeze=False)  # fmt: skip
        for i, ax in enumerate(axes.flat):
            if i >= len(on_plot):
                ax.set_visible(False)
                continue
            points = [r for r in shown if r.dataset == on_plot[i]]
            ax.scatter([r.calls for r in points], [r.f1 for r in points])
            for r in points:
                ax.annotate(r.label, (r.calls, r.f1), fontsize=6, xytext=(3, 3),
                            textcoords="offset points")  # fmt: skip
            ax.set_title(on_plot[i], fontsize=9)
            ax.grid(alpha=0.3)
            if i % cols == 0:
                ax.set_ylabel("F1 (%)")
            if i + cols >= len(on_plot):  # the lowest panel of its column
                ax.set_xlabel("LLM calls per question")
        fig.suptitle("F1 against LLM calls")
        written.append(_save(fig, folder / "f1_vs_calls.png"))

    ablation = grouped["ablations"]
    if ablation:
        names = ["full", *[a for a in ABLATIONS if any(r.run == a for r in ablation)]]
        ablated = list(dict.fromkeys(r.dataset for r in ablation))
        groups = [(d, v) for d in ablated for v in ("ansint", "cxtint")]
        n = {d: max(r.n for r in ablation if r.dataset == d) for d in ablated}
        width = 0.8 / len(names)
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, metric in zip(axes, ("f1", "em"), strict=True):
            for i, name in enumerate(names):
                runs_named = ("ansint", "cxtint") if name == "full" else (name,)
                values = [
                    next((getattr(r, metric) for r in ablation if r.run in runs_named
                          and r.dataset == d and r.variant == v), 0.0)
                    for d, v in groups
                ]  # fmt: skip
                ax.bar([x + i * width for x in range(len(groups))], values, width,
                       label=name.replace("no_", "w/o "))  # fmt: skip
            ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))],
                          [f"{d} (n={n[d]})\n{PRETTY[v][10:-1]}" for d, v in groups],
                          fontsize=7)  # fmt: skip
            ax.set_ylabel(f"{metric.upper()} (%)")
            ax.set_title(f"Ablations, {metric.upper()} (cf. the paper's Figures 4–5)")
        axes[0].legend(fontsize=7)
        written.append(_save(fig, folder / "ablations.png"))

    sweep = grouped["k sweep"]
    if sweep:
        fig, ax = plt.subplots(figsize=(6, 4))
        for dataset, variant in dict.fromkeys((r.dataset, r.variant) for r in sweep):
            curve = sorted((int(r.run[1:]), r.f1) for r in sweep
                           if r.dataset == dataset and r.variant == variant)  # fmt: skip
            ax.plot(*zip(*curve, strict=True), marker="o", label=f"{dataset} {variant}")
        ax.set_xlabel("k seed sentences")
        ax.set_ylabel("F1 (%)")
        ax.set_title("F1 against k (cf. the paper's Figure 7)")
        ax.legend(fontsize=8)
        written.append(_save(fig, folder / "k_sweep.png"))
    return written


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
