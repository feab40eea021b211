"""Sufficiency judges: do the gathered sentences suffice to answer? (ChainRAG §3.2)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from chainrag.core.context import Context
from chainrag.core.types import NOT_CHECKED, Verdict
from chainrag.llm.prompts import load_prompt
from chainrag.recipes.registry import SUFFICIENCY_JUDGES

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(text: str) -> bool | None:
    """The first standalone yes/no in ``text`` (any case, any punctuation), or None."""
    match = _YES_NO.search(text)
    return None if match is None else match.group(1).lower() == "yes"


def numbered(evidence: Sequence[str]) -> str:
    """Evidence as a numbered list, one item a line."""
    return "\n".join(f"[{i}] {text}" for i, text in enumerate(evidence, 1))


@SUFFICIENCY_JUDGES.register("llm_yes_no")
@attrs.frozen
class LLMYesNo:
    """Asks the LLM yes/no; reads the first standalone yes or no; anything else is "no".

    An unreadable reply keeps its raw text in the verdict, so a trace shows it. Version 2
    (the default) begins exactly as ``answer_sub@v2``, so a local server's prompt cache reads
    the evidence once for the last check and the sub-answer; version 1 is the earlier wording.
    Recipe: ``{kind: llm_yes_no, prompt_version: 2}``.
    """

    prompt_version: int = 2

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> Verdict:
        llm = ctx.require_llm("llm_yes_no sufficiency judge")
        prompt = load_prompt("sufficiency", self.prompt_version)
        reply = llm.complete(prompt.request(question=question, evidence=numbered(evidence)))
        return Verdict(ok=parse_yes_no(reply.text) is True, raw=reply.text)


@SUFFICIENCY_JUDGES.register("none")
@attrs.frozen
class NoCheck:
    """No check: whatever is gathered is enough, without an LLM call (not the paper's).

    With ``iterative_hops`` every walk takes exactly one hop (a hop the budget cuts ends it
    too); with ``one_step_rerank`` the seeds are never expanded. Made for issue 24: the local
    1.5B judge said "yes" after the first hop in 200 of 206 checks at LongBench length, so its
    checks cost a call each and changed almost no walk. Recipe: ``{kind: none}``.
    """

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> Verdict:
        return Verdict(ok=True, raw=NOT_CHECKED)
