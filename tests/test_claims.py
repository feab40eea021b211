"""docs/claims.json, the figures of docs/results.md's claims page, is what the repository's runs,
probes and reports give: recomputed here by ``chainrag claims``'s code and compared figure by
figure, so a changed run or a number edited by hand fails; and the page's figures are what the
file gives, each written between markers by the same command."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chainrag.claims import CLAIMS_FILE, PAGE, differences, document
from chainrag.claims.markers import FORMATS, figures, fill, stale, unmarked, written
from chainrag.cli.main import app

from .conftest import ROOT


@pytest.fixture(scope="module")
def computed() -> dict[str, Any]:
    return document(ROOT)


def test_the_claims_file_is_what_the_runs_give(computed: dict[str, Any]) -> None:
    stored = json.loads((ROOT / CLAIMS_FILE).read_text(encoding="utf-8"))
    assert differences(stored, computed) == [], "regenerate with: chainrag claims"


def test_a_figure_edited_by_hand_is_named(computed: dict[str, Any]) -> None:
    edited = copy.deepcopy(computed)
    figure = edited["claims"]["frozen"]["one_hop_choose_probabilities_vs_cxtint"]
    given = figure["delta"]
    figure["delta"] = given + 0.01
    del edited["claims"]["walk_and_ablations"]["first_checks"]
    checks = computed["claims"]["walk_and_ablations"]["first_checks"]
    assert set(differences(edited, computed)) == {
        f"claims.walk_and_ablations.first_checks: missing -> {checks}",
        f"claims.frozen.one_hop_choose_probabilities_vs_cxtint.delta: {given + 0.01} -> {given}",
    }


def test_every_comparison_states_what_it_could_detect(computed: dict[str, Any]) -> None:
    """A paired figure carries its detectable difference; one with a goal, the questions the
    goal needs and whether this comparison could have detected it."""
    figures = [f for group in computed["claims"].values() for f in group.values()
               if isinstance(f, dict) and "delta" in f]  # fmt: skip
    assert figures and all("detectable" in f for f in figures)
    goals = [f for f in figures if "goal" in f]
    assert goals and all(
        f["could_detect_goal"] == (f["detectable"] is not None and f["detectable"] <= f["goal"])
        and f["needed_for_goal"] >= computed["claims"]["power"]["floor_needed_for_goal"]
        for f in goals
    )  # fmt: skip


def test_the_next_test_is_planned_from_named_runs(computed: dict[str, Any]) -> None:
    """The spread a next test is planned with is a named stored comparison's, and the plan says
    what excluding 0 needs and what the pre-registered rule needs (a true +3 passes it half the
    time at the n that excludes 0 with 80% power)."""
    frozen = computed["claims"]["frozen"]
    plans = {k: v for k, v in frozen.items() if k.startswith("planning@")}
    assert plans
    for plan in plans.values():
        group, name = plan["sd_from"].split(".")
        assert computed["claims"][group][name]["sd"] == plan["sd"]
        assert plan["rule_chance_at_needed"] == 0.5 and plan["gain_to_pass_at_needed"] > 3.0
        assert plan["needed_for_goal"] >= plan["floor_needed_for_goal"]


# --------------------------------------------------------------------------- the page


def stored_claims() -> dict[str, Any]:
    found: dict[str, Any] = json.loads((ROOT / CLAIMS_FILE).read_text(encoding="utf-8"))
    return found["claims"]


def test_the_page_shows_what_the_claims_file_gives() -> None:
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    assert len(figures(page)) > 150
    assert stale(page, stored_claims()) == [], "write the figures with: chainrag claims"
    assert fill(page, stored_claims()) == page


def test_a_figure_edited_by_hand_on_the_page_is_named() -> None:
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    mark = "<!--c:diff:baselines.cxtint_vs_naive-->"
    shown = written("diff", "baselines.cxtint_vs_naive", stored_claims())
    assert f"{mark}{shown}<!--/c-->" in page
    edited = page.replace(f"{mark}{shown}", f"{mark}{shown.replace('+11.', '+13.')}", 1)
    assert stale(edited, stored_claims()) == [
        f"diff:baselines.cxtint_vs_naive: {shown.replace('+11.', '+13.')!r} -> {shown!r}"
    ]
    assert fill(edited, stored_claims()) == page


def test_a_marker_the_claims_cannot_fill_is_an_error_naming_it() -> None:
    claims = stored_claims()
    with pytest.raises(ValueError, match=r"<!--c:diff:baselines.nothing-->: baselines.nothing: "
                       r"no 'nothing' in the claims file"):  # fmt: skip
        fill("a <!--c:diff:baselines.nothing-->x<!--/c--> b", claims)
    with pytest.raises(ValueError, match=r"unknown format 'dif'"):
        fill("<!--c:dif:baselines.cxtint_vs_naive--><!--/c-->", claims)
    with pytest.raises(ValueError, match=r"<!--c:fewer:cheaper.requests@one_hop-->: takes two"):
        fill("<!--c:fewer:cheaper.requests@one_hop--><!--/c-->", claims)


def test_the_formats_write_the_pages_conventions() -> None:
    claims = stored_claims()
    assert written("diffb", "walk_and_ablations.no_graph_ansint", claims).startswith("**−11.67**")
    assert written("diffb", "baselines.cxtint_vs_iter_retgen", claims) == "+4.05 [−6.0, +14.5]"
    assert written("det", "cheaper.one_hop_cxtint_vs_cxtint", claims) == "6.0 ‡"
    assert written("det", "baselines.cxtint_vs_naive", claims) == "13.4"
    assert written("fewer", "cheaper.requests@one_hop,cheaper.requests@ansint", claims) == "28%"
    assert set(FORMATS) >= {"diff", "diffb", "det", "bws", "int", "range0", "fewer"}


HAND_WRITTEN = {"[−5.6, +21.3]", "[−8.3, +8.3]", "[−16.7, +7.4]", "[+2.5, +13.9]"}
"""The intervals the page writes by hand: the final test's (the repository does not hold its
questions) and the prediction quoted as it was written."""


def test_every_interval_on_the_page_is_written_from_the_claims_file() -> None:
    """An interval typed by hand outside the markers fails, except those the repository
    cannot recompute (:data:`HAND_WRITTEN`)."""
    page = unmarked((ROOT / PAGE).read_text(encoding="utf-8"))
    intervals = set(re.findall(r"\[[−+]?\d+\.\d, [−+]?\d+\.\d\]", page))
    assert intervals == HAND_WRITTEN


def test_check_names_a_figure_edited_on_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``claims --check`` compares the page with the claims file too (the runs' figures are
    taken as the file holds them here, to keep the test short)."""
    stored = json.loads((ROOT / CLAIMS_FILE).read_text(encoding="utf-8"))
    monkeypatch.setattr("chainrag.claims.document", lambda root: stored)
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    (tmp_path / "claims.json").write_text(json.dumps(stored), encoding="utf-8")
    edited = tmp_path / "results.md"
    edited.write_text(page.replace("-->+11.53 [", "-->+13.53 [", 1), encoding="utf-8")
    args = ["claims", "--check", "--out", str(tmp_path / "claims.json"), "--page", str(edited)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 1
    assert "diff:baselines.cxtint_vs_naive: '+13.53 [+2.5, +21.0]' -> '+11.53" in done.output
    assert f"{edited}: 1 figure(s) differ from" in done.output
    written_page = CliRunner().invoke(app, ["claims", "--out", str(tmp_path / "claims.json"),
                                            "--page", str(edited)])  # fmt: skip
    assert written_page.exit_code == 0 and edited.read_text(encoding="utf-8") == page


def test_check_without_a_claims_file_says_how_to_make_it(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["claims", "--check", "--out", str(tmp_path / "none.json")])
    assert done.exit_code == 1 and "no claims file (make it with chainrag claims)" in done.output


def test_usage_past_some_prompts_counts_the_others_a_question() -> None:
    """``usage_on(..., leaving_out=P)`` counts every request but those of the prompts named
    P...; with nothing left out, the run's own totals."""
    from chainrag.claims.figures import answered, requests_on, usage_on
    from chainrag.run.reading import load_run

    folder = ROOT / "docs" / "runs" / "musique" / "ansint"
    ids = answered(folder)
    records = load_run(folder).records
    rewrites = sum(u.calls + u.cache_hits for r in records
                   for p, u in r.trace.usage_by_prompt if p == "rewrite")  # fmt: skip
    assert rewrites > 0
    whole = usage_on(folder, ids)
    assert whole["requests"] == requests_on(folder, ids)
    past = usage_on(folder, ids, leaving_out="rewrite")["requests"]
    assert past == pytest.approx(whole["requests"] - rewrites / len(ids), abs=1e-3)


def test_distinct_passages_names_questions_the_dataset_lacks() -> None:
    from chainrag.claims.figures import distinct_passages
    from chainrag.data.datasets import load_dataset
    from chainrag.run.files import RunError

    first = [q.qid for q in load_dataset("musique[0:2]")]
    held = {(p.title, p.text) for q in load_dataset("musique[0:2]") for p in q.passages}
    assert distinct_passages("musique", frozenset(first)) == len(held)
    with pytest.raises(RunError, match="1 of the 3 questions absent"):
        distinct_passages("musique", frozenset([*first, "no-such-question"]))
