"""docs/claims.json, the figures of docs/results.md's claims page, is what the repository's runs,
probes and reports give: recomputed here by ``chainrag claims``'s code and compared figure by
figure, so a changed run or a number edited by hand fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chainrag.claims import CLAIMS_FILE, differences, document
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
        and f["needed_for_goal"] >= 2 for f in goals
    )  # fmt: skip


def test_check_without_a_claims_file_says_how_to_make_it(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["claims", "--check", "--out", str(tmp_path / "none.json")])
    assert done.exit_code == 1 and "no claims file (make it with chainrag claims)" in done.output
