"""The analyses of chainrag.analysis (chainrag compare, walks, integration-gap) on hand-written
run records; moved from tests/test_scripts.py with the code they test (scripts/paired.py,
walks.py and integration_gap.py), assertions unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from chainrag.analysis import compare, compare_runs, integration_gap, paired, sign_test, summary
from chainrag.analysis.walks import walks_table
from chainrag.core.errors import ChainragError
from chainrag.core.types import (
    Answer,
    Expansion,
    NamedAnswer,
    Prediction,
    StepTrace,
    SubAnswer,
    Verdict,
)
from chainrag.methods.paper import ChainRAG
from chainrag.run.record import RunRecord, record_line

from .run_records import record, write_run

CHAINRAG = [str(Path(sys.executable).parent / "chainrag")]


def _step(
    hops: int, raws: list[str], words: int, rewritten: str | None = None, cut: bool | None = None
) -> StepTrace:
    verdicts = tuple(
        Verdict(raw.lower().startswith("yes"), raw, unread=raw not in ("yes", "no")) for raw in raws
    )
    expansion = Expansion((1,), (1,), hops, verdicts, words, budget_cut=cut)
    answer = SubAnswer("q", "a", bool(raws and raws[-1] == "yes"))
    return StepTrace("q", rewritten, expansion=expansion, answer=answer)


RECORDS = [
    record("a", steps=[_step(1, ["yes"], 400, cut=False), _step(2, ["no", "yes"], 800, "q?")]),
    record("b", steps=[_step(3, ["perhaps", "no", "no"], 1200, cut=True)]),
    record("c", steps=[StepTrace("q")]),
]


def test_walks_counts_verdicts_hops_and_words() -> None:
    s = attrs.asdict(summary(RECORDS))
    assert (s["questions"], s["sub_questions"], s["rewritten"], s["changed"]) == (3, 4, 1, 1)
    assert (s["checks"], s["yes"], s["no"], s["unread"]) == (6, 2, 4, 1)
    assert (s["walks"], s["hops"], s["words"]) == (3, {1: 1, 2: 1, 3: 1}, 800.0)
    assert s["unanswered"] == 1
    assert (s["cut"], s["cut_unknown"]) == (1, 1)  # one walk's record does not say


def test_walks_do_not_count_the_none_judge_as_checks() -> None:
    unchecked = Expansion((1, 2), (1,), 1, (Verdict(True, checked=False),), 300, budget_cut=False)
    s = summary([*RECORDS, record("d", steps=[StepTrace("q", expansion=unchecked)])])
    assert (s.checks, s.yes, s.walks, s.hops[1]) == (6, 2, 4, 2)


def test_walks_command(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(json.dumps(record_line(r)) + "\n"
                                                   for r in RECORDS))  # fmt: skip
    cmd = [*CHAINRAG, "walks"]
    done = subprocess.run([*cmd, str(run)], capture_output=True, text=True, check=True)
    assert (
        f"| {run} | 3 | 1.3 | 1 (1) | 6 | 2 | 4 (1) | 1: 1, 2: 1, 3: 1 | 800 "
        "| 1 (1 not recorded) | 1 |" in done.stdout
    )
    missing = subprocess.run([*cmd, str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and "no such file (not a run directory?)" in missing.stderr
    assert missing.stdout == ""


def test_walks_shared_counts_only_the_questions_every_run_answered(tmp_path: Path) -> None:
    full, first = tmp_path / "full", tmp_path / "first"
    for folder, records in ((full, RECORDS), (first, RECORDS[1:])):
        folder.mkdir()
        (folder / "predictions.jsonl").write_text("".join(json.dumps(record_line(r)) + "\n"
                                                          for r in records))  # fmt: skip
    assert walks_table([full], frozenset({"b", "c"})) == walks_table([first]).replace(
        str(first), str(full)
    )
    cmd = [*CHAINRAG, "walks", str(full), str(first)]
    done = subprocess.run([*cmd, "--shared"], capture_output=True, text=True, check=True)
    assert f"| {full} | 2 | 1.0 | 0 (0) | 3 | 0 | 3 (1) | 3: 1 | 1200 " in done.stdout
    every = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert f"| {full} | 3 |" in every.stdout and f"| {first} | 2 |" in every.stdout
    (first / "predictions.jsonl").write_text(json.dumps(record_line(record("z"))) + "\n")
    none = subprocess.run([*cmd, "--shared"], capture_output=True, text=True)
    assert none.returncode == 1 and "no question answered by every run" in none.stderr


def test_walks_first_counts_each_runs_first_questions(tmp_path: Path) -> None:
    """A run taken on past where another stopped: --first N counts each run as it stood at N
    (in the order it answered), with --shared those of them every run answered."""
    full, other = tmp_path / "full", tmp_path / "other"
    for folder, records in ((full, RECORDS), (other, [RECORDS[2], RECORDS[0]])):
        folder.mkdir()
        (folder / "predictions.jsonl").write_text("".join(json.dumps(record_line(r)) + "\n"
                                                          for r in records))  # fmt: skip
    assert walks_table([full], first=1) == walks_table([full], frozenset({"a"}))
    cmd = [*CHAINRAG, "walks", str(full), str(other)]
    done = subprocess.run([*cmd, "--first", "2"], capture_output=True, text=True, check=True)
    assert f"| {full} | 2 |" in done.stdout and f"| {other} | 2 |" in done.stdout
    both = subprocess.run([*cmd, "--first", "2", "--shared"], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert f"| {full} | 1 | 2.0 |" in both.stdout and f"| {other} | 1 | 2.0 |" in both.stdout
    bad = subprocess.run([*cmd, "--first", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--first" in bad.stderr


def test_sign_test_is_the_exact_binomial() -> None:
    assert sign_test(0, 0) == 1.0
    assert sign_test(3, 3) == 1.0
    assert sign_test(0, 5) == sign_test(5, 0) == 2 / 32
    assert abs(sign_test(1, 6) - 2 * (1 + 7) / 128) < 1e-12


def test_paired_counts_changes_and_brackets_the_mean_difference() -> None:
    p = paired([0.0, 1.0, 0.5, 0.0], [1.0, 1.0, 0.0, 1.0], resamples=2000, seed=1)
    assert (p.n, p.better, p.worse, p.same) == (4, 2, 1, 1)
    assert abs(p.delta - 100 * (1 + 0 - 0.5 + 1) / 4) < 1e-9
    assert p.low <= p.delta <= p.high
    same = paired([0.2, 0.4], [0.2, 0.4])
    assert (same.low, same.high, same.p_sign) == (0.0, 0.0, 1.0)


def _run(folder: Path, f1s: dict[str, dict[str, float]]) -> Path:
    return write_run(folder, [record(qid, answers) for qid, answers in f1s.items()])


def test_paired_compares_shared_variants_on_shared_questions(tmp_path: Path) -> None:
    base = [record(q, {"ansint": a, "cxtint": c})
            for q, a, c in [("q1", 1.0, 1.0), ("q2", 0.0, 1.0), ("q3", 0.0, 0.0)]]  # fmt: skip
    ablated = [record(q, {"ansint": a, "cxtint": c})
               for q, a, c in [("q1", 0.0, 1.0), ("q2", 0.0, 0.0)]]  # fmt: skip
    found = compare(base, ablated, resamples=100)
    assert list(found) == ["ansint", "cxtint"]
    assert (found["ansint"].n, found["ansint"].worse, found["cxtint"].worse) == (2, 1, 1)
    naive = [record("q1", {"naive": 0.0})]
    assert list(compare(base, naive, resamples=100)) == ["ansint vs primary", "cxtint vs primary"]


def test_paired_command(tmp_path: Path) -> None:
    base = _run(tmp_path / "full", {"q1": {"ansint": 1.0}, "q2": {"ansint": 0.0}})
    other = _run(tmp_path / "no_graph", {"q1": {"ansint": 0.0}, "q2": {"ansint": 0.0}})
    cmd = [*CHAINRAG, "compare"]
    done = subprocess.run([*cmd, str(base), str(other)], capture_output=True, text=True, check=True)
    assert (
        "| no_graph | ansint | 2 | 50.00 | 0.00 | -50.00 | [-100.0, +0.0] | 140.1 | 0 / 1 / 1 "
        "| 1.000 |" in done.stdout
    )  # differences 0 and -100: SD 70.7, (1.96 + 0.84) x 70.7 / sqrt(2) = 140.1
    detect = [*cmd, str(base), str(other), "--detect", "10"]
    planned = subprocess.run(detect, capture_output=True, text=True, check=True).stdout
    assert "| n for Δ 10 |" in planned and "| 140.1 | 393 | 0 / 1 / 1 |" in planned
    zero = subprocess.run([*cmd, str(base), str(other), "--detect", "0"], capture_output=True,
                          text=True)  # fmt: skip
    assert zero.returncode == 1 and "the difference to detect must be above 0" in zero.stderr
    missing = subprocess.run([*cmd, str(base), str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and "not a run directory?" in missing.stderr
    (other / "run.json").unlink()
    no_meta = subprocess.run([*cmd, str(base), str(other)], capture_output=True, text=True)
    assert no_meta.returncode == 1 and "not a run directory (no run.json)" in no_meta.stderr
    assert "Traceback" not in no_meta.stderr


def test_paired_pools_datasets_without_pairing_across_them(tmp_path: Path) -> None:
    for dataset, full, ablated in [("musique", 1.0, 0.0), ("2wiki", 1.0, 1.0)]:
        (tmp_path / dataset).mkdir()
        _run(tmp_path / dataset / "full", {"q1": {"ansint": full}})
        _run(tmp_path / dataset / "no_graph", {"q1": {"ansint": ablated}})
    folders = [str(tmp_path / "musique"), str(tmp_path / "2wiki")]
    cmd = [*CHAINRAG, "compare", *(a for f in folders for a in ("--over", f))]
    done = subprocess.run(
        [*cmd, "--", "full", "no_graph"], capture_output=True, text=True, check=True
    )
    assert "| no_graph | ansint | 2 | 100.00 | 50.00 | -50.00 |" in done.stdout
    assert "0 / 1 / 1 |" in done.stdout
    missing = subprocess.run([*cmd, "--", "full", "nope"], capture_output=True, text=True)
    assert missing.returncode == 1 and "nope: no predictions.jsonl" in missing.stderr


# --------------------------------------------------------------------------- new with the move


def test_compare_runs_as_a_library_function(tmp_path: Path) -> None:
    base = _run(tmp_path / "full", {"q1": {"ansint": 1.0}, "q2": {"ansint": 0.0}})
    other = _run(tmp_path / "no_graph", {"q1": {"ansint": 0.0}, "q2": {"ansint": 0.0}})
    found = compare_runs(str(base), [str(other)], resamples=100)
    [(name, label, p)] = found.rows
    assert (name, label, p.n, p.worse, p.same) == ("no_graph", "ansint", 2, 1, 1)
    table = found.markdown()
    assert table.startswith(f"F1 in %, against {base} on the questions both answered")
    assert "from 100 paired bootstrap resamples (seed 0)" in table
    lonely = _run(tmp_path / "other_questions", {"q9": {"ansint": 1.0}})
    with pytest.raises(ChainragError, match=f"{lonely}: no question in common with {base}"):
        compare_runs(str(base), [str(lonely)])


def test_compare_against_the_bases_better_answer_on_each_dataset(tmp_path: Path) -> None:
    """--base-answer best takes, on each dataset folder, the base's variant with the higher
    mean F1 (cxtint on musique, ansint on 2wiki here) and compares the run's chosen answer."""

    scores = dict[str, dict[str, float]]

    def two(v1: str, v2: str, q1: tuple[float, float], q2: tuple[float, float]) -> scores:
        return {"q1": {v1: q1[0], v2: q1[1]}, "q2": {v1: q2[0], v2: q2[1]}}

    base = {"musique": two("ansint", "cxtint", (0, 1), (0, 0)),
            "2wiki": two("ansint", "cxtint", (1, 0), (1, 1))}  # fmt: skip
    mine = {"musique": two("checked", "ansint", (1, 0), (1, 0)),
            "2wiki": two("checked", "ansint", (0, 1), (1, 1))}  # fmt: skip
    for dataset in base:
        _run(tmp_path / dataset / "paper", base[dataset])
        _run(tmp_path / dataset / "mine", mine[dataset])
    over = [tmp_path / "musique", tmp_path / "2wiki"]
    found = compare_runs("paper", ["mine"], over=over, base_answer="best", resamples=100)
    assert found.chosen == (("musique", "cxtint"), ("2wiki", "ansint"))
    [(name, label, p)] = found.rows
    assert (name, label, p.n, p.base, p.other) == ("mine", "best vs primary", 4, 75.0, 75.0)
    assert (p.better, p.worse, p.same) == (1, 1, 2)
    assert "cxtint on musique, ansint on 2wiki" in found.markdown()
    [(_, label, p)] = compare_runs("paper", ["mine"], over=over, base_answer="cxtint",
                                   answer="ansint", resamples=100).rows  # fmt: skip
    assert (label, p.base, p.other) == ("cxtint vs ansint", 50.0, 50.0)
    with pytest.raises(ChainragError, match=r"mine against paper: the run has no answer "
                                            r"'nope' \(it has: checked, ansint\)"):  # fmt: skip
        compare_runs("paper", ["mine"], over=over, answer="nope")


def test_compare_first_pairs_each_runs_first_questions(tmp_path: Path) -> None:
    """--first N compares runs as they stood at N (of each dataset folder, pooled), so the
    figures of a run stopped at 15 recompute once it is taken on to 30."""
    base = _run(tmp_path / "musique" / "full",
                {"q1": {"ansint": 1.0}, "q2": {"ansint": 0.0}, "q3": {"ansint": 1.0}})  # fmt: skip
    other = _run(tmp_path / "musique" / "k1",
                 {"q2": {"ansint": 1.0}, "q1": {"ansint": 1.0}, "q3": {"ansint": 0.0}})  # fmt: skip
    [(_, _, every)] = compare_runs(str(base), [str(other)], resamples=100).rows
    assert (every.n, every.better, every.worse) == (3, 1, 1)
    found = compare_runs(str(base), [str(other)], resamples=100, first=2)
    [(_, _, p)] = found.rows
    assert (p.n, p.better, p.worse, p.same) == (2, 1, 0, 1)
    assert "on the questions both answered among each run's first 2" in found.markdown()
    [(_, _, two)] = compare_runs("full", ["k1"], over=[tmp_path / "musique"], first=2,
                                 resamples=100).rows  # fmt: skip
    assert (two.n, two.better, two.worse) == (2, 1, 0)
    with pytest.raises(ChainragError, match="k1: no question in common with full"):
        compare_runs("full", ["k1"], over=[tmp_path / "musique"], first=1)  # q1 against q2
    with pytest.raises(ChainragError, match="first must be 1 or more, got 0"):
        compare_runs(str(base), [str(other)], first=0)
    cmd = [*CHAINRAG, "compare", str(base), str(other), "--first", "2", "--resamples", "100"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "| k1 | ansint | 2 | 50.00 | 100.00 | +50.00 |" in done.stdout


FOLDER_PROBLEMS = [
    (None, r"no predictions.jsonl — no such file \(not a run directory\?\)"),
    ("", r"predictions.jsonl: no predictions yet"),
    ("[1, 2]\n", r"predictions.jsonl, line 1: expected a JSON object"),
    ('{"id": "q1"', r"predictions.jsonl: no predictions yet"),  # a torn line is not read
]


@pytest.mark.parametrize(("content", "message"), FOLDER_PROBLEMS)
def test_missing_or_malformed_run_folders_are_errors_naming_them(
    tmp_path: Path, content: str | None, message: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    if content is not None:
        (run / "predictions.jsonl").write_text(content)
    with pytest.raises(ChainragError, match=f"{run}.*{message}"):
        integration_gap(run)
    with pytest.raises(ChainragError, match=f"{run}.*{message}"):
        walks_table([run])


def test_records_of_another_kind_are_errors_naming_the_folder(tmp_path: Path) -> None:
    run = tmp_path / "naive"
    run.mkdir()
    (run / "predictions.jsonl").write_text('{"id": "q1", "f1": 0.5, "trace": null}\n')
    line = f"{run / 'predictions.jsonl'}, line 1: not a record of this version"
    with pytest.raises(ChainragError, match=rf"{line} \(.*required key missing @ record.gold"):
        integration_gap(run)
    with pytest.raises(
        ChainragError, match=rf"{line} .*expected a mapping, got null @ record.trace"
    ):
        walks_table([run])


def test_compare_refuses_records_without_f1(tmp_path: Path) -> None:
    run = _run(tmp_path / "full", {"q1": {"ansint": 1.0}})
    (run / "predictions.jsonl").write_text('{"id": "q1"}\n')
    with pytest.raises(
        ChainragError, match=f"{run}.*line 1: .*required key missing @ record.answers"
    ):
        compare_runs(str(run), [str(run)])


def _chainrag_record(qid: str, ansint: str, cxtint: str, subs: list[str], gold: str) -> RunRecord:
    steps = [StepTrace("q", answer=SubAnswer("q", s, True)) for s in subs] + [StepTrace("q")]
    texts = {"ansint": ansint, "cxtint": cxtint}
    return record(qid, {"ansint": 0.0, "cxtint": 0.0}, texts=texts, gold=[gold], steps=steps,
                  notes=ChainRAG().notes())  # fmt: skip


def test_integration_gap_splits_questions_by_case(tmp_path: Path) -> None:
    run = tmp_path / "ansint"
    run.mkdir()
    records = [
        _chainrag_record("q1", "Paris", "Paris", ["Paris, France"], "Paris"),
        _chainrag_record("q2", "Lyon", "Paris", ["Lyon"], "Paris"),
        _chainrag_record("q3", "Lyon", "Paris", ["in Paris"], "Paris"),
        _chainrag_record("q4", "Lyon", "Nice", [], "Paris"),
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(record_line(r)) + "\n"
                                                   for r in records))  # fmt: skip
    gap = integration_gap(run)
    assert [s.case for s in gap.splits] == [
        ("right", "right", "yes"),
        ("wrong", "right", "no"),
        ("wrong", "right", "yes"),
        ("wrong", "wrong", "no"),
    ]
    table = gap.markdown()
    assert table.startswith(f"{run}: 4 questions, 1.8 steps each on average (right = F1 ≥ 0.5)\n\n")
    assert table.endswith("| wrong | wrong | no | 1 |")
    listed = gap.markdown(listing=True).splitlines()
    assert listed[1] == (
        "q2\tAnsInt wrong\tCxtInt right\tin sub-answers no\tgold 'Paris'\tsub-answers ['Lyon']"
    )
    naive = attrs.evolve(records[0], trace=Prediction((NamedAnswer("naive", Answer("x")),)))
    (run / "predictions.jsonl").write_text(json.dumps(record_line(naive)) + "\n")
    with pytest.raises(ChainragError, match=f"{run}: question q1 has no AnsInt and CxtInt"):
        integration_gap(run)


def test_integration_gap_command(tmp_path: Path) -> None:
    run = tmp_path / "ansint"
    run.mkdir()
    line = _chainrag_record("q1", "Paris", "Nice", ["Paris"], "Paris")
    (run / "predictions.jsonl").write_text(json.dumps(record_line(line)) + "\n")
    cmd = [*CHAINRAG, "integration-gap"]
    done = subprocess.run([*cmd, str(run), "--list"], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[0].startswith("q1\tAnsInt right\tCxtInt wrong")
    assert "| right | wrong | yes | 1 |" in done.stdout
    missing = subprocess.run([*cmd, str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and f"FAIL {tmp_path}: no predictions.jsonl" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_analysis_imports_neither_the_llm_layer_nor_the_cli() -> None:
    code = (
        "import sys, chainrag.analysis; "
        "print(sorted(m for m in sys.modules if m.startswith(('chainrag.llm', 'chainrag.cli.main', "
        "'chainrag.components'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_commands_have_help() -> None:
    for command in ("compare", "walks", "integration-gap"):
        done = subprocess.run([*CHAINRAG, command, "--help"], capture_output=True, text=True)
        assert done.returncode == 0 and "Usage: chainrag " + command in done.stdout, command
