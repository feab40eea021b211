"""The rows the report prints of stored runs (read by :mod:`chainrag.run.reading`, whose
``Run``, ``load_run`` and ``find_runs`` this module's names are): one per answer variant of a
run, averaged over its questions, F1 and EM with their 95% bootstrap intervals; the
comparisons (tables) they fall into; each row's paired difference from a baseline's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from chainrag.report.paper import ABLATION_LABELS
from chainrag.report.stats import Interval, Paired, interval, paired
from chainrag.run.files import RunError
from chainrag.run.reading import Run as Run
from chainrag.run.reading import answer_f1 as answer_f1
from chainrag.run.reading import find_runs as find_runs
from chainrag.run.reading import load_run as load_run
from chainrag.run.reading import variants_of as variants_of
from chainrag.run.record import RunRecord

PRETTY = {
    "ansint": "ChainRAG (AnsInt)",
    "cxtint": "ChainRAG (CxtInt)",
    "formchecked": "ChainRAG (form-checked)",
    "naive": "NaiveRAG",
    "naive_qd": "NaiveRAG w/ QD",
    "iter_retgen": "Iter-RetGen",
    "longrag": "LongRAG",
    "hipporag_ircot": "HippoRAG w/ IRCoT",
    "hipporag": "HippoRAG (one step)",
    "ircot": "IRCoT",
    "naive_iteration": "Naive iteration (Patwa et al.)",
    "guided_iteration": "Guided iteration (Patwa et al.)",
    "tree": "Tree retrieval (Patwa et al.)",
    "four_module": "Four modules (Shi et al.)",
}
MAIN_RECIPES = {"ansint", "cxtint", "naive", "naive_qd", "iter_retgen", "longrag",
                "hipporag_ircot", "hipporag", "ircot", "naive_iteration", "guided_iteration",
                "tree", "four_module"}  # fmt: skip
SEED_LABELS = {"vanilla": "Vanilla RAG, 4 passages (Patwa et al.)",
               "vanilla_10": "Vanilla RAG, 10 passages (Patwa et al.)",
               "three_module": "Three modules, no reservoir (Shi et al.)",
               "three_module_helps": "Three modules, yes/no filter (not Shi et al.'s)"}  # fmt: skip

ABLATIONS = tuple(name for name in ABLATION_LABELS if name != "full")
K_SWEEP = ("k1", "k2", "k3", "k4", "k5")


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
    f1_ci: Interval
    """The 95% bootstrap interval of ``f1`` (:func:`chainrag.report.stats.interval`)."""
    em_ci: Interval
    recall: dict[str, float]
    calls: float
    tokens: float
    cost: float | None
    seconds: float
    by_type: dict[str, tuple[int, float]] = attrs.field(factory=dict)
    """Question type -> (questions, F1 in %), from each record's ``question_type``."""
    encoders: dict[str, float] = attrs.field(factory=dict)
    """The remote encoders' work a question by stage (:func:`encoder_work`): embedding tokens
    sent (``embed passages``, ``embed queries``) and rerank searches (``rerank``); empty for a
    run whose records hold none."""


def encoder_work(records: Sequence[RunRecord]) -> dict[str, float]:
    """The remote encoders' work a question by stage, over ``records``: the embedding tokens an
    embedding stage sent, the searches the ``rerank`` stage made (a question without the stage
    counts 0; a value the store held costs none); only the stages some record holds."""
    totals: dict[str, float] = {}
    for record in records:
        for stage, usage in record.trace.encoder_usage:
            work = usage.searches if stage == "rerank" else usage.tokens
            totals[stage] = totals.get(stage, 0.0) + work
    return {stage: totals[stage] / len(records) for stage in sorted(totals)}


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
        f1s, ems = [s.f1 for s in scored], [s.em for s in scored]
        out.append(
            Row(label, run.name, variant, run.dataset, run.llm, len(scored), run.failed,
                100 * _mean(f1s), 100 * _mean(ems), interval(f1s), interval(ems),
                recall, calls, tokens, cost, seconds, f1_by_type(records, variant),
                encoder_work(records))
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


@attrs.frozen
class Against:
    """An answer of a run paired with the baseline's answer it is compared with, on the
    questions both answered (F1)."""

    run: str
    variant: str
    base_variant: str
    paired: Paired


def against(runs: Sequence[Run], baseline: str) -> list[Against]:
    """Each answer of ``runs`` against the baseline run's (the first run named ``baseline``):
    the baseline's answer of the same variant, else its primary one; never an answer against
    itself, nor on no shared question. Empty when no run of ``runs`` is named ``baseline``."""
    base = next((run for run in runs if run.name == baseline and run.records), None)
    if base is None:
        return []
    base_variants = variants_of(base)
    out = []
    for run in runs:
        for variant in variants_of(run):
            to = variant if variant in base_variants and run is not base else base_variants[0]
            if run is base and variant == to:
                continue
            mine, theirs = answer_f1(run, variant), answer_f1(base, to)
            shared = [q for q in theirs if q in mine]
            if shared:
                scores = paired([theirs[q] for q in shared], [mine[q] for q in shared])
                out.append(Against(run.name, variant, to, scores))
    return out


def check_baselines(runs: Sequence[Run], baselines: Sequence[str]) -> None:
    """Raise a RunError for a baseline name no run has, listing the runs' names."""
    names = sorted({run.name for run in runs})
    for name in baselines:
        if name not in names:
            raise RunError(
                f"baseline {name!r}: no run of that name among these runs "
                f"(their names: {', '.join(names) or 'none'})"
            )
