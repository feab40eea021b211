from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.context import StageContext
from chainrag.data.datasets import load_dataset
from chainrag.experiments.lost_in_retrieval import (
    fill,
    natural_question,
    probes_of,
    pronoun_phrase,
    run,
    table,
)


@pytest.mark.parametrize(
    ("step", "question"),
    [
        ("Levi Casey >> place of birth", "Where was Levi Casey born?"),
        ("#1 >> located in the administrative territorial entity",
         "Which administrative territorial entity is #1 located in?"),
        ("#2 >> shares border with", "What shares a border with #2?"),
        ("Green >> performer", "Who is the performer of Green?"),
        ("X >> licensed to broadcast to", "What is the licensed to broadcast to of X?"),
        ("Who wrote Hamlet?", "Who wrote Hamlet?"),
    ],
)  # fmt: skip
def test_natural_question(step: str, question: str) -> None:
    assert natural_question(step) == question


@pytest.mark.parametrize(
    ("step1", "phrase"),
    [
        ("A Treatise Concerning the Principles of Human Knowledge >> author", "this author"),
        ("Levi Casey >> place of birth", "this place"),
        ("who played thelma in the movie thelma and louise", "this person"),
        ("Where was Representative Thomas Tucker from?", "this place"),
        ("What city is the capital?", "this city"),
        ("What is the capital of France?", "it"),
        ("When did it happen?", "that time"),
        ("In which province is it?", "it"),
    ],
)
def test_pronoun_phrase(step1: str, phrase: str) -> None:
    assert pronoun_phrase(step1) == phrase


def test_fill_removes_musique_spacing() -> None:
    assert fill("What city became the state capital of #1 ?", "this place") == (
        "What city became the state capital of this place?"
    )


def test_probes_on_real_questions() -> None:
    examples = load_dataset("musique")
    usable = [p for p in map(probes_of, examples) if p is not None]
    assert len(usable) >= 90
    first = probes_of(examples[0])
    assert first == (
        "Where was Representative Thomas Tucker from?",
        "What city became the state capital of this place?",
        "What city became the state capital of South Carolina?",
    )
    for _, pronoun, answer in usable:
        assert "#1" not in pronoun and "#1" not in answer


def test_run_and_table() -> None:
    probes = run(load_dataset("musique", limit=8), HashedBagOfWords(dim=512), StageContext())
    assert 0 < len(probes) <= 8
    text = table(probes, "musique")
    assert f"| probe ({len(probes)} questions) |" in text
    assert "40.91 (sub-question 2 (original))" in text


def test_experiment_command(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("index: {embedder: {kind: hashed_bow, dim: 128}}\n")
    result = CliRunner().invoke(app, [
        "experiment", "lost-in-retrieval", "--recipe", str(recipe), "--limit", "5",
        "--out", str(tmp_path / "runs"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    saved = list((tmp_path / "runs").iterdir())
    assert len(saved) == 1
    assert {p.name for p in saved[0].iterdir()} == {"table.md", "recipe.yaml", "probes.jsonl"}
    bad = CliRunner().invoke(app, ["experiment", "lost-in-retrieval", "--dataset", "hotpotqa",
                                   "--recipe", str(recipe), "--out", str(tmp_path)])  # fmt: skip
    assert bad.exit_code == 1 and "no gold decompositions" in bad.output


def test_experiment_saves_the_table_it_returns(tmp_path: Path) -> None:
    import json

    from chainrag.experiments.lost_in_retrieval import LostInRetrievalError, experiment

    recipe = tmp_path / "r.yaml"
    recipe.write_text("index: {embedder: {kind: hashed_bow, dim: 128}}\n")
    seen: list[tuple[str, int, int]] = []
    saved = experiment(recipe, "musique", 3, tmp_path / "runs", lambda *a: seen.append(a))
    assert saved.folder.name.startswith("lost-in-retrieval-musique-")
    assert saved.table == table(
        run(load_dataset("musique", 3), HashedBagOfWords(dim=128), StageContext()), "musique"
    )
    assert (saved.folder / "table.md").read_text() == saved.table + "\n"
    probes = [json.loads(x) for x in (saved.folder / "probes.jsonl").read_text().splitlines()]
    assert [p["qid"] for p in probes] == [q.qid for q in load_dataset("musique", 3)]
    assert seen[0] == ("probing", 0, 3) and seen[-1] == ("probing", 3, 3)
    bare = tmp_path / "bare.yaml"
    bare.write_text("index: null\n")
    with pytest.raises(LostInRetrievalError, match=f"^{bare} has no index.embedder$"):
        experiment(bare, "musique", 1, tmp_path)
    with pytest.raises(LostInRetrievalError, match=r"^hotpotqa has no gold decompositions"):
        experiment(recipe, "hotpotqa", 2, tmp_path)


def test_the_long_setting_is_compared_with_the_papers_table(tmp_path: Path) -> None:
    """long:musique is the length the paper's Table 2 was measured at: its figures stand
    beside ours; the folder name has no colon."""
    from chainrag.experiments.lost_in_retrieval import experiment

    recipe = tmp_path / "r.yaml"
    recipe.write_text("index: {embedder: {kind: hashed_bow, dim: 128}}\n")
    saved = experiment(recipe, "long:musique", 2, tmp_path / "runs")
    assert saved.folder.name.startswith("lost-in-retrieval-long-musique-")
    assert "n/a" not in saved.table and "(sub-question 1)" in saved.table
