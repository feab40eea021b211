"""The Python API: ``import chainrag`` stays light; load_recipe, run, report and ask do what
the command line does and return typed values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import chainrag
from chainrag.core.errors import RecipeError
from chainrag.recipes.recipe import Recipe
from chainrag.report.runs import Run
from chainrag.run.record import RunRecord
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT
from .test_runs import fake_llm_recipe


def test_import_chainrag_loads_no_heavy_package() -> None:
    code = (
        "import sys, chainrag; "
        "print([m for m in ('torch', 'spacy', 'litellm', 'numpy', 'chainrag.api') "
        "if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert set(chainrag.__all__) >= {"ask", "load_recipe", "report", "run"}
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = chainrag.nothing  # type: ignore[attr-defined]


def test_load_recipe_is_typed_and_checked(tmp_path: Path) -> None:
    recipe = chainrag.load_recipe(ROOT / "recipes" / "chainrag" / "ansint.yaml")
    assert isinstance(recipe, Recipe) and recipe.name == "ansint"
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\nretrieval: 3\n")
    with pytest.raises(RecipeError, match="retrieval"):
        chainrag.load_recipe(bad)


def test_run_returns_typed_records_resumes_and_reports(tmp_path: Path) -> None:
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        path = fake_llm_recipe(tmp_path, api_base)
        runs = chainrag.run(path, "musique", limit=3, out=tmp_path / "runs", progress=False)
        assert len(runs) == 1 and isinstance(runs[0], Run)
        assert runs[0].folder == tmp_path / "runs" / "musique" / "naive"
        records = runs[0].records
        assert len(records) == 3 and all(isinstance(r, RunRecord) for r in records)
        assert records[0].scored.text == "Paris"
        calls = len(fake.bodies)
        again = chainrag.run(path, "musique", limit=3, out=tmp_path / "runs", progress=False)
        assert len(again[0].records) == 3 and len(fake.bodies) == calls  # resumed: no call
    text = chainrag.report(runs)
    assert "NaiveRAG" in text and "musique" in text
    assert chainrag.report([tmp_path / "runs"]) == text


def test_ask_answers_one_question_over_given_passages(tmp_path: Path) -> None:
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        path = fake_llm_recipe(tmp_path, api_base)
        passages = [("France", "Paris is the capital of France."), "Berlin is in Germany."]
        answer = chainrag.ask(path, "What is the capital of France?", passages)
        assert isinstance(answer, chainrag.api.Answer)
        assert answer.text == "Paris" and list(answer.answers) == ["naive"]
        assert any("Paris is the capital" in unit for unit in answer.units)
        assert answer.trace.usage.calls == 1
        with pytest.raises(ValueError, match="at least one passage"):
            chainrag.ask(path, "Why?", [])
