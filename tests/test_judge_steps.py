"""The step-level sufficiency probe (``chainrag experiment judge-steps``, issue 49) and the
judge that reads P(yes) from the first token's log-probabilities (``llm_yes_probability``)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.retrieval.judges import LLMYesProbability, SimilarityJudge, yes_share
from chainrag.context import StageContext
from chainrag.core.types import GoldStep, LLMRequest, LLMResponse, Verdict
from chainrag.data.datasets import load_dataset
from chainrag.experiments import judge_steps as js
from chainrag.llm.fake import ScriptedLLM
from chainrag.protocols.context import Context
from chainrag.run.record import CONVERTER, plain, structured

from .conftest import ROOT

EMBEDDER = HashedBagOfWords(dim=256)


def test_a_sub_question_takes_the_earlier_gold_answers_and_reads_wikidata_steps() -> None:
    steps = (
        GoldStep("Where was Representative Thomas Tucker from?", "South Carolina", 1),
        GoldStep("What city became the state capital of #1 ?", "Columbia", 14),
        GoldStep("#2 >> shares border with", "Forest Acres", 19),
        GoldStep("Where is #9 ?", "x", 2),
    )
    assert js.sub_question(steps, 0) == "Where was Representative Thomas Tucker from?"
    assert js.sub_question(steps, 1) == "What city became the state capital of South Carolina ?"
    assert js.sub_question(steps, 2) == "What is the shares border with of Columbia?"
    assert js.sub_question(steps, 3) == "Where is #9 ?"  # a reference to no step stays


def test_each_step_has_a_sufficient_and_an_insufficient_probe_of_equal_size() -> None:
    ctx = StageContext()
    for example in load_dataset("musique", 5):
        found = js.drafts(example, EMBEDDER, ctx)
        steps = [s for s in example.decomposition if s.paragraph is not None]
        assert len(found) == 2 * len(steps)
        for sufficient, insufficient in zip(found[::2], found[1::2], strict=True):
            gold = example.decomposition[sufficient.step - 1].paragraph
            assert sufficient.sufficient and not insufficient.sufficient
            assert gold in sufficient.paragraphs and gold not in insufficient.paragraphs
            assert len(sufficient.paragraphs) == len(insufficient.paragraphs) == 2
            # the sufficient probe swaps the second-best other paragraph for the gold one
            assert len(set(sufficient.paragraphs) & set(insufficient.paragraphs)) == 1
            assert sufficient.texts[0].startswith(example.passages[sufficient.paragraphs[0]].title)


def test_roc_auc_is_sklearns_with_ties_and_nan_without_both_classes() -> None:
    from sklearn.metrics import roc_auc_score

    rng = random.Random(3)
    for _ in range(20):
        labels = [rng.random() < 0.4 for _ in range(40)]
        scores = [float(rng.randint(0, 5)) for _ in range(40)]  # many ties
        if len(set(labels)) == 2:
            assert js.roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    assert math.isnan(js.roc_auc([0.1, 0.2], [True, True]))


def test_the_threshold_is_the_one_with_the_best_balanced_accuracy() -> None:
    assert js.best_threshold([0.1, 0.2, 0.7, 0.9], [False, False, True, True]) == 0.7
    # one positive among many negatives: balanced accuracy, not accuracy, decides
    assert js.best_threshold([0.1, 0.2, 0.3, 0.4, 0.35], [False] * 4 + [True]) == 0.35


def top(p_yes: float) -> tuple[tuple[str, float], ...]:
    return (("Yes", math.log(p_yes)), (" no", math.log(1 - p_yes)))


def test_yes_share_adds_tokens_that_read_alike_and_is_half_without_either() -> None:
    tokens = (("Yes", math.log(0.3)), (" yes", math.log(0.3)), ("No", math.log(0.2)), ("Maybe", 0))
    reply = LLMResponse("Yes", "m", top_logprobs=tokens)
    assert yes_share(reply) == pytest.approx(0.75)
    assert yes_share(LLMResponse("?", "m", top_logprobs=(("Maybe", 0.0),))) == 0.5


def test_the_probability_judge_says_yes_at_its_threshold_and_keeps_its_score() -> None:
    replies = [LLMResponse("Yes", "m", top_logprobs=top(0.6)) for _ in range(2)]
    llm = ScriptedLLM({"sufficiency": replies})
    ctx = StageContext(llm=llm)
    strict, lenient = LLMYesProbability(threshold=0.7), LLMYesProbability(threshold=0.6)
    said = strict("Who?", ["a sentence"], ctx), lenient("Who?", ["a sentence"], ctx)
    assert [v.ok for v in said] == [False, True]  # the reply says yes; P(yes) 0.6 decides
    assert said[0].score == pytest.approx(0.6) and said[0].raw == "Yes"
    assert all(r.top_logprobs == 10 for r in llm.requests)
    with pytest.raises(ValueError, match="threshold"):
        LLMYesProbability(threshold=1.5)


def test_a_record_keeps_a_verdicts_score_only_where_there_is_one() -> None:
    scored = Verdict(False, "Yes", score=0.25)
    assert plain(scored) == {"ok": False, "raw": "Yes", "score": 0.25}
    assert plain(Verdict(True, "yes")) == {"ok": True, "raw": "yes"}
    assert structured(plain(scored), Verdict, "verdict", CONVERTER) == scored


def reading_judge(answers: dict[str, str], always_yes: bool = False):  # type: ignore[no-untyped-def]
    """A scripted judge whose P(yes) is 0.9 where the evidence names the step's gold answer,
    0.2 elsewhere; its reply says yes always (as the 1.5B model nearly does) or as P(yes)."""

    def reply(request: LLMRequest) -> LLMResponse:
        text = request.messages[-1].content
        question = text.rsplit("Question: ", 1)[1].split("\n")[0]
        p = 0.9 if answers[question].lower() in text.rsplit("Question: ", 1)[0].lower() else 0.2
        return LLMResponse("Yes" if always_yes or p > 0.5 else "No", "m", top_logprobs=top(p))

    return reply


def test_probes_separate_a_judge_that_reads_from_one_that_always_says_yes() -> None:
    examples = load_dataset("musique", 8)
    train = load_dataset("musique_train", 8)
    answers = {
        js.sub_question(e.decomposition, i): s.answer
        for e in [*examples, *train]
        for i, s in enumerate(e.decomposition)
    }
    ctx = StageContext(llm=ScriptedLLM({"sufficiency": reading_judge(answers, always_yes=True)}))
    measured = js.probe("musique", examples, EMBEDDER, ctx)
    trained = js.probe("musique_train", train, EMBEDDER, ctx)
    assert {p.split for p in measured} == {"musique"} and len(measured) % 2 == 0
    rows = {r.judge: r for r in js.rows(measured, trained)}
    assert set(rows) == set(js.JUDGES)
    reply = rows["llm_yes_no"]  # says yes to everything: no order at all
    assert (reply.auc, reply.yes_insufficient, reply.yes_sufficient) == (0.5, 100.0, 100.0)
    assert reply.threshold is None
    # P(yes) is high where the gold answer is in the evidence, which the gold paragraph
    # nearly always holds: far better than chance, and its threshold came from training
    assert rows["P(yes)"].auc > 0.8 and rows["P(yes)"].threshold == pytest.approx(0.9)
    assert rows["P(yes)"].yes_insufficient < 50 < rows["P(yes)"].yes_sufficient
    low, high = rows["P(yes)"].interval
    assert low <= rows["P(yes)"].auc <= high
    assert rows["combined"].auc > 0.8
    text = js.table(measured, trained, "r.yaml")
    assert text.startswith("Sufficiency judges on musique sub-questions, thresholds chosen on "
                           "musique_train")  # fmt: skip
    assert "| llm_yes_no | 0.500 |" in text and "| its reply |" in text


def test_the_features_read_the_probability_as_a_clipped_logit() -> None:
    p = js.StepProbe("s", "q", 1, "Who?", True, (0, 1), 10, True, 1.0, 0.5, 0.25, "Yes")
    row = js.features([p])[0]
    assert row[0] == pytest.approx(math.log((1 - 1e-6) / 1e-6)) and list(row[1:]) == [0.5, 0.25]
    assert np.isfinite(row).all()


def test_the_command_refuses_a_dataset_without_decompositions_before_any_llm(
    tmp_path: Path,
) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"base: {ROOT / 'recipes' / 'chainrag' / 'ansint.yaml'}\n"
        "index: {embedder: {kind: hashed_bow, dim: 32}}\n"
        "llm: {kind: litellm, model: openai/none, api_base: 'http://127.0.0.1:9/v1'}\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "experiment",
            "judge-steps",
            str(recipe),
            "--dataset",
            "hotpotqa",
            "--limit",
            "2",
            "--train",
            "",
            "--out-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "dataset 'hotpotqa' has no gold decomposition" in result.output
    assert not list(tmp_path.glob("judge-steps-*"))


def test_longer_probes_hold_more_paragraphs_and_the_same_gold_rule() -> None:
    """--paragraphs N: the sufficient probe is the gold paragraph and the N - 1 best others,
    the insufficient one the N best others (walk-length evidence)."""
    ctx = StageContext()
    example = load_dataset("musique", 1)[0]
    found = js.drafts(example, EMBEDDER, ctx, paragraphs=6)
    for sufficient, insufficient in zip(found[::2], found[1::2], strict=True):
        gold = example.decomposition[sufficient.step - 1].paragraph
        assert len(sufficient.paragraphs) == len(insufficient.paragraphs) == 6
        assert gold in sufficient.paragraphs and gold not in insufficient.paragraphs
        assert len(set(sufficient.paragraphs) & set(insufficient.paragraphs)) == 5
    assert js.drafts(example, EMBEDDER, ctx, paragraphs=len(example.passages)) == []
    says_yes = StageContext(llm=ScriptedLLM({"sufficiency": lambda r: "Yes"}))
    probes = js.probe("musique", [example], EMBEDDER, says_yes, paragraphs=6)
    assert "6 paragraphs a probe" in js.table(probes, [], "r.yaml")


@attrs.define
class CountingEmbedder:
    """HashedBagOfWords that records the texts it embeds."""

    embedded: list[str] = attrs.field(factory=list)

    def __call__(self, texts: Sequence[str], ctx: Context, role: str = "passage") -> np.ndarray:
        self.embedded.extend(texts)
        return EMBEDDER(texts, ctx, role)  # type: ignore[arg-type]


@attrs.frozen
class ToyIndex:
    texts: tuple[str, ...]
    embeddings: np.ndarray
    embedder: CountingEmbedder


def test_the_similarity_judge_says_yes_at_its_threshold_from_the_index_embeddings() -> None:
    """The best cosine over the evidence, read from the index for its units (only the question
    and a text that is no unit are embedded), and "yes" exactly from the threshold up."""
    ctx = StageContext()
    texts = ("Paris is the capital of France.", "Berlin is in Germany.", "Rome is old.")
    counting = CountingEmbedder()
    ctx.index = ToyIndex(texts, EMBEDDER(texts, ctx), counting)  # type: ignore[assignment]
    question = "What is the capital of France?"
    query = EMBEDDER([question], ctx, "query")[0]
    evidence = [texts[1], texts[0], "Madrid is in Spain."]
    best = float(max(EMBEDDER(evidence, ctx) @ query))
    assert best == pytest.approx(float(EMBEDDER([texts[0]], ctx)[0] @ query))
    verdict = SimilarityJudge(threshold=best)(question, evidence, ctx)
    assert verdict.ok and verdict.score == pytest.approx(best)
    assert verdict.raw.startswith("yes (best cosine ")  # read as a reply by chainrag walks
    assert counting.embedded == [question, "Madrid is in Spain."]
    below = SimilarityJudge(threshold=best + 1e-4)(question, evidence, ctx)
    assert not below.ok and below.raw.startswith("no (")
    assert not SimilarityJudge(threshold=-1.0)(question, [], ctx).ok


def test_sentence_similarity_is_the_best_sentence_of_a_probes_paragraphs() -> None:
    """--similarity-units sentences: the same probes (paragraphs ranked as before), each
    scored by the best cosine of a sentence of its paragraphs."""
    from chainrag.components.index.spacy_nlp import SpacySentences

    ctx = StageContext()
    example = load_dataset("musique", 1)[0]
    splitter = SpacySentences()
    by_paragraph = js.drafts(example, EMBEDDER, ctx, paragraphs=3)
    by_sentence = js.drafts(example, EMBEDDER, ctx, paragraphs=3, splitter=splitter)
    assert [d.paragraphs for d in by_sentence] == [d.paragraphs for d in by_paragraph]
    sentences = splitter(example.passages, ctx)
    for draft in by_sentence:
        mine = [s.text for s in sentences if s.passage in draft.paragraphs]
        query = EMBEDDER([draft.sub_question], ctx, "query")[0]
        assert draft.similarity == pytest.approx(float(max(EMBEDDER(mine, ctx) @ query)))
    assert any(
        s.similarity != pytest.approx(p.similarity)
        for s, p in zip(by_sentence, by_paragraph, strict=True)
    )
    with pytest.raises(js.JudgeProbeError, match="similarity units 'words'"):
        js.units_given("words")
