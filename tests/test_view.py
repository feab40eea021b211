"""``chainrag view``: the page of stored runs read back with an HTML parser — the overview's
numbers against the report's, the list's rows and filter data, one question's steps against
its trace and gold evidence, the walk's picture against a hand-made graph — and the pure parts
(hops, layout, rewrite reasons) on their own."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
import yaml
from scipy import sparse
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.notes import Rewriting
from chainrag.core.types import Answer, Expansion, NamedAnswer, StepTrace, SubAnswer, Verdict
from chainrag.report.runs import comparisons, rows_of
from chainrag.run.files import RunError
from chainrag.run.record import ScoredAnswer, record_line
from chainrag.view import Examples, Indexes, read_runs, render, write_view
from chainrag.view.evidence import rewrite_reason, trigger_words
from chainrag.view.walk import MAX_ROWS, ROW_GAP, hop_levels, layout, legend, walk_of, walk_svg
from tests.run_records import record, write_run
from tests.view_runs import ROOT, Element, ToyRun, make_toy_run, parse, sentences, toy_record

RUNS = ROOT / "docs" / "runs"


def page_of(paths: list[Path], **kwargs: object) -> tuple[Element, str]:
    runs, notes = read_runs(paths)
    html = render(runs, notes, Examples(), Indexes(), plots=False, **kwargs).html  # type: ignore[arg-type]
    return parse(html), html


# --------------------------------------------------------------------------- stored runs


@pytest.fixture
def musique() -> tuple[Element, str]:
    """The page of two stored runs, with no index in the cache (conftest's is private)."""
    return page_of([RUNS / "musique" / "ansint", RUNS / "musique" / "naive"])


def test_the_overview_shows_the_reports_numbers(musique: tuple[Element, str]) -> None:
    page, _ = musique
    runs, _ = read_runs([RUNS / "musique" / "ansint", RUNS / "musique" / "naive"])
    rows = [row for t in comparisons(runs) for run in t.runs for row in rows_of(run)]
    table = page.one("section", id="overview").find_all("table", class_="overview")[0]
    header = [th.text() for th in table.find_all("th")]
    assert header[:6] == ["method", "n", "F1", "F1 95%", "EM", "EM 95%"]
    assert header[-3:] == ["calls/q", "tokens/q", "s/q"]
    assert "R@5" in header
    lines = table.one("tbody").find_all("tr")
    assert len(lines) == len(rows) == 3  # AnsInt, CxtInt, NaiveRAG
    for line, row in zip(lines, rows, strict=True):
        cells = [td.text() for td in line.find_all("td")]
        assert cells[0] == row.label
        assert cells[2] == f"{row.f1:.2f}"
        assert cells[3] == f"[{row.f1_ci.low:.1f}, {row.f1_ci.high:.1f}]"
        assert row.f1_ci.low <= row.f1 <= row.f1_ci.high
        assert cells[5] == f"[{row.em_ci.low:.1f}, {row.em_ci.high:.1f}]"
        assert cells[header.index("R@5")] == f"{row.recall['recall@5']:.1f}"


def test_the_list_has_a_row_per_question_with_every_answer(musique: tuple[Element, str]) -> None:
    page, _ = musique
    runs, _ = read_runs([RUNS / "musique" / "ansint", RUNS / "musique" / "naive"])
    rows = page.one("table", id="question-list").find_all("tr", class_="qrow")
    assert len(rows) == len({r.id for r in runs[0].records} | {r.id for r in runs[1].records})
    by_id = {r.id: r for r in runs[0].records}
    first = rows[0]
    record = by_id[next(iter(by_id))]
    results = json.loads(first.attrs["data-results"])
    assert results["ansint/ansint"] == [record.answers["ansint"].em, record.answers["ansint"].f1]
    assert set(results) == {"ansint/ansint", "ansint/cxtint", "naive/naive"}
    assert record.question.lower() in first.attrs["data-text"]
    chips = first.find_all("span", class_="chip")
    assert len(chips) == 3
    assert first.one("a").attrs["href"] == f"#{first.attrs['data-target']}"
    options = [o.attrs["value"] for o in page.one("select", id="f-method").find_all("option")]
    assert options == ["", "ansint/ansint", "ansint/cxtint", "naive/naive"]


def test_one_question_shows_each_runs_steps(musique: tuple[Element, str]) -> None:
    page, _ = musique
    runs, _ = read_runs([RUNS / "musique" / "ansint"])
    record = runs[0].records[0]
    section = page.one("section", id="q-0")
    assert section.one("h2").text() == record.question
    methods = section.find_all("details", class_="method")
    assert [m.attrs["data-method"] for m in methods] == ["ansint", "naive"]
    chain = methods[0]
    steps = chain.find_all("div", class_="step")
    assert len(steps) == len(record.trace.steps)
    for step, trace in zip(steps, record.trace.steps, strict=True):
        assert step.one("h4").text() == f"Step {steps.index(step) + 1}: {trace.question}"
        assert trace.answer is not None
        assert trace.answer.answer in step.one("p", class_="sub-answer").text()
        assert step.one("p", class_="why").text().startswith(("rewritten", "not rewritten"))
    assert "AnsInt" in chain.one("div", class_="integration").text()
    # no index in the (private) cache: numbers only, and the page says why
    assert "not in the index cache" in chain.find_all("p", class_="note")[0].text()
    gold = section.one("ol", class_="gold-evidence").find_all("li")
    assert len(gold) == 4  # the question's four supporting paragraphs
    svg = chain.one("svg", class_="walk")
    drawn = {int(g.attrs["data-unit"]) for g in svg.find_all("g", class_="node")}
    assert drawn == {u for s in record.trace.steps for u in s.retrieved}
    assert svg.find_all("path") == []  # no graph: no edge


def test_every_run_folder_in_docs_runs_is_shown() -> None:
    runs, notes = read_runs([RUNS])
    assert notes == []
    assert len(runs) == len(list(RUNS.rglob("run.json")))
    page, _ = page_of([RUNS])
    questions = {(run.dataset, r.id) for run in runs for r in run.records}
    assert len(page.find_all("section", class_="question")) == len(questions)
    datasets = {o.attrs["value"] for o in page.one("select", id="f-dataset").find_all("option")}
    assert datasets == {"", *(run.dataset for run in runs)}
    # the shared-corpus run says why its units have no text
    corpus = [d for d in page.find_all("details", class_="method")
              if "shared corpus index" in d.text()]  # fmt: skip
    assert corpus


def test_a_chooser_says_which_answer_it_took_and_why() -> None:
    """``choose`` and ``form_checked`` answers show the first line of their raw answer."""
    run = RUNS / "long-hotpotqa" / "one_hop_choose"
    records = [json.loads(line) for line in (run / "predictions.jsonl").open()]
    why = {r["question"]: r["trace"]["answers"][0]["answer"]["raw"].splitlines()[0]
           for r in records}  # fmt: skip
    page, _ = page_of([run])
    shown = 0
    for section in page.find_all("section", class_="question"):
        [said] = [d.text() for d in section.find_all("div", class_="integrator")]
        assert said.startswith("choose (one of two integrations' answers, chosen by the LLM")
        assert why[section.one("h2").text()] in said
        shown += 1
    assert shown == len(records) == 30


def test_a_run_of_another_format_is_left_out_with_a_note(tmp_path: Path) -> None:
    for name in ("ansint", "naive"):
        (tmp_path / name).mkdir()
        for file in ("run.json", "recipe.yaml", "predictions.jsonl"):
            (tmp_path / name / file).write_bytes((RUNS / "musique" / name / file).read_bytes())
    lines = (tmp_path / "naive" / "predictions.jsonl").read_text().splitlines()
    old = json.loads(lines[0]) | {"format": 99}
    (tmp_path / "naive" / "predictions.jsonl").write_text(json.dumps(old) + "\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "run.json").write_bytes((RUNS / "musique/naive/run.json").read_bytes())
    runs, notes = read_runs([tmp_path])
    assert [r.name for r in runs] == ["ansint"]
    assert len(notes) == 2
    assert re.search(r"naive: not shown — a run this version of chainrag cannot read .*format "
                     r"99.*written by another version", notes[1])  # fmt: skip
    assert "empty: not shown — no answered question yet" in notes[0]
    page, _ = page_of([tmp_path])
    shown = page.one("ul", class_="notes").text()
    assert "format 99" in shown
    assert "no answered question yet" in shown


def test_no_run_at_all_is_an_error_naming_the_folder(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=r"no run\.json in it or below it"):
        write_view([tmp_path], tmp_path / "v.html")
    with pytest.raises(RunError, match=r"nothere: no such run directory"):
        write_view([tmp_path / "nothere"], tmp_path / "v.html")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    with pytest.raises(RunError, match=r"no run to show: .*not the run\.json of a run"):
        write_view([tmp_path], tmp_path / "v.html")


def test_reservoir_hits_and_the_filters_choice(tmp_path: Path) -> None:
    steps = [StepTrace("Where?", from_memory=True), StepTrace("Who?", None, (5, 6, 7), kept=(6,))]
    write_run(tmp_path / "four", [record("q1", {"four_module": 1.0}, steps=steps)])
    page, _ = page_of([tmp_path / "four"])
    one, two = page.one("details", class_="method").find_all("div", class_="step")
    assert one.one("p", class_="reservoir").text().startswith("Answered from the knowledge "
                                                              "reservoir")  # fmt: skip
    assert "Retrieved 3; the knowledge filter kept 1:" in two.text()
    assert two.one("p", class_="numbers").text() == "[5 dropped] [6 kept] [7 dropped]"
    notes = page.one("details", class_="method").find_all("p", class_="note")
    assert notes[0].text() == (
        "Unit texts not shown: the dataset cannot say which index: question q1 is not in "
        "dataset 'musique'."
    )


def test_texts_from_a_run_are_escaped(tmp_path: Path) -> None:
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    steps = [StepTrace(evil, evil, (1,), answer=SubAnswer(evil, evil, True))]
    write_run(tmp_path / "naive", [record("q<1>", {"naive": 0.0}, texts={"naive": evil},
                                          gold=(evil,), steps=steps)])  # fmt: skip
    page, html = page_of([tmp_path / "naive"])
    assert len(page.find_all("script")) == 1  # the page's own
    assert page.find_all("img") == []
    assert evil in page.one("tr", class_="qrow").text()
    assert "&lt;script&gt;alert(1)" in html


# --------------------------------------------------------------------------- a run with its graph


@pytest.fixture
def toy_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., ToyRun]:
    """Makes the toy run with a cache and a data root of this test's own."""
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))

    def make(**kwargs: Any) -> ToyRun:
        run = make_toy_run(tmp_path, **kwargs)
        monkeypatch.setenv("CHAINRAG_DATA", str(run.data))
        return run

    return make


@pytest.fixture
def toy(toy_run: Callable[..., ToyRun]) -> Path:
    return toy_run().folder


def test_the_toy_question_against_its_graph(toy: Path) -> None:
    page, _ = page_of([toy])
    section = page.one("section", class_="question")
    chain = section.one("details", class_="method")
    assert chain.find_all("p", class_="note") == []  # texts found, words agree
    steps = chain.find_all("div", class_="step")
    one, two = steps
    assert one.one("p", class_="why").text() == (
        "not rewritten: the first sub-question has nothing to refer back to"
    )
    assert two.one("p", class_="rewritten").text() == "Rewritten: Which country borders France?"
    assert two.one("p", class_="why").text() == (
        "rewritten: the previous sub-question was answered and the trigger (pronoun_words) "
        "matched “it”")  # fmt: skip
    # step 2's walk: seeds [3], hop 1 adds 1 and 4, hop 2 adds 0, 2 and 5
    hops = [d.text() for d in two.find_all("div", class_="hop")]
    assert hops == ["Seeds (1):", "Hop 1: 2 added", "Hop 2: 3 added"]
    lists = two.find_all("ol", class_="units")
    assert [[int(li.attrs["data-unit"]) for li in ol.find_all("li")] for ol in lists] == [
        [3], [1, 4], [0, 2, 5]]  # fmt: skip
    verdicts = [li.text() for li in two.one("ul", class_="verdicts").find_all("li")]
    assert verdicts == ["after hop 1: no, go on no", "after hop 2: yes, enough Yes."]
    # gold: sentences of Alpha and Beta marked; Delta (unit 8) missed
    gold_units = {int(li.attrs["data-unit"]) for li in chain.find_all("li", class_="gold")}
    assert gold_units == {0, 1, 2, 3, 4, 5}
    texts = sentences()
    seed = two.one("li", class_="gold", data_unit="3")
    assert seed.text() == f"[3]★ Beta {texts[3].text}"
    missed = chain.one("div", class_="missed")
    assert "2 of 3 paragraphs found" in missed.text()
    assert "Madrid is the capital of Spain." in missed.text()
    assert "LLM: 4 calls, 909 tokens, 3.2 s" in two.one("p", class_="usage").text()
    integration = chain.one("div", class_="integration").text()
    assert "Which country borders France? → Spain" in integration
    assert "CxtInt read the 7 distinct sentences the steps retrieved, 26 words" in integration
    gold_list = section.one("ol", class_="gold-evidence").text()
    assert gold_list.count("found by ansint") == 2


def test_the_toy_walk_picture(toy: Path) -> None:
    page, _ = page_of([toy])
    svg = page.one("svg", class_="walk")
    nodes = {int(g.attrs["data-unit"]): g for g in svg.find_all("g", class_="node")}
    assert set(nodes) == {0, 1, 2, 3, 4, 5, 6, 8}
    assert nodes[0].classes == {"node", "seed", "gold"}
    assert nodes[3].classes == {"node", "seed", "gold"}  # step 2's seed
    assert nodes[6].classes == {"node", "hop"}
    assert nodes[8].classes == {"node", "missed", "gold"}
    assert "Madrid is the capital of Spain." in nodes[8].one("title").text()
    edges = {(p.attrs["data-layer"], "stroke-dasharray" in p.attrs) for p in svg.find_all("path")}
    assert edges == {("ec", False), ("sa", False), ("ss", False), ("ec", True)}
    columns = [t.text() for t in svg.find_all("text", class_="column")]
    assert columns == ["step 1: seeds", "step 1: hop 1", "step 2: seeds", "step 2: hop 1",
                       "step 2: hop 2", "gold, missed"]  # fmt: skip


def test_a_summary_is_shown_after_its_unanswered_step(toy_run: Callable[..., ToyRun]) -> None:
    run = toy_run(summary="Alice is from Paris, in France.")
    page, _ = page_of([run.folder])
    one, two = page.find_all("div", class_="step")
    assert one.one("p", class_="sub-answer").text() == "Sub-answer: unanswerable"
    assert one.one("p", class_="summary").text() == (
        "Summary of this step's sentences, which step 2's answerer read: "
        "Alice is from Paris, in France.")  # fmt: skip
    assert two.one("p", class_="why").text() == (
        "not rewritten: the previous sub-question was not answered"
    )
    assert two.find_all("p", class_="summary") == []


def test_an_index_that_is_not_the_runs_says_so(toy_run: Callable[..., ToyRun]) -> None:
    run = toy_run(word_count=999)
    page, _ = page_of([run.folder])
    warning = page.one("p", class_="warn").text()
    assert re.search(r"may not be the one the run searched: its retrieved units hold 26 words, "
                     r"the record says 999", warning)  # fmt: skip


def test_without_the_cached_graph_the_page_says_so(toy_run: Callable[..., ToyRun]) -> None:
    run = toy_run(cached=False)
    page, _ = page_of([run.folder])
    note = page.one("details", class_="method").find_all("p", class_="note")[0].text()
    assert f"not in the index cache ({run.index})" in note
    assert "--build-index" in note
    hops = [d.text() for d in page.find_all("div", class_="hop")]
    assert "Hops 1–2: 5 added (which hop is not known without the graph)" in hops
    assert page.one("svg", class_="walk").find_all("path") == []


def test_the_cli_writes_the_page(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "view.html"
    result = CliRunner().invoke(app, ["view", str(toy), "--out", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    assert f"{out}: 1 questions from 1 runs" in result.output
    page = parse(out.read_text(encoding="utf-8"))
    assert page.one("section", class_="question").attrs["id"] == "q-0"
    assert "http" not in "".join(e.attrs.get("src", "") for e in page.walk())  # nothing fetched
    failed = CliRunner().invoke(app, ["view", str(tmp_path / "none"), "--out", str(out)])
    assert failed.exit_code == 1
    assert "FAIL" in failed.output
    assert "none: no such run directory" in failed.output


def test_plots_are_inlined(toy: Path) -> None:
    runs, notes = read_runs([toy])
    html = render(runs, notes, Examples(), Indexes()).html
    images = parse(html).find_all("img")
    assert images
    assert all(i.attrs["src"].startswith("data:image/png;base64,") for i in images)


# --------------------------------------------------------------------------- the pure parts


def test_hop_levels_are_distances_from_the_seeds() -> None:
    # a path 0 - 1 - 2 - 3 and 4 alone
    a = sparse.csr_matrix(np.array([[0, 1, 0, 0, 0], [1, 0, 1, 0, 0], [0, 1, 0, 1, 0],
                                    [0, 0, 1, 0, 0], [0, 0, 0, 0, 0]], np.float32))  # fmt: skip
    assert hop_levels([0, 1, 2, 3, 4], [0], 3, a) == [0, 1, 2, 3, None]
    assert hop_levels([1, 0, 2], [1], 1, a) == [0, 1, 1]
    assert hop_levels([1, 0, 2, 3], [1], 1, a) == [0, 1, 1, None]  # not within the walk's hops
    assert hop_levels([0, 1, 2], [0], 1, None) == [0, 1, 1]
    assert hop_levels([0, 1, 2], [0], 2, None) == [0, None, None]


def big_walk(n: int) -> list[StepTrace]:
    """Two steps over ``n`` units: seeds 0-2, then hop 1 and hop 2 of step 1, step 2 the rest."""
    half = n // 2
    one = Expansion(tuple(range(half)), (0, 1, 2), 2)
    two = Expansion(tuple(range(half - 5, n)), (half - 5,), 1)
    return [StepTrace("a", None, one.units, one), StepTrace("b", None, two.units, two)]


def test_the_layout_of_200_nodes_is_readable_and_deterministic() -> None:
    n = 200
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, n, size=(800, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    m = sparse.coo_matrix((np.ones(len(pairs), np.float32), (pairs[:, 0], pairs[:, 1])), (n, n))
    layer = sparse.csr_matrix(m + m.T)
    walk = walk_of(big_walk(n), {5, 150}, [], {"ec": layer, "ss": layer})
    assert len(walk.nodes) == n
    at = layout(walk)
    points = np.array([at.positions[node.unit] for node in walk.nodes])
    assert len({tuple(p) for p in points}) == n
    gaps = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1))
    assert gaps[~np.eye(n, dtype=bool)].min() >= ROW_GAP  # no two nodes closer than a row
    assert (points[:, 0] < at.width).all()
    assert (points[:, 1] < at.height).all()
    assert at.height <= 80 + (MAX_ROWS + 1) * ROW_GAP  # columns wrap instead of growing
    assert at.width < 2000
    svg = walk_svg(walk, at, str)
    assert svg == walk_svg(walk_of(big_walk(n), {5, 150}, [], {"ec": layer, "ss": layer}),
                           layout(walk), str)  # fmt: skip
    assert svg.count("<circle") == n + 4  # the nodes and the legend's four marks
    assert all(len([e for e in walk.edges if e.target == u and e.layer == "ec"]) <= 3
               for u in range(n))  # fmt: skip


def test_a_narrow_walk_is_as_wide_as_its_legend() -> None:
    one = sparse.csr_matrix(np.array([[0, 1], [1, 0]], np.float32))
    steps = [StepTrace("q", None, (0, 1), Expansion((0, 1), (0,), 1))]
    walk = walk_of(steps, set(), [], {"ec": one, "ss": one, "sa": one})
    at = layout(walk)
    assert [t for _, t in at.columns] == ["step 1: seeds", "step 1: hop 1"]
    assert legend(walk)[1] <= at.width  # the SA entry is not cut off
    assert f'width="{at.width:.0f}"' in walk_svg(walk, at, str)


def test_rewrite_reasons() -> None:
    notes = Rewriting(True, "pronoun_words", ("it", "his", "that"))
    answered, unanswered = SubAnswer("q", "a", True), SubAnswer("q", "", False)
    steps = [StepTrace("Who is X?", answer=answered), StepTrace("When was his son born?")]
    assert rewrite_reason(steps, 1, notes).startswith("not rewritten: no trigger word")
    assert trigger_words("When was his son born?", notes) == ["his"]
    steps[0] = StepTrace("Who is X?", answer=unanswered)
    assert rewrite_reason(steps, 1, notes) == (
        "not rewritten: the previous sub-question was not answered"
    )
    assert rewrite_reason(steps, 1, Rewriting(False, "pronoun_words")) == (
        "not rewritten: rewriting is off in this recipe"
    )
    confirm = Rewriting(True, "pronoun_words", ("his",), confirm=True)
    steps = [StepTrace("Who is X?", answer=answered), StepTrace("When was his son born?")]
    assert rewrite_reason(steps, 1, confirm) == (
        "not rewritten: the trigger matched “his”, but the LLM did not confirm it"
    )
    assert trigger_words("Is this city big?", Rewriting(True, "substring", ("it",))) == ["it"]


def test_a_walk_without_the_graph_has_the_traces_nodes_and_no_edge() -> None:
    steps = [StepTrace("q", None, (4, 2, 7), Expansion((4, 2, 7), (4,), 2))]
    walk = walk_of(steps, {7}, [9], None)
    assert [(n.unit, n.hop, n.seed, n.gold) for n in walk.nodes] == [
        (4, 0, True, False), (2, None, False, False), (7, None, False, True),
        (9, None, False, True)]  # fmt: skip
    assert walk.edges == ()
    assert not walk.graph
    at = layout(walk)
    assert [t for _, t in at.columns] == ["step 1: seeds", "step 1: hops", "gold, missed"]
    assert math.isfinite(at.height)


def test_two_named_integrators_of_one_kind_show_their_own_answers(
    toy_run: Callable[..., ToyRun],
) -> None:
    """A recipe may give two integrators of one kind, each its own answer name: the view finds
    each one's answer by its name (by its kind, both would show the same answer). The line is
    one written before lines held their method's notes: they come from the run's recipe."""
    run = toy_run()
    recipe = yaml.safe_load((run.folder / "recipe.yaml").read_text(encoding="utf-8"))
    recipe["method"]["integrators"] = [
        {"kind": "cxt_int", "name": "short", "word_budget": 1500},
        {"kind": "cxt_int", "name": "long", "word_budget": 3000},
    ]
    (run.folder / "recipe.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    made = toy_record()
    named = (NamedAnswer("short", Answer("Spain")), NamedAnswer("long", Answer("France")))
    scored = {"short": ScoredAnswer("Spain", 1.0, 1.0), "long": ScoredAnswer("France", 0.0, 0.0)}
    made = attrs.evolve(made, answers=scored, trace=attrs.evolve(made.trace, answers=named))
    line = record_line(attrs.evolve(made, trace=attrs.evolve(made.trace, notes=None)))
    (run.folder / "predictions.jsonl").write_text(json.dumps(line | {"format": 3}) + "\n")
    page, _ = page_of([run.folder])
    chain = page.one("section", class_="question").one("details", class_="method")
    said = [d.text() for d in chain.find_all("div", class_="integrator")]
    assert said[0].startswith("short: CxtInt read") and said[0].endswith(
        "cut at 1500 words, and answered Spain."
    )
    assert said[1].startswith("long: CxtInt read") and said[1].endswith(
        "cut at 3000 words, and answered France."
    )


def test_an_unchecked_verdict_says_so(toy_run: Callable[..., ToyRun]) -> None:
    """The ``none`` judge's verdicts are no check (``Verdict.checked``), and the page says so."""
    run = toy_run()
    made = toy_record()
    first = made.trace.steps[0]
    assert first.expansion is not None
    unchecked = attrs.evolve(first.expansion, verdicts=(Verdict(True, checked=False),))
    steps = (attrs.evolve(first, expansion=unchecked), *made.trace.steps[1:])
    made = attrs.evolve(made, trace=attrs.evolve(made.trace, steps=steps))
    (run.folder / "predictions.jsonl").write_text(json.dumps(record_line(made)) + "\n")
    page, _ = page_of([run.folder])
    one = page.find_all("div", class_="step")[0]
    verdicts = [li.text() for li in one.one("ul", class_="verdicts").find_all("li")]
    assert verdicts == ["after hop 1: not checked (judge: none)"]
