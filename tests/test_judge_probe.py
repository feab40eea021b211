"""The sufficiency-judge probe (``chainrag experiment judge``) on real dev questions."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.retrieval.judges import LLMYesNo
from chainrag.context import StageContext
from chainrag.core.types import LLMRequest
from chainrag.data.datasets import load_dataset
from chainrag.experiments import judge as jp
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.recipe import load_recipe

from .conftest import ROOT


@pytest.mark.parametrize("dataset", ["musique", "hotpotqa", "2wiki"])
def test_evidence_sets_are_gold_gold_minus_one_and_as_many_distractors(dataset: str) -> None:
    for example in load_dataset(dataset, 5):
        gold = jp.gold_passages(example)
        assert gold, example.qid
        sets = jp.evidence_sets(example)
        texts = [f"{p.title}: {p.text}" if p.title else p.text for p in example.passages]
        assert sets["all gold"] == [texts[i] for i in gold]
        assert sets["gold minus one"] == [texts[i] for i in gold[:-1]]
        assert len(sets["distractors"]) == len(gold)
        assert not set(sets["distractors"]) & set(sets["all gold"])


def asked(request: LLMRequest) -> tuple[str, str]:
    """The question a judge's request asks, and the request's whole user text."""
    text = request.messages[-1].content
    return text.rsplit("Question: ", 1)[1].split("\n")[0], text


def test_probe_tells_a_judge_that_reads_from_one_that_always_says_yes() -> None:
    examples = load_dataset("musique", 4)
    answers = {e.question: e.answers[0] for e in examples}

    def reads(request: LLMRequest) -> str:
        question, text = asked(request)
        return "yes" if answers[question] in text else "no"

    careful = jp.run(LLMYesNo(), examples, StageContext(llm=ScriptedLLM({"sufficiency": reads})))
    always = jp.run(LLMYesNo(), examples,
                    StageContext(llm=ScriptedLLM({"sufficiency": lambda r: "Yes."})))  # fmt: skip
    assert len(careful) == len(always) == 3 * len(examples)
    assert all(p.said_yes for p in always)
    assert "Discrimination, yes(all gold) − yes(distractors): +0.0 points" in jp.table(
        always, "musique", "always"
    )
    by = {(p.qid, p.evidence_set): p.said_yes for p in careful}
    assert all(by[(e.qid, "all gold")] for e in examples)  # the answer is in the gold text
    assert not any(by[(e.qid, "distractors")] for e in examples)
    assert "+100.0 points" in jp.table(careful, "musique", "careful")


def test_judge_command_refuses_a_recipe_without_a_judge(tmp_path: Path) -> None:
    assert load_recipe(ROOT / "recipes" / "baselines" / "naive.yaml").retrieval is not None
    result = CliRunner().invoke(
        app,
        ["experiment", "judge", "--recipe", str(ROOT / "recipes" / "baselines" / "naive.yaml"),
         "--limit", "1", "--out", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "has no sufficiency judge" in result.output


def test_answerable_judge_says_no_exactly_when_the_answer_is_unanswerable() -> None:
    from chainrag.components.reasoning.answerers import LLMAnswerable

    examples = load_dataset("musique", 3)
    answers = {e.question: e.answers[0] for e in examples}

    def answer(request: LLMRequest) -> str:
        question, text = asked(request)
        return answers[question] if answers[question] in text else "Unanswerable."

    llm = ScriptedLLM({"answer_sub": answer})
    probes = jp.run(LLMAnswerable(), examples, StageContext(llm=llm))
    assert {r.prompt_id for r in llm.requests} == {"answer_sub"}
    by = {(p.qid, p.evidence_set): p for p in probes}
    for e in examples:
        assert by[(e.qid, "all gold")].said_yes and by[(e.qid, "all gold")].raw == e.answers[0]
        assert not by[(e.qid, "distractors")].said_yes


def test_run_llm_probe_asks_the_recipes_llm_and_saves_what_it_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's library function end to end, against a local fake OpenAI server."""
    import json

    from chainrag.experiments.probes import SavedProbes, run_llm_probe
    from chainrag.standin.server import FakeOpenAI, serve

    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    fake = FakeOpenAI([], reply="Yes.")
    seen: list[tuple[str, int, int]] = []
    with serve(fake) as api_base:
        recipe = tmp_path / "judge.yaml"
        recipe.write_text(
            f"base: {ROOT / 'recipes' / 'chainrag' / 'ansint.yaml'}\n"
            f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}'}}\n"
        )
        saved = run_llm_probe(jp.PROBE, recipe, "musique", 2, tmp_path / "runs", "use",
                              lambda *a: seen.append(a))  # fmt: skip
    assert isinstance(saved, SavedProbes)
    assert saved.folder.parent == tmp_path / "runs" and saved.folder.name.startswith(
        "judge-musique-"
    )
    assert seen == [("probing", 0, 2), ("probing", 1, 2), ("probing", 2, 2)]
    assert len(fake.bodies) == 6  # three evidence sets per question
    assert saved.table.startswith("Sufficiency judge ") and "(2 questions)" in saved.table
    assert "yes(all gold) − yes(distractors): +0.0 points" in saved.table
    assert (saved.folder / "table.md").read_text() == saved.table + "\n"
    lines = (saved.folder / "probes.jsonl").read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(x)["said_yes"] for x in lines)
    assert load_recipe(saved.folder / "recipe.yaml").llm.model == "openai/fake-model"
    assert (tmp_path / "cache" / "llm-cache.sqlite").is_file()  # paths.llm_cache_path()


def test_run_llm_probe_names_a_recipe_without_the_component(tmp_path: Path) -> None:
    from chainrag.experiments.probes import run_llm_probe

    naive = ROOT / "recipes" / "baselines" / "naive.yaml"
    with pytest.raises(jp.JudgeProbeError, match="recipe 'naive' has no sufficiency judge"):
        run_llm_probe(jp.PROBE, naive, "musique", 1, tmp_path)
    assert not list(tmp_path.iterdir())


def test_counted_reports_before_the_first_and_after_each() -> None:
    from chainrag.experiments.probes import counted

    seen: list[tuple[str, int, int]] = []
    assert list(counted("ab", lambda *a: seen.append(a), "q")) == ["a", "b"]
    assert seen == [("q", 0, 2), ("q", 1, 2), ("q", 2, 2)]
    assert list(counted([], None)) == []
