"""The report's markdown: a table per dataset and comparison beside the paper's (see
:mod:`chainrag.report`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from chainrag.report.paper import ABLATION_LABELS, ablations, table_1
from chainrag.report.runs import against, check_baselines, comparisons, rows_of
from chainrag.report.stats import (
    ALPHA,
    FLIP,
    POWER,
    RESAMPLES,
    SEED,
    Interval,
    flip_floor,
    least_changes,
    z_values,
)
from chainrag.run.files import RunError

if TYPE_CHECKING:
    from chainrag.report.runs import Against, Comparison, Row, Run
    from chainrag.report.stats import Paired


def _labels(rows: Sequence[Row]) -> list[str]:
    """Each row's label; a label seen before gets its run's name too."""
    labels, seen = [], set()
    for row in rows:
        labels.append(row.label if row.label not in seen else f"{row.label} ({row.run})")
        seen.add(row.label)
    return labels


def _fmt(value: float, digits: int = 2) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def _with_interval(value: float, spread: Interval) -> str:
    """``41.94 [28.1, 56.2]``: a mean and its 95% interval."""
    return f"{_fmt(value)} [{_fmt(spread.low, 1)}, {_fmt(spread.high, 1)}]"


def dataset_table(rows: Sequence[Row], *, paper: bool = True) -> str:
    """Our rows for one dataset as a markdown table, then (``paper``) the paper's rows for it."""
    recall_keys = list(dict.fromkeys(k for r in rows for k in r.recall))
    head = ["method", "LLM", "n", "F1 [95%]", "EM [95%]",
            *(k.replace("recall", "R").replace("hit", "Hit") for k in recall_keys),
            "calls/q", "tokens/q", "s/q"]  # fmt: skip
    stages = list(dict.fromkeys(s for r in rows for s in r.encoders))  # remote encoders' work
    head[-1:-1] = [ENCODER_HEADS.get(s, f"{s}/q") for s in stages]
    priced = any(r.cost for r in rows)  # local models cost 0: no column for them
    if priced:
        head.insert(-1, "USD/q")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row, label in zip(rows, _labels(rows), strict=True):
        n = f"{row.n}" + (f" (+{row.failed} failed)" if row.failed else "")
        cells = [label, row.llm, n, _with_interval(row.f1, row.f1_ci),
                 _with_interval(row.em, row.em_ci),
                 *(_fmt(row.recall.get(k, math.nan), 1) for k in recall_keys),
                 _fmt(row.calls, 1), _fmt(row.tokens, 0),
                 *(_encoder_cell(row, s) for s in stages), _fmt(row.seconds, 1)]  # fmt: skip
        if priced:
            cells.insert(-1, "–" if row.cost is None else f"{row.cost:.5f}")
        lines.append("| " + " | ".join(cells) + " |")
    if paper and (reference := paper_table(rows[0].dataset if rows else "")):
        lines += ["", reference]
    return "\n".join(lines)


ENCODER_HEADS = {"embed passages": "passage emb. tokens/q", "embed queries": "query emb. tokens/q",
                 "rerank": "rerank searches/q"}  # fmt: skip
"""The column of a remote encoder's stage (:attr:`~chainrag.report.runs.Row.encoders`)."""


def _encoder_cell(row: Row, stage: str) -> str:
    """A row's work a question in ``stage``; "–" where its run has no such encoder."""
    if stage not in row.encoders:
        return "–"
    return _fmt(row.encoders[stage], 1 if stage == "rerank" else 0)


def paper_table(dataset: str) -> str:
    """The paper's Table 1 rows for one dataset as a reference table ("" when it has none)."""
    reference = table_1()
    methods = list(dict.fromkeys(m for table in reference.values() for m in table))
    llms = list(reference)
    if not any(dataset in reference[llm].get(m, {}) for llm in llms for m in methods):
        return ""
    lines = ["For reference, **the paper's Table 1** (F1 / EM; not measured here: 200 "
             "LongBench questions, other LLMs and embedder, bge-reranker):", "",
             "| method (paper) | " + " | ".join(llms) + " |",
             "|---" * (len(llms) + 1) + "|"]  # fmt: skip
    for method in methods:
        cells = []
        for llm in llms:
            f1, em = reference[llm].get(method, {}).get(dataset, (math.nan, math.nan))
            cells.append(f"{_fmt(f1)} / {_fmt(em)}")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


NOISE = "†"
"""Marks a difference whose 95% interval spans 0: not beyond noise."""


def power_heads(detect: float | None) -> list[str]:
    """The power columns' heads: the detectable difference, and with ``detect`` the
    questions it needs."""
    return ["detectable Δ (80%)"] + ([] if detect is None else [f"n for Δ {detect:g}"])


FLOOR = "‡"
"""Marks a detectable difference set by the flip floor, not by the spread of the differences."""


def power_cells(p: Paired, detect: float | None) -> list[str]:
    """A paired difference's power cells (:func:`power_heads`): the smallest difference it
    detects at its n (:data:`FLOOR` where the flip floor sets it), and with ``detect`` the
    paired questions that difference needs; "–" at n = 1."""
    found = p.detectable
    cells = ["–" if found is None else f"{found:.1f}" + (f" {FLOOR}" if p.floor_binds else "")]
    if detect is not None:
        needed = p.needed(detect)
        cells.append("–" if needed is None else f"{needed:,}")
    return cells


def power_legend(detect: float | None) -> str:
    """What the power columns mean, and how they are computed."""
    z = "({:.2f} + {:.2f})".format(*z_values())
    return (
        f"detectable Δ: the smallest true difference these questions detect with "
        f"{POWER:.0%} power at two-sided {ALPHA:.0%}, the larger of {z} × SD of the paired "
        f"differences / √n and the flip floor ({FLOOR} where the floor is the larger): the "
        f"difference at which, with answers flipping by {FLIP:.0f} points all the same way, "
        f"enough of them flip for the interval to leave 0 out ({least_changes(1000)} from 9 "
        f"questions on) with {POWER:.0%} chance — {flip_floor(30):.1f} points at n = 30, "
        f"{flip_floor(90):.1f} at 90, however small the SD (a smaller difference may be real and "
        "go unseen; – at n = 1)"
        + ("" if detect is None else
           f"; n for Δ {detect:g}: the paired questions a true difference of {detect:g} points "
           f"needs, the larger of ({z} × SD / {detect:g})², rounded up, and the fewest whose "
           "flip floor is at most that")
        + "."
    )  # fmt: skip


def check_detect(detect: float | None) -> None:
    """Raise a RunError for a difference to detect that is not above 0."""
    if detect is not None and not detect > 0:
        raise RunError(f"the difference to detect must be above 0 points, got {detect:g}")


def against_table(
    rows: Sequence[Row], found: Sequence[Against], baseline: str, detect: float | None = None
) -> str:
    """Each row's paired F1 difference from the baseline's answer it is compared with (see
    :func:`~chainrag.report.runs.against`) with its power (:func:`power_cells`), a legend
    under the table ("" without any)."""
    if not found:
        return ""
    labels: dict[tuple[str, str], str] = {}
    for row, label in zip(rows, _labels(rows), strict=True):
        labels.setdefault((row.run, row.variant), label)
    heads = ["method", "against", "n", "Δ F1 [95%]", *power_heads(detect),
             "better / worse / same", "sign test p"]  # fmt: skip
    lines = [f"Paired differences against the baseline, `{baseline}`:", "",
             "| " + " | ".join(heads) + " |", "|---" * len(heads) + "|"]  # fmt: skip
    for a in found:
        p = a.paired
        mark = f" {NOISE}" if not p.beyond_noise else ""
        cells = [labels[(a.run, a.variant)], labels[(baseline, a.base_variant)], str(p.n),
                 f"{p.delta:+.2f} [{p.low:+.1f}, {p.high:+.1f}]{mark}",
                 *power_cells(p, detect), f"{p.better} / {p.worse} / {p.same}",
                 f"{p.p_sign:.3f}"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    legend = (
        f"Δ F1 = the method's F1 − the baseline's, in points, on the questions both answered; "
        f"[95%]: {RESAMPLES:,} paired bootstrap resamples (seed {SEED}); better / worse / same: "
        "questions; p: two-sided exact sign test over the questions that changed. "
        f"{NOISE} the interval spans 0: not beyond noise. {power_legend(detect)}"
    )
    lines += ["", legend]
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
    """One table in the layout of the paper's Table 1: a row per method, F1 (with its
    interval) / EM per dataset ("" when the rows cover fewer than two datasets)."""
    if len(by_dataset) < 2:
        return ""
    cells: dict[str, dict[str, str]] = {}
    for dataset, rows in by_dataset.items():
        for row in rows:
            cells.setdefault(row.label, {}).setdefault(
                dataset, f"{_with_interval(row.f1, row.f1_ci)} / {_fmt(row.em)} ({row.n})"
            )
    datasets = list(by_dataset)
    lines = ["| method | " + " | ".join(f"{d} F1 [95%] / EM (n)" for d in datasets) + " |",
             "|---" * (len(datasets) + 1) + "|"]  # fmt: skip
    for label, of_label in cells.items():
        lines.append(f"| {label} | " + " | ".join(of_label.get(d, "–") for d in datasets) + " |")
    return "\n".join(lines)


def paper_ablations(dataset: str) -> str:
    """The paper's Tables 7–8 for one dataset as a reference table (F1 / EM, GPT-4o-mini),
    an ablation a row, AnsInt and CxtInt side by side; empty for a dataset it has no
    figures for."""
    reference = ablations()
    if dataset not in reference[("ansint", "full")]:
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
            f1, em = reference[(variant, run)][dataset]
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


def _section(dataset: str, tables: Sequence[tuple[Comparison, list[Row]]],
             baselines: Sequence[str], detect: float | None) -> str:  # fmt: skip
    """One dataset's section: the methods' table, then the ablations' and the k sweep's, each
    with its differences from the first of ``baselines`` that ran on the dataset."""
    names = {run.name for t, _ in tables for run in t.runs}
    baseline = next((b for b in baselines if b in names), None)
    parts = [f"## {dataset}"]
    for t, rows in tables:
        note = _common_note(t, rows[0].n)
        diffs = against_table(rows, against(t.runs, baseline), baseline, detect) if baseline else ""
        if t.group == "main":
            parts += [f"{note}{dataset_table(rows, paper=False)}", diffs, paper_table(dataset)]
            if types := type_table(rows):
                parts.append(f"F1 by the dataset's question type:\n\n{types}")
        else:
            title = ("Ablations (cf. the paper's Figures 4–5)" if t.group == "ablations"
                     else "k seed sentences (cf. the paper's Figure 7)")  # fmt: skip
            parts += [f"### {dataset}: {title}\n\n{note}{dataset_table(rows, paper=False)}", diffs]
            if t.group == "ablations":
                parts.append(paper_ablations(dataset))
    if baselines and baseline is None:
        parts.append(f"No paired differences: no run here is named {' or '.join(baselines)}.")
    return "\n\n".join(part for part in parts if part)


def markdown(
    runs: Sequence[Run],
    *,
    common: bool = True,
    baselines: Sequence[str] = (),
    detect: float | None = None,
) -> str:
    """The whole report: one section per dataset — the methods' table, then the ablations'
    and the k sweep's where such runs exist. With ``common``, every row of a table is scored
    on the questions all its runs answered (a note says when that drops some). With
    ``baselines`` (recipe names), each table holding the first of them that ran on its dataset
    is followed by every other answer's paired difference from it, with the smallest
    difference it could detect and, with ``detect`` (points), the questions that needs.

    Raises:
        RunError: a name in ``baselines`` is no run's.
        RunError: ``detect`` is not above 0.
    """
    check_baselines(runs, baselines)
    check_detect(detect)
    tables = [(t, [row for run in t.runs for row in rows_of(run)]) for t in comparisons(
        runs, common=common)]  # fmt: skip
    tables = [(t, rows) for t, rows in tables if rows]
    if not tables:
        return "No finished questions in these runs yet."
    sections = [
        "Rates in %; [95%] = the 95% bootstrap interval of the mean over the questions "
        f"({RESAMPLES:,} resamples, seed {SEED}); calls, tokens and seconds per question; R@k = "
        "recall of the gold evidence "
        "in the first k units retrieved (paragraphs on MuSiQue, sentences on HotpotQA/2Wiki); "
        "Hit@4 = all of it in the first 4 (strict, as Patwa et al.); "
        "Hit@10 the same in the first 10 "
        "(read tree retrieval, whose context holds up to 9 passages, there)."
        + (" DATASET@CORPUS: over a shared corpus index, R@k counts gold paragraphs by title."
           if any("@" in t.dataset for t, _ in tables) else "")
        + (" Emb. tokens/q and rerank searches/q: the remote encoders' work a question by stage,"
           " as sent to the provider (a vector or score the store held costs none)."
           if any(r.encoders for _, rows in tables for r in rows) else "")
    ]  # fmt: skip
    main = {t.dataset: rows for t, rows in tables if t.group == "main"}
    if table := across_datasets(main):
        sections.append(f"## Across datasets\n\n{table}")
    for dataset in dict.fromkeys(t.dataset for t, _ in tables):
        mine = [(t, rows) for t, rows in tables if t.dataset == dataset]
        sections.append(_section(dataset, mine, baselines, detect))
    return "\n\n".join(sections) + "\n"
