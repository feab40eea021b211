"""llama-cpp-python's server with a full prompt evaluation per request (``prompt_cache: fresh``).

    python -m chainrag.llm.fresh_server --model FILE ...   # python -m llama_cpp.server's arguments

``llama_cpp.Llama`` keeps the tokens of the previous request and their KV cache, and on the
next request evaluates only what follows the longest prefix the two share
(``Llama.generate``). The logits of a prompt evaluated in two pieces are not bit-identical to
those of the same prompt evaluated at once — the pieces are batched differently — so a greedy or
seeded token, and with it the answer, can depend on which request came before
(ggml-org/llama.cpp#4902). The server has no setting for it: its ``--cache`` is another thing,
a store of saved states, off by default and left off here.

This entry point runs the same server with one change: before each request the model forgets
what it evaluated (:func:`forget`), so every request is evaluated as the first request after
start is, whatever came before it. The server takes one request at a time (its lock), so no
request can find another's state.
"""

from __future__ import annotations

import runpy
import sys

import llama_cpp
from llama_cpp.server import app as server_app
from llama_cpp.server.model import LlamaProxy


def forget(llama: llama_cpp.Llama) -> None:
    """Clear what ``llama`` kept of earlier requests: its evaluated tokens and its KV cache."""
    llama.reset()  # type: ignore[no-untyped-call] # no tokens: generate() has no prefix to reuse
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), True)


class FreshLlamaProxy(LlamaProxy):
    """The server's holder of its model, handing out the model with earlier requests forgotten.

    The server asks the holder for the model once per request, inside its one-request lock.
    """

    def __call__(self, model: str | None = None) -> llama_cpp.Llama:
        llama = super().__call__(model)
        forget(llama)
        return llama


def main() -> None:
    """Run ``python -m llama_cpp.server`` with :class:`FreshLlamaProxy` as its model holder."""
    server_app.LlamaProxy = FreshLlamaProxy  # type: ignore[attr-defined] # set_llama_proxy builds it
    print("chainrag: prompt_cache fresh: every prompt evaluated in full", file=sys.stderr)
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
