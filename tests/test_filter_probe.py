"""The knowledge-filter probe (``chainrag experiment filter``) on real dev questions."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.knowledge.knowledge import KeepAll, LLMNLIFilter
from chainrag.context import StageContext
from chainrag.core.types import LLMRequest
from chainrag.data.datasets import load_dataset
from chainrag.experiments import filter_probe as fp
from chainrag.experiments.judge import gold_passages
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.recipe import load_recipe

from .conftest import ROOT


@pytest.mark.parametrize("dataset", ["musique", "hotpotqa", "2wiki"])
def test_items_are_each_gold_paragraph_and_as_many_distractors(dataset: str) -> None:
    for example in load_dataset(dataset, 5):
        gold = gold_passages(example)
        found = fp.items(example)
        kinds = [kind for kind, _ in found]
        assert kinds == ["gold"] * len(gold) + ["distractor"] * len(gold)
        sources = [item.source for _, item in found]
        assert sources[: len(gold)] == gold
        assert not set(sources[len(gold) :]) & set(gold)
        for _, item in found:
            assert item.source is not None
            assert item.text == example.passages[item.source].text


def test_probe_tells_a_filter_that_reads_from_one_that_keeps_everything() -> None:
    examples = load_dataset("musique", 4)
    gold_texts = {e.passages[i].text for e in examples for i in gold_passages(e)}

    def reads(request: LLMRequest) -> str:
        knowledge = request.messages[-1].content.rsplit("Knowledge: ", 1)[1].split("\nLabel:")[0]
        return "entailment" if knowledge in gold_texts else "Neutral."

    careful = fp.run(LLMNLIFilter(), examples, StageContext(llm=ScriptedLLM({"nli": reads})))
    everything = fp.run(KeepAll(), examples, StageContext())
    assert len(careful) == len(everything) == sum(2 * len(gold_passages(e)) for e in examples)
    assert all(p.kept for p in everything)
    assert all(p.kept == (p.kind == "gold") for p in careful)
    assert "kept(gold) − kept(distractor): +100.0 points" in fp.table(careful, "musique", "c")
    assert "+0.0 points" in fp.table(everything, "musique", "all")
    assert "Questions with nothing kept: 0 of 4." in fp.table(careful, "musique", "c")
    neutral = ScriptedLLM({"nli": lambda r: "neutral"})
    nothing = fp.run(LLMNLIFilter(), examples, StageContext(llm=neutral))
    assert "Questions with nothing kept: 4 of 4." in fp.table(nothing, "musique", "none")


def test_filter_command_refuses_a_recipe_without_a_filter(tmp_path: Path) -> None:
    naive = ROOT / "recipes" / "baselines" / "naive.yaml"
    assert load_recipe(naive).method is not None
    result = CliRunner().invoke(
        app,
        ["experiment", "filter", "--recipe", str(naive), "--limit", "1", "--out", str(tmp_path)],
    )
    assert result.exit_code == 1
    assert "has no knowledge filter" in result.output
    assert not list(tmp_path.iterdir())
