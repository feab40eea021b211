"""LongRAG's CoT-guided filter (Zhao et al., 2024): one call writes a thinking process over
all retrieved chunks; then, guided by it, one call a chunk decides whether the chunk must be
cited. The chunks cited are the "factual details" the generator reads; where none is, all are.

The filter is a ``knowledge_filter`` stage (question and retrieved items in, the items kept
out), as Shi et al.'s NLI filter is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import attrs

from chainrag.core.types import KnowledgeItem
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.recipes.registry import KNOWLEDGE_FILTERS

_TRUE = re.compile("True|true")


def cites(reply: str) -> bool:
    """Whether a citation check's reply says to cite the chunk, read as the authors' code
    reads it: the JSON reply's ``status`` is "true" in any case; where the reply is no JSON
    object with a text ``status``, whether "True" or "true" appears anywhere in it."""
    try:
        status = json.loads(reply)["status"]
        return bool(status.lower() == "true")
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return _TRUE.search(reply) is not None


@KNOWLEDGE_FILTERS.register("cot_guided")
@attrs.frozen
class CoTGuidedFilter:
    """LongRAG's CoT-guided filter (Zhao et al., 2024): keeps the items its citation checks cite.

    As ``filter`` in the authors' ``src/main.py``: a thinking process for the question over
    every item, one a line (``longrag_cot``, up to 1000 tokens), then for each item a
    citation check given that thinking process (``longrag_cite``, up to 32 tokens, read by
    :func:`cites`); the items cited are kept, in their order, and every item where none is.
    No item, no call.

    Recipe: ``{kind: cot_guided}``.
    """

    prompt_version: int = 1

    def __call__(
        self, question: str, items: Sequence[KnowledgeItem], ctx: Context
    ) -> tuple[KnowledgeItem, ...]:
        if not items:
            return ()
        llm = ctx.require_llm("cot_guided filter")
        cot = load_prompt("longrag_cot", self.prompt_version)
        evidence = "\n".join(item.text for item in items)
        thought = llm.complete(cot.request(evidence=evidence, question=question)).text
        cite = load_prompt("longrag_cite", self.prompt_version)
        kept = tuple(
            item
            for item in items
            if cites(llm.complete(cite.request(article=item.text, question=question,
                                               thought=thought)).text)
        )  # fmt: skip
        return kept or tuple(items)
