"""ChainRAG's walk over MuSiQue's gold steps, without an LLM (``chainrag experiment
walk-steps``, issue 49)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.context import StageContext
from chainrag.core.context import ModelStore
from chainrag.data.datasets import load_dataset
from chainrag.experiments import walk_steps as ws
from chainrag.experiments.judge import JudgeProbeError
from chainrag.experiments.judge_steps import sub_question
from chainrag.protocols.units import Sentenced
from chainrag.recipes.recipe import load_recipe
from chainrag.run.question import searchable_index

from .conftest import ROOT

VARIANTS = ROOT / "recipes" / "variants"


def recipe_file(tmp_path: Path, judge: str, name: str = "walk", extra: str = "") -> Path:
    """ChainRAG with a cheap hashed embedder and the given sufficiency judge."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"base: {VARIANTS / 'similarity_judge.yaml'}\nname: {name}\n"
        "index: {embedder: {kind: hashed_bow, dim: 128}}\n"
        f"retrieval: {{expander: {{judge: {judge}}}}}\n" + extra
    )
    return path


def test_each_gold_step_is_walked_and_placed_by_where_its_gold_paragraph_was(
    tmp_path: Path,
) -> None:
    recipe = load_recipe(recipe_file(tmp_path, "{kind: similarity, threshold: 0.3}"))
    models = ModelStore()
    for example in load_dataset("musique", 4):
        walks = ws.walk(recipe, example, models)
        steps = [i for i, s in enumerate(example.decomposition) if s.paragraph is not None]
        assert [w.step for w in walks] == [i + 1 for i in steps]
        index = searchable_index(recipe, example, models)
        assert isinstance(index, Sentenced)
        ctx = StageContext(models=models, index=index, retrieval=recipe.retrieval)
        for w, i in zip(walks, steps, strict=True):
            gold = example.decomposition[i].paragraph
            expansion = ctx.retrieve(sub_question(example.decomposition, i))
            assert w.sub_question == sub_question(example.decomposition, i)
            assert w.gold_at_seeds == (gold in ws.passages_of(expansion.seeds, index))
            assert w.reached == (gold in ws.passages_of(expansion.units, index))
            assert (w.hops, w.words) == (expansion.hops, expansion.words)
            assert len(w.scores) == len(expansion.verdicts) >= 1
            assert not w.gold_at_seeds or w.reached  # the seeds stay in the walk
            assert w.on == (w.hops >= 2)


def test_a_judge_that_never_says_yes_sends_every_walk_on_and_none_stops_them(
    tmp_path: Path,
) -> None:
    """The two ends of the threshold: cosine >= 1.01 is never met (each walk goes on until
    the graph or the budget stops it); ``none`` takes one hop."""
    never = load_recipe(recipe_file(tmp_path, "{kind: similarity, threshold: 1.0}", "never"))
    stop = load_recipe(recipe_file(tmp_path, "{kind: none}", "stop"))
    models = ModelStore()
    examples = load_dataset("musique", 3)
    went = [w for e in examples for w in ws.walk(never, e, models)]
    stopped = [w for e in examples for w in ws.walk(stop, e, models)]
    assert all(w.hops == 1 for w in stopped)
    assert sum(w.on for w in went) > 0
    assert all(w.words >= s.words for w, s in zip(went, stopped, strict=True))
    # stopping at the first check is the `none` walk, whichever judge the recipe has
    assert [w.first_check_reached for w in went] == [w.reached for w in stopped]
    assert all(w.first_check_reached == w.reached for w in stopped)
    table = ws.table([*went, *stopped], ["never", "stop"], "musique")
    first, needed = table.split("\n\nThe walks without their gold at the seeds")
    rows = {line.split(" | ")[0].strip("| "): line for line in first.splitlines()[4:]}
    assert rows["stop"].count("| 0 (0%) |") >= 2  # no walk past hop 1, either kind
    off = [w for w in went if not w.gold_at_seeds]
    held = sum(w.first_check_reached for w in off)
    expected = f"| never | {held} | {held} (100%) | {len(off) - held} |"
    assert expected in needed and "| stop |" in needed


def test_the_experiment_saves_a_row_per_labelled_recipe(tmp_path: Path) -> None:
    path = recipe_file(tmp_path, "{kind: similarity, threshold: 0.3}")
    recipes = [("a", load_recipe(path)), ("b", load_recipe(path))]
    seen: list[tuple[str, int, int]] = []
    saved = ws.experiment(recipes, "musique", 2, tmp_path / "out", lambda *a: seen.append(a),
                          ["x=1"])  # fmt: skip
    assert saved.folder.name.startswith("walk-steps-musique-")
    assert "Every recipe with --set x=1." in saved.table
    rows = saved.table.split("\n\n")[1].splitlines()[2:]
    assert [line.split(" | ")[0] for line in rows] == ["| a", "| b"]
    lines = (saved.folder / "probes.jsonl").read_text().splitlines()
    walked = [json.loads(line) for line in lines]
    assert {w["recipe"] for w in walked} == {"a", "b"} and len(walked) % 2 == 0
    assert seen[0] == ("walking a", 0, 2) and seen[-1] == ("walking b", 2, 2)
    with pytest.raises(JudgeProbeError, match="recipes given twice: a, a"):
        ws.experiment([recipes[0], recipes[0]], "musique", 1, tmp_path)


def test_recipes_that_cannot_walk_without_an_llm_are_refused(tmp_path: Path) -> None:
    llm_judge = load_recipe(recipe_file(tmp_path, "{kind: llm_yes_no}", "asks"))
    with pytest.raises(JudgeProbeError, match=r"its walk asks an LLM .*judge that needs none"):
        ws.experiment([("asks", llm_judge)], "musique", 1, tmp_path)
    naive = load_recipe(ROOT / "recipes" / "baselines" / "naive.yaml")
    with pytest.raises(JudgeProbeError, match="'naive' has no expander"):
        ws.experiment([("naive", naive)], "musique", 1, tmp_path)
    hotpot = load_recipe(recipe_file(tmp_path, "{kind: none}"))
    with pytest.raises(JudgeProbeError, match="no gold decomposition"):
        ws.experiment([("x", hotpot)], "hotpotqa", 1, tmp_path)


def test_the_command_varies_one_field_a_row_each(tmp_path: Path) -> None:
    path = recipe_file(tmp_path, "{kind: similarity, threshold: 0.3}")
    field = "retrieval.expander.judge.threshold"
    result = CliRunner().invoke(app, [
        "experiment", "walk-steps", str(path), "--dataset", "musique", "--limit", "2",
        "--vary", f"{field}=0.2,1.0", "--set", "retrieval.seed.k=2",
        "--out-dir", str(tmp_path / "out"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"| walk[{field}=0.2] |" in result.output
    assert f"| walk[{field}=1.0] |" in result.output
    assert "Every recipe with --set retrieval.seed.k=2." in result.output
    bad = CliRunner().invoke(app, ["experiment", "walk-steps", str(path), "--vary", "k"])
    assert bad.exit_code == 1 and "--vary k: expected PATH=V1,V2" in bad.output
    wrong = CliRunner().invoke(app, ["experiment", "walk-steps", str(path), "--vary",
                                     "retrieval.expander.judge.threshold=2"])  # fmt: skip
    assert wrong.exit_code == 1 and "threshold" in wrong.output


def test_a_step_walk_is_plain_data() -> None:
    walk = ws.StepWalk("r", "q", 1, "Who?", False, 2, True, 120, False, (0.5, None), False)
    assert walk.on and attrs.asdict(walk)["scores"] == (0.5, None)
