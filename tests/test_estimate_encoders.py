"""``chainrag run --estimate`` adds the remote encoders' embedding tokens, rerank searches and
dollars, a question and for the whole plan: measured from the records' encoder usage (texts the
store held counted as a run from an empty store would send them), else modelled per question,
and the table says which."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.types import EncoderUsage, Passage, QAExample, StepTrace
from chainrag.recipes.overrides import encoder_changes, load_changed, parse_all
from chainrag.run.encoder_costs import encoder_estimates
from chainrag.run.extrapolation import Basis, encoder_table, extrapolate
from chainrag.standin.replies import standin_reply
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT
from .run_records import record

PAPER = load_changed(ROOT / "recipes" / "chainrag" / "ansint.yaml",
                     parse_all(encoder_changes("text-embedding-3-small",
                                               "cohere/rerank-english-v3.0")))  # fmt: skip


def test_measured_usage_is_priced_at_litellms_map_as_from_an_empty_store() -> None:
    first = record("q1", {"a": 1.0}, encoders={
        "embed passages": EncoderUsage(requests=1, tokens=1000, sent=10),
        "embed queries": EncoderUsage(requests=1, tokens=20, sent=2),
        "rerank": EncoderUsage(requests=2, searches=2, sent=200)})  # fmt: skip
    second = record("q2", {"a": 1.0}, encoders={
        "embed passages": EncoderUsage(requests=1, tokens=600, sent=6, stored=4),
        "embed queries": EncoderUsage(stored=2),
        "rerank": EncoderUsage(requests=1, searches=1, sent=100, stored=100)})  # fmt: skip
    embedder, reranker = encoder_estimates(PAPER, [first, second], (), 100)
    assert (embedder.path, embedder.model) == ("index.embedder", "openai/text-embedding-3-small")
    # 1620 tokens over 18 texts sent: 90 a text; the second's 6 stored texts at that rate
    assert embedder.basis == "measured"
    assert embedder.tokens_each.mean == pytest.approx((1020 + 600 + 6 * 90) / 2)
    assert embedder.tokens == pytest.approx(108_000)
    assert embedder.dollars is not None
    assert embedder.dollars.mean == pytest.approx(108_000 * 0.02 / 1e6)  # $0.02 a million
    assert embedder.searches_each.mean == 0
    # 3 searches over 300 documents sent; the second's 100 stored: one more search
    assert reranker.path == "retrieval.seed.reranker" and reranker.basis == "measured"
    assert reranker.searches_each.mean == pytest.approx(2.0) and reranker.searches == 200
    assert reranker.dollars is not None and reranker.dollars.mean == pytest.approx(0.4)  # $2/1k


def test_without_encoder_usage_the_per_question_model_counts_passages_and_queries() -> None:
    steps = (StepTrace("Who founded it?", retrieved=(0, 1)),
             StepTrace("When?", rewritten="When was Lyon founded?", retrieved=(2,)),
             StepTrace("Known", retrieved=(3,), from_memory=True))  # fmt: skip
    answered = record("q1", {"a": 1.0}, steps=steps)
    passages = (Passage("p1", "Lyon", "Lyon was founded in 43 BC."),
                Passage("p2", "Rome", "Rome is older."))  # fmt: skip
    example = QAExample("q1", "musique", answered.question, passages, ("43 BC",))
    embedder, reranker = encoder_estimates(PAPER, [answered], [example], 10)
    queries = [answered.question, "Who founded it?", "When was Lyon founded?"]
    chars = sum(len(p.text) for p in passages) + sum(map(len, queries))
    assert embedder.basis == reranker.basis == "modelled"
    assert embedder.tokens_each.mean == math.ceil(chars / 4)
    assert reranker.searches_each.mean == 3 and reranker.tokens_each.mean == 0
    estimate = extrapolate([answered], 10, width=1, slots=1, price=None, run="musique/paper",
                           spec=PAPER.llm, basis=Basis("run", Path("."), 1))  # fmt: skip
    lines = encoder_table([attrs.evolve(estimate, encoders=(embedder, reranker))])
    assert "| musique/paper | retrieval.seed.reranker | cohere/rerank-english-v3.0 | – | 3.0 " \
           "| $0.0600 | modelled |" in lines  # fmt: skip
    plan = next(line for line in lines if line.startswith("- The plan's encoders"))
    assert f"{math.ceil(chars / 4) * 10} embedding tokens, 30 rerank searches" in plan


def test_run_estimate_prints_the_encoders_from_a_sample_on_the_standin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    llm, embeddings = FakeOpenAI([], reply=standin_reply), FakeOpenAI([])
    recipe = ROOT / "recipes" / "baselines" / "naive.yaml"
    with serve(llm) as llm_base, serve(embeddings) as embed_base:
        result = CliRunner().invoke(app, [
            "run", str(recipe), "--dataset", "musique", "--limit", "4", "--out-dir",
            str(tmp_path / "runs"), "--llm", "openai/standin", "--api-base", llm_base,
            "--embedder", "openai/standin-embed",
            "--set", f"index.embedder.api_base={json.dumps(embed_base)}",
            "--set", "index.embedder.dimensions=64", "--estimate", "--sample", "2"])  # fmt: skip
    assert result.exit_code == 0, result.output
    sent = sum(len(body["input"]) for body in embeddings.embedded)
    assert sent > 0
    row = re.search(r"\| musique/naive \| index\.embedder \| openai/standin-embed \| ([\d,.]+)"
                    r"[^|]* \| – \| \$0 \| measured \|", result.output)  # fmt: skip
    assert row is not None, result.output
    assert float(row.group(1).replace(",", "")) > 0
    assert "(LLM calls at an unknown price not counted)" in result.output
    assert "- The plan's encoders:" in result.output


def test_without_yes_a_paid_encoder_is_never_called_and_its_figures_are_modelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conftest guard refuses any embedding or rerank request off 127.0.0.1: a sample that
    called text-embedding-3-small or Cohere's reranker would fail every question."""
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("COHERE_API_KEY", "co-test")
    llm = FakeOpenAI([], reply=standin_reply)
    recipe = ROOT / "recipes" / "chainrag" / "ansint.yaml"
    with serve(llm) as llm_base:
        result = CliRunner().invoke(app, [
            "run", str(recipe), "--dataset", "musique", "--limit", "3", "--out-dir",
            str(tmp_path / "runs"), "--llm", "openai/standin", "--api-base", llm_base,
            "--embedder", "text-embedding-3-small", "--reranker", "cohere/rerank-english-v3.0",
            "--estimate", "--sample", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert llm.bodies  # the sample was answered, by the LLM on the stand-in
    assert "instead of openai/text-embedding-3-small, cohere/rerank-english-v3.0" in result.output
    embedder = re.search(
        r"\| musique/ansint \| index\.embedder \| openai/text-embedding-3-small "
        r"\| ([\d,]+) \| – \| \$([\d.]+) \| modelled \|",
        result.output,
    )
    reranker = re.search(r"\| musique/ansint \| retrieval\.seed\.reranker \| "
                         r"cohere/rerank-english-v3.0 \| – \| ([\d.]+) \| \$([\d.]+) "
                         r"\| modelled \|", result.output)  # fmt: skip
    assert embedder is not None and reranker is not None, result.output
    tokens, searches = float(embedder.group(1).replace(",", "")), float(reranker.group(1))
    assert tokens > 0 and searches >= 1
    assert float(embedder.group(2)) == pytest.approx(3 * tokens * 0.02 / 1e6, rel=0.01)
    assert float(reranker.group(2)) == pytest.approx(3 * searches * 0.002, rel=0.01)
