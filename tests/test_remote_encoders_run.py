"""How a remote encoder is reached is not what it computes: ``api_base``, ``concurrency``,
``timeout_s``, ``max_retries`` and its pacing leave the recipe digest (the LLM's rule), while
the endpoint identity still keys every cache of its values; and ``run.json`` records each
remote encoder's model, endpoints and whether its values came from the store or the provider,
summed over the run (a resumed run adds to it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.types import Passage
from chainrag.index.build import IndexCache
from chainrag.index.corpus.build import index_digest, same_index
from chainrag.recipes.overrides import encoder_changes, load_changed, parse_all
from chainrag.recipes.recipe import Recipe, dump_recipe
from chainrag.recipes.structure import unstructure
from chainrag.run.provenance import encoder_access, recipe_digest, stored_recipe
from chainrag.standin.replies import standin_reply
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT

RECIPE = ROOT / "recipes" / "chainrag" / "ansint.yaml"


def remote_recipe(*more: str) -> Recipe:
    changes = [*encoder_changes("openai/standin-embed", "cohere/standin-rerank"), *more]
    return load_changed(RECIPE, parse_all(changes))


def test_access_fields_leave_the_digest_and_what_is_computed_stays() -> None:
    plain = recipe_digest(remote_recipe())
    reached = remote_recipe(
        "index.embedder.api_base='http://u:p@host-a:8000/v1'", "index.embedder.concurrency=16",
        "index.embedder.timeout_s=5", "index.embedder.max_retries=0",
        "index.embedder.requests_per_minute=60", "index.embedder.tokens_per_minute=1000",
        "retrieval.seed.reranker.api_base='http://host-b:7997'",
        "retrieval.seed.reranker.concurrency=2", "retrieval.seed.reranker.requests_per_minute=5",
    )  # fmt: skip
    assert recipe_digest(reached) == plain
    assert recipe_digest(remote_recipe("index.embedder.dimensions=256")) != plain
    assert recipe_digest(remote_recipe("index.embedder.query_prefix='query: '")) != plain
    # the session records them, userinfo stripped
    found = encoder_access(reached)
    assert found["index.embedder"]["api_base"] == "http://host-a:8000/v1"
    assert found["index.embedder"]["concurrency"] == 16
    assert found["retrieval.seed.reranker"] == {
        "api_base": "http://host-b:7997", "concurrency": 2, "timeout_s": 60.0, "max_retries": 4,
        "requests_per_minute": 5.0,
    }  # fmt: skip
    # and the recipe file keeps them, without the credentials
    assert unstructure(reached.index)["embedder"]["concurrency"] == 16
    written = dump_recipe(stored_recipe(reached))
    assert "api_base: http://host-a:8000/v1" in written and "u:p@" not in written


def test_the_endpoint_still_keys_every_cache_of_vectors() -> None:
    passages = [Passage("p1", "Paris", "Paris is the capital of France.")]
    a = remote_recipe("index.embedder.api_base='http://host-a/v1'").index
    a_busier = remote_recipe("index.embedder.api_base='http://host-a/v1/'",
                             "index.embedder.concurrency=32").index  # fmt: skip
    b = remote_recipe("index.embedder.api_base='http://host-b/v1'").index
    assert a is not None and a_busier is not None and b is not None
    cache = IndexCache(Path("/nonexistent/indexes"))
    assert cache.path_for(passages, a) == cache.path_for(passages, a_busier)
    assert cache.path_for(passages, a) != cache.path_for(passages, b)
    assert index_digest(a) == index_digest(a_busier) != index_digest(b)
    stored = unstructure(a)
    assert same_index(stored, a_busier) and not same_index(stored, b)


def args(out: Path, llm_base: str, embed_base: str, limit: int, *more: str) -> list[str]:
    recipe = ROOT / "recipes" / "baselines" / "naive.yaml"
    return ["run", str(recipe), "--dataset", "musique", "--limit", str(limit), "--out-dir",
            str(out), "--no-report", "--llm", "openai/standin", "--api-base", llm_base,
            "--embedder", "openai/standin-embed",
            "--set", f"index.embedder.api_base={json.dumps(embed_base)}",
            "--set", "index.embedder.dimensions=64", *more]  # fmt: skip


def run_json(out: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(next(out.rglob("run.json")).read_text())  # type: ignore[no-any-return]


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_run_json_says_whether_a_replay_needed_the_provider(
    tmp_path: Path, own_cache: Path
) -> None:
    llm, embeddings = FakeOpenAI([], reply=standin_reply), FakeOpenAI([])
    runner = CliRunner()
    with serve(llm) as llm_base, serve(embeddings) as embed_base:
        for out in ("first", "replay"):
            done = runner.invoke(app, args(tmp_path / out, llm_base, embed_base, 2))
            assert done.exit_code == 0, done.output
    paid = embeddings.embedded
    [first] = run_json(tmp_path / "first")["encoders"]
    [replay] = run_json(tmp_path / "replay")["encoders"]
    assert first["model"] == "openai/standin-embed" and first["path"] == "index.embedder"
    assert first["endpoints"] == [f'litellm:openai/standin-embed@{embed_base}'
                                  '+params:{"dimensions":64}']  # fmt: skip
    assert first["sent"] == sum(len(body["input"]) for body in paid) > 0
    assert first["requests"] == len(paid)
    assert replay["sent"] == replay["requests"] == 0 and replay["stored"] > 0
    assert replay["endpoints"] == first["endpoints"]


def test_a_resumed_run_at_another_server_goes_on_and_adds_to_the_counts(
    tmp_path: Path, own_cache: Path
) -> None:
    llm, one, other = FakeOpenAI([], reply=standin_reply), FakeOpenAI([]), FakeOpenAI([])
    runner = CliRunner()
    out = tmp_path / "runs"
    with serve(llm) as llm_base, serve(one) as first, serve(other) as second:
        begun = runner.invoke(app, args(out, llm_base, first, 1))
        assert begun.exit_code == 0, begun.output
        before = run_json(out)["encoders"][0]
        resumed = runner.invoke(app, args(out, llm_base, second, 2,
                                          "--set", "index.embedder.concurrency=2"))  # fmt: skip
        assert resumed.exit_code == 0, resumed.output
    assert "resumes with index.embedder" in resumed.output
    assert "concurrency 2 (was 4)" in resumed.output
    meta = run_json(out)
    [after] = meta["encoders"]
    sent = [sum(len(b["input"]) for b in fake.embedded) for fake in (one, other)]
    assert before["sent"] == sent[0] > 0 and sent[1] > 0
    assert after["sent"] == sum(sent)  # the second question's texts at the second server
    assert [e.split("@")[1].split("+")[0] for e in after["endpoints"]] == [first, second]
    assert [s["encoder_access"]["index.embedder"]["concurrency"] for s in meta["sessions"]] == [
        4,
        2,
    ]
    lines = next(out.rglob("predictions.jsonl")).read_text().splitlines()
    assert len(lines) == 2
