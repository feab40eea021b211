"""``--embedder`` on ``chainrag run``: the remote embedder's key and endpoint checked before the
first question, as the LLM's are; a rerun paid for by the store, with no check and no request;
each record's encoder usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.standin.replies import standin_reply
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT


def args(tmp_path: Path, out: str, llm_base: str, embed_base: str) -> list[str]:
    recipe = ROOT / "recipes" / "baselines" / "naive.yaml"
    return ["run", str(recipe), "--dataset", "musique", "--limit", "2", "--out-dir",
            str(tmp_path / out), "--no-report", "--llm", "openai/standin", "--api-base", llm_base,
            "--embedder", "openai/standin-embed",
            "--set", f"index.embedder.api_base={json.dumps(embed_base)}",
            "--set", "index.embedder.dimensions=64"]  # fmt: skip


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_refused_embedding_key_stops_the_run_before_any_question(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    llm, embeddings = FakeOpenAI([], reply=standin_reply), FakeOpenAI([], key="sk-right")
    with serve(llm) as llm_base, serve(embeddings) as embed_base:
        result = CliRunner().invoke(app, args(tmp_path, "runs", llm_base, embed_base))
    assert result.exit_code == 1, result.output
    assert "openai/standin-embed did not embed one word" in result.output
    assert "Incorrect API key" in result.output and "sk-wrong" not in result.output
    assert not list((tmp_path / "runs").rglob("predictions.jsonl"))
    assert llm.bodies == [] and embeddings.embedded == []


def test_a_check_put_off_by_the_store_stops_the_run_at_its_first_refused_request(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store holds vectors of this endpoint (MuSiQue's passages), so the check waits; the
    key is refused when HotpotQA's passages need a live request: the run stops there, as the
    check would have stopped it, and leaves no folder (it had answered nothing)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-right")
    llm, embeddings = FakeOpenAI([], reply=standin_reply), FakeOpenAI([], key="sk-right")
    runner = CliRunner()
    with serve(llm) as llm_base, serve(embeddings) as embed_base:
        first = runner.invoke(app, args(tmp_path, "first", llm_base, embed_base))
        assert first.exit_code == 0, first.output
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        later = args(tmp_path, "later", llm_base, embed_base)
        later[later.index("musique")] = "hotpotqa"
        refused = runner.invoke(app, later)
    assert refused.exit_code == 1, refused.output
    assert "openai/standin-embed refused its first embedding request" in refused.output
    assert "Incorrect API key" in refused.output and "sk-wrong" not in refused.output
    assert len(embeddings.probes) == 1  # the first run's check; the second's was put off
    assert not (tmp_path / "later" / "hotpotqa").exists()


def test_a_rerun_is_paid_for_by_the_store_and_records_say_so(
    tmp_path: Path, own_cache: Path
) -> None:
    llm, embeddings = FakeOpenAI([], reply=standin_reply), FakeOpenAI([])
    runner = CliRunner()
    with serve(llm) as llm_base, serve(embeddings) as embed_base:
        first = runner.invoke(app, args(tmp_path, "first", llm_base, embed_base))
        assert first.exit_code == 0, first.output
        paid = (len(embeddings.embedded), len(embeddings.probes))
        again = runner.invoke(app, args(tmp_path, "again", llm_base, embed_base))
        assert again.exit_code == 0, again.output
    assert paid[0] > 0 and paid[1] == 1  # checked once, before the first question
    assert (len(embeddings.embedded), len(embeddings.probes)) == paid  # no request, no check
    lines = [json.loads(line) for line in next(
        (tmp_path / "first").rglob("predictions.jsonl")).read_text().splitlines()]  # fmt: skip
    usage = lines[0]["encoder_usage"]
    assert usage["embed passages"]["requests"] >= 1 and usage["embed passages"]["tokens"] > 0
    rerun = [json.loads(line) for line in next(
        (tmp_path / "again").rglob("predictions.jsonl")).read_text().splitlines()]  # fmt: skip
    stages = rerun[0]["encoder_usage"]
    assert all(u["requests"] == 0 and u["stored"] > 0 for u in stages.values())
