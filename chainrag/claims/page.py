"""The figures of docs/results.md's claims, one function per claim, each computed from the
run folders, probes and reports the repository keeps (:mod:`chainrag.claims.figures`).

Run names are those of ``docs/runs/SET/NAME``; "the three long sets" are the 30 dev
questions of each of long:musique, long:2wiki and long:hotpotqa (LongBench-length contexts).
Figures of the papers and of the final test on held-out files, which the repository does not
hold, are not here: the page marks them as such.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chainrag.claims.figures import (
    Figure,
    answered,
    better_of,
    choices,
    difference,
    difference_on,
    distinct_passages,
    first_checks,
    gold_recall,
    judge_table,
    lost_in_retrieval,
    openie_usage,
    padded,
    planning,
    recurring,
    requests,
    requests_on,
    rounded,
    same_scores,
    stored_json,
    usage_on,
)
from chainrag.report.stats import flip_floor, floor_needed, least_changes
from chainrag.run.reading import predictions

LONG = ("long-musique", "long-2wiki", "long-hotpotqa")
"""The three long dev sets, 30 questions each."""
GOAL = 3.0
"""The gain in F1 points the recipes of ours were to reach over paper-faithful ChainRAG."""
TRAIN_60 = (
    "long-musique-musique_train-30-45",
    "long-musique-musique_train-45-60",
    "long-hotpotqa-hotpotqa_train-30-45",
    "long-hotpotqa-hotpotqa_train-45-60",
)
"""MuSiQue's and HotpotQA's training questions 31–60, at LongBench length."""
WIKI_31_82 = ("long-2wiki-30-60", "long-2wiki-60-82")
"""long:2wiki's dev questions 31–82, which no training file holds."""
FROZEN = "one_hop_choose_probabilities"
FINAL_TEST_N = 36
"""The questions of the frozen recipe's final test (12 of each held-out file): its figures
are not here (the repository does not hold the files), what it could detect is."""
PLANNED_FROM = (f"{FROZEN}_vs_cxtint", "one_hop_choose_verify_margin_vs_cxtint")
"""The stored comparisons whose spread plans a next test: the frozen recipe against ChainRAG's
CxtInt on the 90 dev questions (the widest spread of the recipes tried against it), and the
narrowest, ``one_hop_choose_verify_margin``'s."""


def _runs(root: Path) -> Path:
    return root / "docs" / "runs"


def lost(root: Path) -> Figure:
    """1. Lost in retrieval at LongBench length."""
    return lost_in_retrieval(root / "docs" / "probes" / "lost-in-retrieval-long-musique")


def baselines(root: Path) -> Figure:
    """2–4. ChainRAG against NaiveRAG, NaiveRAG w/ QD and Iter-RetGen (its CxtInt, pooled
    and per set), and its two integrations against each other per set."""
    runs = _runs(root)
    out: Figure = {}
    for base in ("naive", "naive_qd", "iter_retgen"):
        out[f"cxtint_vs_{base}"] = difference(runs, LONG, base, "ansint", answer="cxtint")
        for s in LONG:
            out[f"cxtint_vs_{base}@{s}"] = difference(runs, [s], base, "ansint", answer="cxtint")
            out[f"ansint_vs_{base}@{s}"] = difference(runs, [s], base, "ansint", answer="ansint")
    for s in LONG:
        out[f"cxtint_vs_ansint@{s}"] = difference(
            runs, [s], "ansint", "ansint", base_answer="ansint", answer="cxtint"
        )
    return out


def walk_and_ablations(root: Path) -> Figure:
    """5–7. The walk's first checks, the k sweep and the ablations on long:musique (each
    against paper-faithful ChainRAG, both integrations, with the gold evidence each read), and
    the authors' code's ChainRAG on each set."""
    runs = _runs(root)
    out: Figure = {
        "first_checks": first_checks(runs, LONG, "ansint"),
        "gold_recall@ansint": gold_recall(runs, ["long-musique"], "ansint"),
    }
    for run in ("k1", "k2", "k4", "k5", "no_graph", "no_ss", "no_ec", "no_rewrite", "no_sa"):
        for answer in ("ansint", "cxtint"):
            out[f"{run}_{answer}"] = difference(
                runs, ["long-musique"], "ansint", run, base_answer=answer, answer=answer
            )
        out[f"gold_recall@{run}"] = gold_recall(runs, ["long-musique"], run)
    for s in LONG:
        out[f"authors_code_cxtint@{s}"] = difference(
            runs, [s], "ansint", "authors_code", base_answer="cxtint", answer="cxtint"
        )
    return out


UNREAD = ("musique[60:90]", "hotpotqa[60:61]", "hotpotqa[62:67]", "hotpotqa[68:74]",
          "hotpotqa[75:90]")  # fmt: skip
"""The held-out questions of claim 8 that no run holds, as their dev sets' slices (the long
sets pad the same questions)."""


def unread(datasets: Sequence[str]) -> int:
    """How many questions ``datasets`` hold, each checked to be no two-choice comparison the
    rule reads (so its answer is the paper's and the difference 0); a ValueError names one that
    is."""
    from chainrag.components.reasoning.comparisons import parse_comparison
    from chainrag.data.datasets import load_dataset

    count = 0
    for name in datasets:
        questions = load_dataset(name)
        if read := [q.question for q in questions if parse_comparison(q.question) is not None]:
            raise ValueError(f"{name}: the rule may decide {read[0]!r}: run it instead")
        count += len(questions)
    return count


def rule(root: Path) -> Figure:
    """8. ``compare_roles_by_rule`` on its 82 held-out questions against paper-faithful
    CxtInt: the 25 questions run (long:2wiki 61–82, long:hotpotqa 62, 68, 75) and the 57
    neither rule reads (long:musique 61–90, long:hotpotqa's other 27: :data:`UNREAD`, each
    checked by :func:`unread`), whose difference is 0."""
    runs = _runs(root)
    held = ["long-2wiki-60-82", "long-hotpotqa-61-62", "long-hotpotqa-67-68", "long-hotpotqa-74-75"]
    pairs = []
    for s in held:
        made = {
            r.id: r.answers["byrule"].f1 for r in predictions(runs / s / "compare_roles_by_rule")
        }
        base = predictions(runs / s / "ansint")
        pairs.append(([r.answers["cxtint"].f1 for r in base], [made[r.id] for r in base]))
    return {
        "pooled_82": padded(pairs, unread(UNREAD), GOAL),
        "long-2wiki-60-82": difference(
            runs,
            ["long-2wiki-60-82"],
            "ansint",
            "compare_roles_by_rule",
            base_answer="cxtint",
            answer="byrule",
        ),
    }


def cheaper(root: Path) -> Figure:
    """9 and 14. Fewer requests at the same answers: no sufficiency check (``one_hop``), a
    judge that answers (``judge_answers``), the seeds asked first (``seeds_first``), and no
    check nor AnsInt (``one_hop_cxtint``), against paper-faithful ChainRAG pooled."""
    runs = _runs(root)
    out: Figure = {"requests@ansint": requests(runs, LONG, "ansint")}
    for run in ("one_hop", "judge_answers", "seeds_first", "one_hop_cxtint"):
        out[f"requests@{run}"] = requests(runs, LONG, run)
    for run in ("one_hop", "judge_answers"):
        for answer in ("ansint", "cxtint"):
            out[f"same_{answer}@{run}"] = same_scores(runs, LONG, ("ansint", run), (answer, answer))
            out[f"{run}_{answer}"] = difference(
                runs, LONG, "ansint", run, base_answer=answer, answer=answer
            )
    out["seeds_first_cxtint"] = difference(
        runs, LONG, "ansint", "seeds_first", base_answer="cxtint", answer="cxtint"
    )
    out["same_cxtint@one_hop_cxtint"] = same_scores(
        runs, LONG, ("one_hop", "one_hop_cxtint"), ("cxtint", "cxtint")
    )
    for answer in ("cxtint", "ansint"):
        out[f"one_hop_cxtint_vs_{answer}"] = difference(
            runs, LONG, "ansint", "one_hop_cxtint", base_answer=answer, answer="cxtint"
        )
    return out


def patwa(root: Path) -> Figure:
    """10. Patwa et al.'s methods on the pooled dev sets against vanilla RAG; the linear
    adapter's strict Hit@K against the base embedder's; the distilled reranker's."""
    runs = _runs(root)
    pooled = ("pooled-musique", "pooled-2wiki", "pooled-hotpotqa")
    out: Figure = {}
    for run in ("naive_iteration", "tree", "guided_iteration"):
        out[f"{run}_vs_vanilla"] = difference(runs, pooled, "vanilla", run)
        for s in pooled:
            out[f"{run}_vs_vanilla@{s}"] = difference(runs, [s], "vanilla", run)
    adapter = root / "docs" / "adapters" / "minilm_hipporag.json"
    hits = stored_json(adapter, "strict_hit")
    moves = [100 * (by["adapted"][k] - by["base"][k]) for by in hits.values() for k in by["base"]]
    out["adapter_hit_change"] = {"least": rounded(min(moves)), "most": rounded(max(moves))}
    metrics = stored_json(root / "docs" / "rerankers" / "student_gold.json", "metrics")
    out["reranker_hit2"] = {
        name: rounded(100 * metrics[key]["hit@2"])
        for name, key in (
            ("dense", "none (dense order)"),
            ("student", "student"),
            ("teacher", "teacher"),
        )
    }
    return out


def reservoir(root: Path) -> Figure:
    """11. Shi et al.'s knowledge reservoir on questions asked again."""
    return recurring(_runs(root) / "recurring-musique")


def judge(root: Path) -> Figure:
    """13. The sufficiency judges probed step by step (two and eight paragraphs; similarity
    per paragraph and per sentence), and judges that send walks on, in the walk."""
    probes = root / "docs" / "probes"
    runs = _runs(root)
    out: Figure = {
        "probe_2_paragraphs": judge_table(probes / "judge-steps-musique"),
        "probe_8_paragraphs": judge_table(probes / "judge-steps-musique-p8"),
        "probe_8_paragraphs_sentences": judge_table(probes / "judge-steps-musique-p8-s"),
        "walks@yes_probability_judge_p8": first_checks(
            runs, ["long-musique"], "yes_probability_judge_p8"
        ),
        "yes_probability_judge_p8_cxtint": difference(
            runs,
            ["long-musique"],
            "ansint",
            "yes_probability_judge_p8",
            base_answer="cxtint",
            answer="cxtint",
        ),
        "walks@similarity_judge": first_checks(runs, ["long-musique"], "similarity_judge"),
        "walks@similarity_judge_pooled": first_checks(runs, LONG, "similarity_judge"),
        "requests@similarity_judge": requests(runs, LONG, "similarity_judge"),
    }
    for answer in ("cxtint", "ansint"):
        out[f"similarity_judge_{answer}"] = difference(
            runs, LONG, "ansint", "similarity_judge", base_answer=answer, answer=answer
        )
    out["gold_recall@similarity_judge"] = gold_recall(runs, ["long-musique"], "similarity_judge")
    for run in ("no_ss", "no_ec", "k1", "k2", "k4", "k5"):
        for answer in ("ansint", "cxtint"):
            out[f"{run}_similarity_{answer}"] = difference(
                runs,
                ["long-musique"],
                "similarity_judge",
                f"{run}_similarity",
                base_answer=answer,
                answer=answer,
            )
        out[f"gold_recall@{run}_similarity"] = gold_recall(
            runs, ["long-musique"], f"{run}_similarity"
        )
    return out


def frozen(root: Path) -> Figure:
    """15. The frozen recipe and the choices tried after it, against paper-faithful
    ChainRAG: on the 90 dev questions, on 60 training questions none was chosen on, on
    long:2wiki's questions 31–82, and those two pooled."""
    runs = _runs(root)
    out: Figure = {"requests@ansint": requests(runs, LONG, "ansint")}
    for run in (
        FROZEN,
        "one_hop_choose_verify",
        "one_hop_choose_verify_margin",
        "one_hop_choose_verify_calibrated_margin",
    ):
        out[f"{run}_vs_cxtint"] = difference(
            runs, LONG, "ansint", run, base_answer="cxtint", answer="choose", goal=GOAL
        )
        out[f"requests@{run}"] = requests(runs, LONG, run)
    for base_answer in ("ansint", "best"):
        out[f"{FROZEN}_vs_{base_answer}"] = difference(
            runs, LONG, "ansint", FROZEN, base_answer=base_answer, answer="choose", goal=GOAL
        )
    further = (*TRAIN_60, *WIKI_31_82)
    for name, sets in (
        ("train_60", TRAIN_60),
        ("wiki_31_82", WIKI_31_82),
        ("further_112", further),
    ):
        for base_answer in ("cxtint", "ansint"):
            out[f"{name}_vs_{base_answer}"] = difference(
                runs, sets, "ansint", FROZEN, base_answer=base_answer, answer="choose", goal=GOAL
            )
        out[f"{name}_requests@ansint"] = requests(runs, sets, "ansint")
        out[f"{name}_requests@{FROZEN}"] = requests(runs, sets, FROZEN)
    out["best_of_two_vs_cxtint"] = better_of(runs, LONG, "ansint", ("cxtint", "ansint"))
    for name in PLANNED_FROM:
        out[f"planning@{name}"] = {
            "sd_from": f"frozen.{name}",
            **planning(out[name], FINAL_TEST_N, GOAL),
        }
    out |= frozen_choices(runs, further)
    out["train_60_margin_vs_cxtint"] = difference(
        runs,
        TRAIN_60,
        "ansint",
        "one_hop_choose_verify_margin",
        base_answer="cxtint",
        answer="choose",
    )
    return out


def frozen_choices(runs: Path, further: Sequence[str]) -> Figure:
    """Claim 15's choices of the frozen recipe (which answer it took, and how far its verify
    leaned) on the dev questions, on each of their sets, and on the further 112."""
    lean = (0.48, 0.53)
    out: Figure = {"choices@dev": choices(runs, LONG, FROZEN, lean=lean)}
    for s in LONG:
        out[f"choices@{s}"] = choices(runs, [s], FROZEN, lean=lean)
    out["choices@further_112"] = choices(runs, further, FROZEN, lean=lean)
    return out


TABLE_1 = ("naive", "naive_qd", "iter_retgen", "longrag")
"""The systems of ChainRAG's Table 1 run on long:musique beside ChainRAG (``ansint``, which
holds both integrations); LongRAG's run holds that set's first 20 questions, the others 30."""

TABLE_1_OWN = ("naive", "naive_qd", "iter_retgen", "hipporag", "hipporag_ircot")
"""Those run in musique's own setting (20 paragraphs a question) beside ChainRAG: the two
HippoRAG runs (one step, and w/ IRCoT) hold that set's first 20 questions, the others 30."""


def table_1(root: Path) -> Figure:
    """16. Table 1's systems on the questions LongRAG answered (long:musique's first 20), and
    in musique's own setting on those HippoRAG w/ IRCoT answered (``@musique``): each against
    ChainRAG's CxtInt and AnsInt, paired, and each one's requests a question there (the
    paper's Figure 6)."""
    long_setting = _runs(root) / "long-musique"
    out = systems_against_chainrag(long_setting, answered(long_setting / "longrag"), TABLE_1)
    own_setting = _runs(root) / "musique"
    hipporag = own_setting / "hipporag_ircot"
    ids = answered(hipporag)
    own = systems_against_chainrag(own_setting, ids, TABLE_1_OWN)
    own |= hipporag_requests(hipporag, ids)
    own["hipporag_ircot_vs_iter_retgen"] = difference_on(
        own_setting / "iter_retgen", hipporag, ids, answer="ircot"
    )
    return out | {f"{name}@musique": figure for name, figure in own.items()}


def hipporag_requests(folder: Path, ids: frozenset[str]) -> Figure:
    """HippoRAG w/ IRCoT's requests and tokens a question past its OpenIE (query NER, IRCoT's
    steps, the reader); the distinct passages its OpenIE read, two requests each, and their
    tokens a passage; and all its requests a question with those. The run's own count of OpenIE
    requests falls short of that where a question was stopped and resumed: the passages it had
    read were found stored. ``ids``: the questions it answered."""
    past = usage_on(folder, ids, leaving_out="openie_")
    passages = distinct_passages("musique", ids)
    return {
        "usage@hipporag_ircot_past_openie": past,
        "usage@hipporag_ircot_openie": openie_usage(folder),
        "openie_passages": passages,
        "requests@hipporag_ircot_whole": rounded(past["requests"] + 2 * passages / len(ids)),
    }


def systems_against_chainrag(folder: Path, ids: frozenset[str], systems: Sequence[str]) -> Figure:
    """Each of ``systems``' runs in ``folder`` against ChainRAG's (``ansint``), both answers,
    on the questions ``ids`` (those the run with the fewest answered); and each one's requests
    a question there."""
    out: Figure = {"n": len(ids), "requests@ansint": requests_on(folder / "ansint", ids)}
    for system in systems:
        for answer in ("cxtint", "ansint"):
            out[f"{answer}_vs_{system}"] = difference_on(
                folder / system, folder / "ansint", ids, answer=answer
            )
        out[f"requests@{system}"] = requests_on(folder / system, ids)
    return out


def power(root: Path) -> Figure:
    """The flip floor under every detectable difference on the page (no run: the rule of
    :func:`~chainrag.report.stats.flip_floor`): the questions that must change the same way,
    the floor at 30 and 90 questions, and the questions whose floor reaches the goal."""
    del root  # the same for any repository
    return {
        "least_changes": least_changes(90),
        "floor@30": rounded(flip_floor(30)),
        "floor@90": rounded(flip_floor(90)),
        "floor_needed_for_goal": floor_needed(GOAL),
    }


CLAIMS: dict[str, Callable[[Path], Figure]] = {
    "power": power,
    "lost_in_retrieval": lost,
    "baselines": baselines,
    "walk_and_ablations": walk_and_ablations,
    "rule": rule,
    "cheaper": cheaper,
    "patwa": patwa,
    "reservoir": reservoir,
    "judge": judge,
    "frozen": frozen,
    "table_1": table_1,
}
"""Each group of claims and the function computing its figures."""


def claims(root: Path) -> dict[str, Any]:
    """Every claim group's figures, computed from the repository at ``root``."""
    return {name: compute(root) for name, compute in CLAIMS.items()}
