"""llama-cpp-python's server made reproducible: ``prompt_cache: fresh`` and ``aligned``.

    python -m chainrag.llm.fresh_server [--aligned] --model FILE ...  # + llama_cpp.server's

``llama_cpp.Llama`` keeps the tokens of the previous request and their KV cache, and on the
next request evaluates only what follows the longest prefix the two share
(``Llama.generate``). The logits of a prompt evaluated in two pieces are not bit-identical to
those of the same prompt evaluated at once — the pieces are batched differently — so a greedy or
seeded token, and with it the answer, can depend on which request came before
(ggml-org/llama.cpp#4902). The server has no setting for it: its ``--cache`` is another thing,
a store of saved states, off by default and left off here.

``fresh``: before each request the model forgets what it evaluated (:func:`forget`), so every
request is evaluated as the first request after start is, whatever came before it.

``aligned``: a prompt is always evaluated in chunks of ``n_batch`` tokens from position 0
(``Llama.eval``), so the KV cache of a whole chunk depends on that chunk's tokens and the chunks
before it, and on nothing else. The previous request's prompt is kept only up to the last whole
chunk it shares with the new one (:func:`aligned_eval`): what is evaluated after it is cut into
the chunks a fresh evaluation would make, and the logits are the fresh mode's bit for bit
(tests/test_llm_server.py compares them) — fast where prompts begin alike (a sufficiency check
and the sub-answer over the same evidence), reproducible like ``fresh``. Generated tokens,
evaluated one at a time, and the previous prompt's last partial chunk are never kept.

The server takes one request at a time (its lock), so no request can find another's state.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable, Sequence
from typing import Any

import llama_cpp
from llama_cpp.server import app as server_app
from llama_cpp.server.model import LlamaProxy


def forget(llama: llama_cpp.Llama) -> None:
    """Clear what ``llama`` kept of earlier requests: its evaluated tokens and its KV cache."""
    llama.reset()  # type: ignore[no-untyped-call] # no tokens: generate() has no prefix to reuse
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), True)


def aligned_keep(shared: int, prompt_end: int, n_batch: int) -> int:
    """Tokens of the previous request to keep: the whole ``n_batch`` chunks of its prompt
    (``prompt_end`` tokens) within the ``shared`` prefix."""
    keep = min(shared, prompt_end)
    return keep - keep % n_batch


class AlignedEval:
    """``Llama.eval`` that, at a request's first evaluation (its prompt), moves the start back
    to the last whole chunk of the previous prompt (:func:`aligned_keep`) and re-evaluates the
    tokens after it. :meth:`new_request` marks the next evaluation as a prompt's."""

    def __init__(self, llama: llama_cpp.Llama, evaluate: Callable[[Sequence[int]], Any]) -> None:
        self.llama = llama
        self.evaluate = evaluate
        self.prompt_end = 0  # tokens of the previous prompt, all evaluated in aligned chunks
        self.first = False

    def new_request(self) -> None:
        self.first = True
        self.llama._requires_eval = True  # never sample from the previous request's logits

    def __call__(self, tokens: Sequence[int]) -> Any:
        if self.first:
            self.first = False
            llama = self.llama
            keep = aligned_keep(llama.n_tokens, self.prompt_end, llama.n_batch)
            if keep < llama.n_tokens:
                tokens = [*llama.input_ids[keep : llama.n_tokens].tolist(), *tokens]
                llama.n_tokens = keep  # eval() drops the KV cache from here
            self.prompt_end = keep + len(tokens)
        return self.evaluate(tokens)


def aligned_eval(llama: llama_cpp.Llama) -> AlignedEval:
    """``llama``'s :class:`AlignedEval`, installed as its ``eval`` the first time."""
    found = llama.__dict__.get("eval")
    if isinstance(found, AlignedEval):
        return found
    installed = AlignedEval(llama, llama.eval)
    llama.eval = installed  # type: ignore[method-assign]
    return installed


class FreshLlamaProxy(LlamaProxy):
    """The server's holder of its model, handing out the model with earlier requests forgotten.

    The server asks the holder for the model once per request, inside its one-request lock.
    """

    def __call__(self, model: str | None = None) -> llama_cpp.Llama:
        llama = super().__call__(model)
        forget(llama)
        return llama


class AlignedLlamaProxy(LlamaProxy):
    """The server's holder of its model, handing out the model with :class:`AlignedEval`."""

    def __call__(self, model: str | None = None) -> llama_cpp.Llama:
        llama = super().__call__(model)
        aligned_eval(llama).new_request()
        return llama


def main() -> None:
    """Run ``python -m llama_cpp.server`` with :class:`FreshLlamaProxy` (or, after
    ``--aligned``, :class:`AlignedLlamaProxy`) as its model holder."""
    aligned = "--aligned" in sys.argv[1:]
    if aligned:
        sys.argv.remove("--aligned")
    proxy = AlignedLlamaProxy if aligned else FreshLlamaProxy
    server_app.LlamaProxy = proxy  # type: ignore[attr-defined] # set_llama_proxy builds it
    how = "whole n_batch chunks of the previous prompt kept" if aligned else "evaluated in full"
    print(f"chainrag: prompt_cache {'aligned' if aligned else 'fresh'}: {how}", file=sys.stderr)
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
