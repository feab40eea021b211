"""The kinds of figure a claim rests on, each read from what the repository keeps by the
project's own code: a paired difference between runs (:func:`difference`, ``chainrag
compare``'s), requests a question and gold recall (:func:`requests`, :func:`gold_recall`, the
report's rows), the first sufficiency checks of ChainRAG's walks (:func:`first_checks`), and
the stored probes' and experiments' tables (:func:`judge_table`, :func:`lost_in_retrieval`,
:func:`recurring`). Each returns plain numbers, rounded to :data:`DIGITS`, for the claims
file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chainrag.analysis import compare, compare_runs
from chainrag.report import load_run, rows_of
from chainrag.report.stats import (
    Paired,
    detectable,
    flip_floor,
    floor_needed,
    gain_to_pass,
    paired,
    questions_needed,
    rule_chance,
)
from chainrag.run.files import RunError
from chainrag.run.reading import all_walks, predictions

if TYPE_CHECKING:
    from chainrag.core.types import Usage
    from chainrag.run.record import RunRecord

DIGITS = 4
"""Decimals kept in the claims file: enough for every figure the page shows."""

Figure = dict[str, Any]
"""One figure's numbers, by name."""


def rounded(value: float) -> float:
    return round(float(value), DIGITS)


def of_paired(p: Paired, goal: float | None = None) -> Figure:
    """A paired difference's numbers (F1 in points): the means, the difference, its 95%
    interval, questions better / worse / same, the sign test, the standard deviation of the
    differences and the smallest difference it could detect (``floor``: set by the flip floor,
    not the spread), and with ``goal`` the questions that difference needs."""
    out: Figure = {
        "n": p.n, "base": rounded(p.base), "other": rounded(p.other), "delta": rounded(p.delta),
        "low": rounded(p.low), "high": rounded(p.high), "better": p.better, "worse": p.worse,
        "same": p.same, "sign_p": rounded(p.p_sign),
        "sd": None if p.sd is None else rounded(p.sd),
        "detectable": None if p.detectable is None else rounded(p.detectable),
        "floor": p.floor_binds,
    }  # fmt: skip
    if goal is not None:
        out["goal"] = goal
        out["needed_for_goal"] = p.needed(goal)
        out["could_detect_goal"] = p.detectable is not None and p.detectable <= goal
    return out


def difference(
    root: Path,
    sets: Sequence[str],
    base: str,
    run: str,
    *,
    base_answer: str | None = None,
    answer: str | None = None,
    goal: float | None = None,
) -> Figure:
    """``run`` against ``base`` (run names in each of ``sets``, folders under ``root``, their
    questions pooled), as ``chainrag compare --over ...`` gives it; one pair of answers."""
    found = compare_runs(base, [run], over=[root / s for s in sets], base_answer=base_answer,
                         answer=answer)  # fmt: skip
    [(_, _, p)] = found.rows
    return of_paired(p, goal)


def requests(root: Path, sets: Sequence[str], run: str) -> float:
    """Requests a question (calls and cache hits, as the report counts them), pooled over
    the questions of ``run`` in each of ``sets``."""
    rows = [rows_of(load_run(root / s / run))[0] for s in sets]
    return rounded(sum(r.calls * r.n for r in rows) / sum(r.n for r in rows))


def difference_on(
    base: Path, run: Path, ids: frozenset[str], *, answer: str, base_answer: str | None = None
) -> Figure:
    """The run in folder ``run`` against the one in ``base`` on their questions among ``ids``
    (the questions a third run answered, so that every system of a table is scored on the same
    ones), as ``chainrag compare`` computes a difference; one pair of answers (the base's
    primary one unless ``base_answer`` names another)."""
    records = [[r for r in load_run(f).records if r.id in ids] for f in (base, run)]
    found = compare(*records, base_answer=base_answer, answer=answer)
    if not found:
        raise RunError(f"{run} against {base}: no question in common among the {len(ids)}")
    [p] = found.values()
    return of_paired(p)


def requests_on(folder: Path, ids: frozenset[str]) -> float:
    """Requests a question (calls and cache hits, as the report counts them) of the run in
    ``folder`` over its questions among ``ids`` (the questions another run answered)."""
    requests: float = usage_on(folder, ids)["requests"]
    return requests


def usage_on(folder: Path, ids: frozenset[str], *, leaving_out: str = "") -> Figure:
    """Requests, prompt and completion tokens a question of the run in ``folder`` over its
    questions among ``ids``; those of the prompts whose ids begin with ``leaving_out`` not
    counted, where it is given (HippoRAG's OpenIE, ``openie_``: a passage read once, for every
    question after)."""
    records = [r for r in load_run(folder).records if r.id in ids]
    if not records:
        raise RunError(f"{folder}: none of the {len(ids)} questions asked")
    if leaving_out:
        usage = [u for _, u in by_prompt(records, lambda p: not p.startswith(leaving_out))]
    else:
        usage = [r.usage for r in records]
    n = len(records)
    return {"requests": rounded(sum(u.calls + u.cache_hits for u in usage) / n),
            "prompt_tokens": rounded(sum(u.prompt_tokens for u in usage) / n),
            "completion_tokens": rounded(sum(u.completion_tokens for u in usage) / n)}  # fmt: skip


def openie_usage(folder: Path) -> Figure:
    """HippoRAG's OpenIE over the run in ``folder``: the passages it read (its NER requests,
    calls and cache hits) and the prompt and completion tokens of a passage's two requests."""
    openie = by_prompt(load_run(folder).records, lambda p: p.startswith("openie_"))
    passages = sum(u.calls + u.cache_hits for p, u in openie if p == "openie_ner")
    if not passages:
        raise RunError(f"{folder}: no OpenIE request recorded")
    prompt = sum(u.prompt_tokens for _, u in openie)
    completion = sum(u.completion_tokens for _, u in openie)
    return {"passages": passages, "prompt_tokens": rounded(prompt / passages),
            "completion_tokens": rounded(completion / passages)}  # fmt: skip


def by_prompt(
    records: Sequence[RunRecord], chosen: Callable[[str], bool]
) -> list[tuple[str, Usage]]:
    """Each record's LLM use by prompt id (``trace.usage_by_prompt``), of the prompts
    ``chosen``."""
    return [(p, u) for r in records for p, u in r.trace.usage_by_prompt if chosen(p)]


def distinct_passages(dataset: str, ids: frozenset[str]) -> int:
    """How many distinct passages (HippoRAG's unit: the title, a line break, the text) the
    questions ``ids`` of ``dataset`` hold: what HippoRAG's OpenIE reads, each once."""
    from chainrag.data.datasets import load_dataset

    questions = [q for q in load_dataset(dataset) if q.qid in ids]
    if len(questions) != len(ids):
        raise RunError(f"{dataset}: {len(ids) - len(questions)} of the {len(ids)} questions absent")
    return len({(p.title, p.text) for q in questions for p in q.passages})


def answered(folder: Path) -> frozenset[str]:
    """The ids of the questions the run in ``folder`` answered."""
    return frozenset(r.id for r in load_run(folder).records)


def gold_recall(root: Path, sets: Sequence[str], run: str) -> float:
    """The share of the gold evidence a run read (the report's R@all, %), pooled."""
    rows = [rows_of(load_run(root / s / run))[0] for s in sets]
    return rounded(sum(r.recall["recall@all"] * r.n for r in rows) / sum(r.n for r in rows))


def first_checks(root: Path, sets: Sequence[str], run: str) -> Figure:
    """ChainRAG's walks over ``sets``: the first sufficiency checks and how many said "yes",
    the walks that went past the first hop, and how many of those the word budget cut; and
    every check with its "yes" count (``chainrag walks``'s "checks" and "yes")."""
    walks = [walk for s in sets for walk in all_walks(predictions(root / s / run))]
    first = [w.verdicts[0] for w in walks if w.verdicts and w.verdicts[0].checked]
    checks = [v for w in walks for v in w.verdicts if v.checked]
    went_on = [w for w in walks if w.hops > 1]
    return {"walks": len(walks), "first_checks": len(first),
            "first_yes": sum(1 for v in first if v.ok), "went_on": len(went_on),
            "went_on_cut": sum(1 for w in went_on if w.budget_cut), "checks": len(checks),
            "yes": sum(1 for v in checks if v.ok)}  # fmt: skip


def same_scores(
    root: Path, sets: Sequence[str], runs: tuple[str, str], answers: tuple[str, str]
) -> Figure:
    """How many questions two runs' answers score alike on (F1), pooled over ``sets``."""
    a, b = runs
    x, y = answers
    alike = total = 0
    for s in sets:
        mine = {r.id: r.answers[x].f1 for r in predictions(root / s / a)}
        theirs = {r.id: r.answers[y].f1 for r in predictions(root / s / b)}
        shared = [q for q in mine if q in theirs]
        total += len(shared)
        alike += sum(1 for q in shared if mine[q] == theirs[q])
    return {"n": total, "same": alike}


def better_of(
    root: Path, sets: Sequence[str], run: str, answers: tuple[str, str], goal: float | None = None
) -> Figure:
    """The better of a run's two answers on each question (a bound no choice between them can
    pass: it reads the gold) against the first of them, pooled over ``sets``."""
    first, second = answers
    records = [r for s in sets for r in predictions(root / s / run)]
    base = [r.answers[first].f1 for r in records]
    best = [max(r.answers[first].f1, r.answers[second].f1) for r in records]
    return of_paired(paired(base, best), goal)


def planning(figure: Figure, n: int, goal: float) -> Figure:
    """A next test planned from a stored comparison's spread (``figure``'s SD): what ``n``
    paired questions detect, the chance that they exclude 0 and that they pass the
    pre-registered rule (interval above 0 and estimate at least ``goal``) for a true ``goal``;
    the questions ``goal`` needs to exclude 0 with 80% power, the rule's chance there, and the
    true gain that passes the rule with 80% there (normal approximation, with the flip floor:
    :mod:`chainrag.report.stats`)."""
    sd = figure["sd"]
    needed = max(questions_needed(sd, goal), floor_needed(goal))
    return {
        "sd": sd, "n": n, "detectable": rounded(max(detectable(sd, n), flip_floor(n))),
        "exclude_0_chance": rounded(rule_chance(sd, n, goal, 0.0)),
        "rule_chance": rounded(rule_chance(sd, n, goal, goal)),
        "needed_for_goal": needed,
        "floor_needed_for_goal": floor_needed(goal),
        "rule_chance_at_needed": rounded(rule_chance(sd, needed, goal, goal)),
        "gain_to_pass_at_needed": rounded(gain_to_pass(sd, needed, goal)),
    }  # fmt: skip


def padded(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], unchanged: int, goal: float | None
) -> Figure:
    """A paired difference over questions read in ``pairs`` (base and other F1, 0..1) and
    ``unchanged`` more whose difference is 0 by construction (a rule that cannot fire on
    them), in that order, as scripts/by_rule_from_traces.py pools them."""
    base = [f for b, _ in pairs for f in b] + [0.0] * unchanged
    other = [f for _, o in pairs for f in o] + [0.0] * unchanged
    figure = of_paired(paired(base, other), goal)
    del figure["base"], figure["other"]  # the unchanged questions' scores are not read
    return figure


def choices(
    root: Path, sets: Sequence[str], run: str, *, base: str = "ansint", lean: tuple[float, float]
) -> Figure:
    """How the ``choose`` integrator of ``run`` (first CxtInt, second AnsInt) decided, from
    each answer's pick (:class:`~chainrag.core.types.Pick`, as
    ``components.choosers.Choose`` makes it): questions whose two answers were the same,
    those where one answer is no answer, those decided by the question's form
    (:func:`~chainrag.components.reasoning.answer_form.misfit`:
    yes/no to a question that does not ask
    it, none of the choices an "A or B?" question names), and those asked of the LLM, with
    how often each took AnsInt, how many
    asks gave P(second) within ``lean``, and what the form's AnsInt answers changed against
    ``base``'s CxtInt (questions better, and points over all the questions)."""
    out: Figure = {"questions": 0, "same": 0, "asked": 0, "asked_took_ansint": 0,
                   "asked_within_lean": 0, "no_answer": 0, "no_answer_took_ansint": 0,
                   "form": 0, "form_took_ansint": 0, "form_ansint_better": 0,
                   "form_ansint_points": 0.0}  # fmt: skip
    gained = 0.0
    for s in sets:
        cxtint = {r.id: r.answers["cxtint"].f1 for r in predictions(root / s / base)}
        for record in predictions(root / s / run):
            picks = record.trace.answers[0].answer.picks
            if not picks:
                raise RunError(f"{root / s / run}: {record.id}'s answer was not picked by choose")
            pick = picks[0]
            took = pick.took == "second"
            out["questions"] += 1
            if pick.by == "same":
                out["same"] += 1
            elif pick.by == "llm":
                out["asked"] += 1
                out["asked_took_ansint"] += took
                p_second = pick.p_second
                out["asked_within_lean"] += p_second is not None and lean[0] <= p_second <= lean[1]
            elif pick.misfit == "no answer":
                out["no_answer"] += 1
                out["no_answer_took_ansint"] += took
            else:
                out["form"] += 1
                out["form_took_ansint"] += took
                if took:
                    change = record.answers["choose"].f1 - cxtint[record.id]
                    out["form_ansint_better"] += change > 0
                    gained += change
    out["form_ansint_points"] = rounded(100 * gained / max(1, out["questions"]))
    return out


def judge_table(folder: Path) -> dict[str, Figure]:
    """A stored judge-steps probe's table (``chainrag experiment judge-steps``), recomputed
    from its probes: each judge's ROC AUC with its interval, and its yes-rates on insufficient
    and sufficient evidence at the threshold chosen on the training questions."""
    from chainrag.experiments.judge_steps import StepProbe
    from chainrag.experiments.judge_steps_table import rows

    probes = [StepProbe(**{**line, "paragraphs": tuple(line["paragraphs"])})
              for line in _lines(folder / "probes.jsonl")]  # fmt: skip
    measured = [p for p in probes if not p.split.endswith("_train")]
    train = [p for p in probes if p.split.endswith("_train")]
    return {r.judge: {"auc": rounded(r.auc), "low": rounded(r.interval[0]),
                      "high": rounded(r.interval[1]),
                      "yes_insufficient": rounded(r.yes_insufficient),
                      "yes_sufficient": rounded(r.yes_sufficient)}
            for r in rows(measured, train)}  # fmt: skip


def lost_in_retrieval(folder: Path) -> Figure:
    """A stored lost-in-retrieval probe (``chainrag experiment lost-in-retrieval``): Recall@2
    of the first step, of the second with a pronoun phrase for the first answer, and with the
    answer put back (%)."""
    hits = [line["hits"] for line in _lines(folder / "probes.jsonl")]
    step1, pronoun, answer = (rounded(100 * sum(h[i] for h in hits) / len(hits)) for i in range(3))
    return {"questions": len(hits), "step1": step1, "pronoun": pronoun, "answer": answer,
            "lost": rounded(step1 - pronoun), "recovered": rounded(answer - pronoun)}  # fmt: skip


def recurring(folder: Path) -> Figure:
    """A stored recurring-question experiment: the time the reservoir saves on questions asked
    again and paraphrased (%), and the F1 change, from its outcomes."""
    from chainrag.experiments import recurring as rec

    outcomes = rec.outcomes_in(folder)
    by = {r.phase: r for r in rec.summary(outcomes)}
    out: Figure = {"questions": by["first ask (fills the reservoir)"].n}
    for kind in ("asked again", "paraphrased"):
        on, off = by[f"{kind}, with the reservoir"], by[f"{kind}, no reservoir"]
        key = kind.replace(" ", "_")
        out[f"{key}_time_saved"] = rounded(100 * (off.seconds - on.seconds) / off.seconds)
        out[f"{key}_f1_change"] = rounded(on.f1 - off.f1)
    return out


def stored_json(path: Path, *keys: str) -> Any:
    """A value inside a stored JSON report (an adapter's, a reranker's), by its keys."""
    found: Any = json.loads(path.read_text(encoding="utf-8"))
    for key in keys:
        found = found[key]
    return found


def _lines(path: Path) -> list[Mapping[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
