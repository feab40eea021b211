"""Typed run records (issue 21): a run's lines and run.json read into attrs classes and written
back unchanged; every run folder in docs/ still loads; the report and the analyses print the
bytes they printed before the records were typed (tests/data holds a small stored run, cut
from docs/runs, and what the untyped code printed for it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.retrieval.judges import parse_yes_no
from chainrag.core.types import (
    Answer,
    Expansion,
    NamedAnswer,
    Pick,
    StepTrace,
    SubAnswer,
    Usage,
    Verdict,
)
from chainrag.run.folder import RunDir
from chainrag.run.meta import meta_data, read_meta
from chainrag.run.notes import notes_of
from chainrag.run.record import (
    CONVERTER,
    LEGACY_NOT_CHECKED,
    RECORD_FORMAT,
    QuestionError,
    RecordError,
    RetrievalRecord,
    error_line,
    read_error,
    read_record,
    record_line,
    upgrade_trace,
)

from .conftest import ROOT
from .run_records import record

STORED = sorted((ROOT / "docs").rglob("predictions.jsonl"))
STORED_ANSINT = ROOT / "docs" / "runs" / "musique" / "ansint"
DATA = ROOT / "tests" / "data"


def _with_todays_defaults(trace: dict[str, Any]) -> dict[str, Any]:
    """A trace written before ``read``, ``kept``, ``from_memory``, ``summary`` and an
    expansion's ``budget_cut`` existed, as it is written now (those fields at their defaults)."""

    def expansion(e: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if e is None else e | {"budget_cut": e.get("budget_cut")}

    steps = [
        {"kept": None, "from_memory": False}
        | s
        | {"summary": s.get("summary")}
        | ({"expansion": expansion(s["expansion"])} if "expansion" in s else {})
        for s in trace["steps"]
    ]
    return {"read": None} | trace | {"steps": steps}


def _as_text(trace: dict[str, Any]) -> dict[str, Any]:
    """A trace of today's line with its typed picks and verdict states written as lines before
    format 3 held them, in text: each pick's line before its answer's ``raw``, an unchecked
    verdict's sentinel ``raw``, no ``unread``."""
    answers = []
    for named in trace["answers"]:
        answer = dict(named["answer"])
        picks = [CONVERTER.structure(p, Pick) for p in answer.pop("picks", [])]
        if picks:
            rest = [] if picks[-1].took == "rule" else [answer["raw"]]
            answer["raw"] = "\n".join([p.said for p in picks] + rest)
        answers.append(named | {"answer": answer})
    steps = []
    for step in trace["steps"]:
        expansion = step.get("expansion")
        if expansion is not None:
            verdicts = []
            for verdict in map(dict, expansion["verdicts"]):
                verdict.pop("unread", None)
                if not verdict.pop("checked", True):
                    verdict["raw"] = LEGACY_NOT_CHECKED
                verdicts.append(verdict)
            step = step | {"expansion": expansion | {"verdicts": verdicts}}
        steps.append(step)
    return trace | {"answers": answers, "steps": steps}


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_every_stored_line_reads_and_is_written_back_with_its_text_in_typed_fields(
    path: Path,
) -> None:
    """Every line in docs/ reads; a line of an older format, written back, holds what its text
    said in typed fields, and written as text again it is the line as it was (changed by issue
    67: the line was written back as it was, text and all); a line of today's format is written
    back as it is."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = json.loads(text)
        found = read_record(line)
        again = record_line(found)
        stored_format = line.pop("format", 1)
        assert again.pop("format") == RECORD_FORMAT and stored_format <= RECORD_FORMAT
        if stored_format == RECORD_FORMAT:  # a run recorded today: written back as it is
            assert again == line, f"{path}, line {number}"
            continue
        expected = line | {"trace": _with_todays_defaults(line["trace"])}
        assert again | {"trace": _as_text(again["trace"])} == expected, f"{path}, line {number}"
        assert list(again) == list(line)  # the same keys in the same order
        assert read_record(record_line(found)) == found
        for step, old in zip(found.trace.steps, line["trace"]["steps"], strict=True):
            if step.expansion is None:
                continue
            for verdict, raw in zip(
                step.expansion.verdicts,
                (v["raw"] for v in old["expansion"]["verdicts"]),
                strict=True,
            ):  # unread: a yes/no judge's reply the judges read as neither (a judge that
                # answers, or a "yes" without a score, is not a yes/no judge's unread reply)
                judges = verdict.answer is None and (not verdict.ok or verdict.score is not None)
                unread = judges and verdict.checked and parse_yes_no(raw) is None
                assert verdict.unread is unread, f"{path}, line {number}"


def test_an_old_lines_picks_are_read_into_typed_fields() -> None:
    """The lines an integrator that picks wrote before format 3, each read into its pick; a
    ``raw`` that starts with no such line keeps it (moved here from tests/test_methods.py's
    test of ``verify_shares``, assertions unchanged)."""

    def pick(raw: str) -> tuple[tuple[Pick, ...], str]:
        named = {"name": "choose", "answer": {"text": "x", "raw": raw}}
        data = upgrade_trace({"answers": [named], "steps": []}, 2)["answers"][0]["answer"]
        answer = CONVERTER.structure(data, Answer)
        return answer.picks, answer.raw

    def verify_shares(raw: str) -> tuple[float, float] | None:
        picks, _ = pick(raw)
        return picks[0].weighed if picks else None

    assert verify_shares("[second: P(yes) 0.7312 for the second, 0.6401 for the first]\nX") == (
        0.6401, 0.7312)  # fmt: skip
    assert verify_shares("[first: P(yes) 0.59 for the second, 0.56 for the first, margin 0.1]") \
        == (0.56, 0.59)  # fmt: skip
    assert verify_shares("[second: P(yes) 0.5500 for the second, 0.6000 for the first; 0.2000 "
                         "and 0.7000 without the passages, so +0.3500 against -0.1000, margin "
                         "0.1]") == (-0.1, 0.35)  # fmt: skip
    assert verify_shares("[first: both said it]\nFårö") is None
    assert verify_shares("[second: P(second) 0.61, the mean of 0.6 with the first as A]") is None
    assert pick("[first: both said it]\nFårö") == ((Pick("first", "both said it", "same"),), "Fårö")
    assert pick("[second: P(second) 0.61, the mean of 0.6 with the first as A]")[0] == (
        Pick("second", "P(second) 0.61, the mean of 0.6 with the first as A", "llm",
             p_second=0.61),)  # fmt: skip
    assert pick("[second: the first, 'Yes', is no answer]\nParis")[0][0].misfit == "no answer"
    assert pick("[first: no answer; the fallback's 'x, is y' does not fit either]\nA")[0][0] == (
        Pick("first", "no answer; the fallback's 'x, is y' does not fit either", "form",
             misfit="no answer"))  # fmt: skip
    assert pick("[by rule: birth least: A (1, 0, 0), B (2, 0, 0)]") == (
        (Pick("rule", "birth least: A (1, 0, 0), B (2, 0, 0)", "rule"),),
        "",
    )
    assert pick("[fallback: no comparison the rule decides]\n[first: fits]\nParis") == (
        (Pick("fallback", "no comparison the rule decides", "rule"),
         Pick("first", "fits", "form")), "Paris")  # fmt: skip
    assert pick("[1] Paris is the capital") == ((), "[1] Paris is the capital")


@pytest.mark.parametrize(
    "raw", ["Yes.", "no", "NO, not enough", "I think yes", "unsure", "", "yesno"]
)
def test_an_old_lines_verdicts_are_read_as_the_judges_read_them(raw: str) -> None:
    """Moved from tests/test_analysis.py (``walks.read_verdict`` is gone: the upgrade reads)."""
    old = {"ok": False, "raw": raw}
    step = {"question": "q", "expansion": {"units": [], "seeds": [], "verdicts": [old]}}
    (verdict,) = upgrade_trace({"steps": [step]}, 2)["steps"][0]["expansion"]["verdicts"]
    assert verdict.get("unread", False) is (parse_yes_no(raw) is None)
    answering = upgrade_trace({"steps": [step | {"expansion": step["expansion"] | {
        "verdicts": [old | {"answer": raw}]}}]}, 2)  # fmt: skip
    assert "unread" not in answering["steps"][0]["expansion"]["verdicts"][0]
    for said, unread in (({"ok": True}, False), ({"ok": True, "score": 0.7}, True)):
        # a "yes" with no yes in its reply: an answering judge's, unless a score decided it
        old_yes = {"raw": "Paris"} | said
        upgraded = upgrade_trace({"steps": [step | {"expansion": step["expansion"] | {
            "verdicts": [old_yes]}}]}, 2)["steps"][0]["expansion"]["verdicts"][0]  # fmt: skip
        assert upgraded.get("unread", False) is unread
    unchecked = upgrade_trace({"steps": [step | {"expansion": step["expansion"] | {
        "verdicts": [{"ok": True, "raw": LEGACY_NOT_CHECKED}]}}]}, 2)  # fmt: skip
    assert unchecked["steps"][0]["expansion"]["verdicts"] == [
        {"ok": True, "raw": "", "checked": False}
    ]


def test_a_new_line_holds_picks_and_verdict_states_as_fields_and_reads_back() -> None:
    pick = Pick("second", "P(yes) 0.7 for the second, 0.6 for the first", "llm",
                p_yes=(0.6, 0.7), weighed=(0.6, 0.7))  # fmt: skip
    verdicts = (Verdict(True, checked=False), Verdict(False, "hmm", unread=True))
    made = record(
        "q1", {"choose": 1.0}, steps=[StepTrace("q", expansion=Expansion((1,), (1,), 1, verdicts))]
    )
    made = attrs.evolve(made, trace=attrs.evolve(
        made.trace, answers=(NamedAnswer("choose", Answer("x", "X.", (pick,))),)))  # fmt: skip
    line = json.loads(json.dumps(record_line(made)))
    assert line["trace"]["answers"][0]["answer"]["picks"] == [{
        "took": "second", "why": pick.why, "by": "llm", "p_yes": [0.6, 0.7],
        "weighed": [0.6, 0.7]}]  # fmt: skip
    assert line["trace"]["steps"][0]["expansion"]["verdicts"] == [
        {"ok": True, "raw": "", "checked": False},
        {"ok": False, "raw": "hmm", "unread": True},
    ]
    assert read_record(line) == made


def test_every_stored_run_json_is_written_back_byte_for_byte() -> None:
    stored = sorted((ROOT / "docs").rglob("run.json"))
    assert len(stored) >= 40
    for path in stored:
        text = path.read_text(encoding="utf-8")
        meta = read_meta(json.loads(text))
        assert json.dumps(meta_data(meta), indent=2, ensure_ascii=False) + "\n" == text, path
        assert RunDir(path.parent).meta() == meta
    for path in sorted((ROOT / "docs").rglob("errors.jsonl")):
        for text in path.read_text(encoding="utf-8").splitlines():
            assert error_line(read_error(json.loads(text))) == json.loads(text)


def test_a_record_round_trips_through_its_line() -> None:
    usage = Usage(calls=2, cache_hits=1, prompt_tokens=30, completion_tokens=4, latency_s=0.5)
    expansion = Expansion((3, 1), (3,), 1, (Verdict(True, "yes"),), 40)
    steps = [
        StepTrace("Who?", "Who is he?", (3, 1), expansion, SubAnswer("Who?", "Ann", True), usage),
        StepTrace("Where?", from_memory=True, kept=()),
    ]
    made = record("q1", {"ansint": 0.5, "cxtint": 1.0}, gold=["Ann", "Anne"], usage=usage,
                  retrieval=RetrievalRecord("sentence", {"recall@2": 0.5, "mrr": 1.0}),
                  steps=steps, question_type="compose")  # fmt: skip
    made = attrs.evolve(
        made, trace=attrs.evolve(made.trace, usage_by_prompt=(("decompose", usage),))
    )
    line = json.loads(json.dumps(record_line(made)))
    assert (line["primary"], line["f1"], line["em"], line["answer"]) == ("ansint", 0.5, 0.5, "x")
    assert line["usage_by_prompt"]["decompose"]["calls"] == 2
    assert line["trace"]["usage_by_prompt"] == []  # held once, at the top
    assert line["retrieval"] == {"level": "sentence", "recall@2": 0.5, "mrr": 1.0}
    assert read_record(line) == made
    no_answer = record("q2")
    assert (no_answer.primary, no_answer.f1, record_line(no_answer)["answer"]) == ("", 0.0, "")


def test_an_old_line_marks_a_memory_step_by_its_question() -> None:
    line = record_line(record("q1", {"four_module": 1.0}, steps=[StepTrace("memory: Paris")]))
    del line["format"]
    del line["trace"]["steps"][0]["from_memory"]
    (step,) = read_record(line).trace.steps
    assert (step.question, step.from_memory) == ("Paris", True)
    line["format"] = RECORD_FORMAT  # today's lines say it with from_memory, never the prefix
    line["trace"]["steps"][0]["from_memory"] = False
    (step,) = read_record(line).trace.steps
    assert (step.question, step.from_memory) == ("memory: Paris", False)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": 5}, r"record format 5: written by another version of chainrag"),
        ({"seconds": "2"}, r"expected a number, got '2' @ record.seconds"),
        ({"answers": {"ansint": {"text": "x", "f1": 1.0}}}, r"missing @ record.answers.ansint.em"),
        ({"extra": 1}, r"unknown key 'extra'"),
        ({"trace": None}, r"expected a mapping, got null @ record.trace"),
    ],
)
def test_a_line_that_is_not_a_record_says_what_is_wrong(
    change: dict[str, Any], message: str
) -> None:
    line = record_line(record("q1", {"naive": 1.0})) | change
    with pytest.raises(RecordError, match=message):
        read_record(line)


def test_a_line_holds_its_methods_notes_and_an_old_one_gets_them_from_the_recipe(
    tmp_path: Path,
) -> None:
    """What ChainRAG says of its answers and rewriting is in each record it writes (the run
    adds the method's notes, :func:`chainrag.run.notes.notes_of`), and a line written before
    lines held them gets them from the run's stored recipe where it is read; a method that
    says nothing has none."""
    folder = tmp_path / "ansint"
    folder.mkdir()
    (folder / "recipe.yaml").write_bytes((STORED_ANSINT / "recipe.yaml").read_bytes())
    recipe = RunDir(folder).stored_recipe()
    assert recipe is not None
    notes = notes_of(recipe)
    assert notes is not None
    assert [(i.name, i.kind, i.reads.sub_questions) for i in notes.integrations] == [
        ("ansint", "ans_int", "rewritten"), ("cxtint", "cxt_int", None)]  # fmt: skip
    assert notes.rewriting is not None
    assert (notes.rewriting.on, notes.rewriting.trigger) == (True, "pronoun_words")
    assert notes.expander == "iterative_hops"
    new = record("q1", {"ansint": 1.0, "cxtint": 0.0}, notes=notes)
    old = record_line(record("q2", {"ansint": 1.0, "cxtint": 0.0})) | {"format": 3}
    lines = [json.dumps(record_line(new)), json.dumps(old)]
    (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [r.trace.notes for r in RunDir(folder).records()[0]] == [notes, notes]
    assert record_line(new)["trace"]["notes"]["integrations"][0]["name"] == "ansint"
    assert "notes" not in record_line(record("q3", {"naive": 1.0}))["trace"]
    assert read_record(old).trace.notes is None  # no recipe asked


def test_a_failed_question_line_keeps_its_shape() -> None:
    plain = QuestionError("q1", "LLMTimeoutError", "timed out", "2026-11-22T07:07:47+0000")
    assert list(error_line(plain)) == ["id", "error", "message", "when"]
    bug = QuestionError("q2", "KeyError", "'choices'", "now", bug=True, traceback="Traceback…")
    assert error_line(bug)["bug"] is True and read_error(error_line(bug)) == bug


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["report", "tests/data/runs", "--no-plots"], "report.md"),
        (["report", "tests/data/runs", "--no-plots", "--all-questions"], "report_all_questions.md"),
        (["report", "tests/data/runs", "--no-plots", "--baseline", "naive", "--baseline", "ansint"],
         "report_baseline.md"),
        (["walks", "tests/data/runs/2wiki/ansint", "tests/data/runs/musique/ansint",
          "tests/data/runs/musique/no_graph"], "walks.md"),
        (["integration-gap", "tests/data/runs/2wiki/ansint", "--list"], "integration_gap.md"),
        (["compare", "tests/data/runs/musique/ansint", "tests/data/runs/musique/no_graph"],
         "compare.md"),
    ],
)  # fmt: skip
def test_commands_print_what_they_printed_before_the_records_were_typed(
    args: list[str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert done.stdout == (DATA / expected).read_text(encoding="utf-8")


def test_the_stored_recurring_experiment_reads_back_to_its_table() -> None:
    from chainrag.experiments import recurring as rec
    from chainrag.run.files import finished

    folder = ROOT / "docs" / "runs" / "recurring-musique"
    outcomes, torn = finished(folder / rec.OUTCOMES, rec.read_outcome, repair=False)
    assert torn == 0 and len(outcomes) == 50
    assert rec.table(outcomes, "musique") + "\n" == (folder / "table.md").read_text()


def test_a_recurring_experiment_folder_is_locked_like_a_run_folder(tmp_path: Path) -> None:
    from contextlib import nullcontext

    from chainrag.experiments import recurring as rec
    from chainrag.llm.fake import ScriptedLLM
    from chainrag.recipes.recipe import load_recipe
    from chainrag.run.files import RunError, locked

    recipe = load_recipe(ROOT / "recipes" / "seeds" / "four_module.yaml")
    with locked(tmp_path), pytest.raises(RunError, match="another chainrag run"):
        rec.in_folder(tmp_path, recipe, "musique", [], lambda: nullcontext(ScriptedLLM({})))
    assert not (tmp_path / rec.MANIFEST).exists()
