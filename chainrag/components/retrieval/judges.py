"""Sufficiency judges: do the gathered sentences suffice to answer? (ChainRAG §3.2)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from chainrag.components.retrieval.vectors import query_vector, text_vectors
from chainrag.core.types import LLMResponse, Verdict
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.recipes.registry import SUFFICIENCY_JUDGES

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(text: str) -> bool | None:
    """The first standalone yes/no in ``text`` (any case, any punctuation), or None."""
    match = _YES_NO.search(text)
    return None if match is None else match.group(1).lower() == "yes"


def first_token_share(
    response: LLMResponse, wanted: str, rival: str, fold: Callable[[str], str] = str.strip
) -> float:
    """``wanted``'s share of the probability that the response's first token gives ``wanted``
    and ``rival`` (its top log-probabilities, each token read through ``fold``; tokens that fold
    alike add up); 0.5 when neither is among them."""
    mass = {wanted: 0.0, rival: 0.0}
    for token, logprob in response.top_logprobs:
        if (read := fold(token)) in mass:
            mass[read] += math.exp(logprob)
    total = mass[wanted] + mass[rival]
    return 0.5 if total == 0 else mass[wanted] / total


def yes_share(response: LLMResponse) -> float:
    """P(yes) / (P(yes) + P(no)) from the first token's top log-probabilities, any case, any
    spaces ("Yes", " yes" and "YES" add up); 0.5 when neither is among them."""
    return first_token_share(response, "yes", "no", lambda token: token.strip().lower())


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
        said = parse_yes_no(reply.text)
        return Verdict(ok=said is True, raw=reply.text, unread=said is None)


@SUFFICIENCY_JUDGES.register("llm_yes_probability", example={"threshold": 0.5})
@attrs.frozen
class LLMYesProbability:
    """``llm_yes_no``'s question, read from the first token's log-probabilities: "yes" when
    P(yes) / (P(yes) + P(no)) is at least ``threshold`` (not the paper's).

    The same prompt as ``llm_yes_no`` asks for the first token's ``top_logprobs`` likeliest
    tokens; the verdict's ``score`` is the yes share and its ``raw`` the reply. An endpoint that
    returns no log-probabilities is an error (the backend's ``LLMUnsupportedError``); a reply
    whose likeliest tokens hold neither yes nor no scores 0.5. Made for issue 49: the 1.5B
    model's reply says "yes" after nearly every first hop; ``chainrag experiment judge-steps``
    measures how well its P(yes) orders enough evidence above too little, and chooses the
    threshold on MuSiQue's training questions.
    Recipe: ``{kind: llm_yes_probability, threshold: 0.5}``.
    """

    threshold: float = attrs.field(
        default=0.5, validator=[attrs.validators.ge(0.0), attrs.validators.le(1.0)]
    )
    top_logprobs: int = attrs.field(default=10, validator=attrs.validators.ge(2))
    prompt_version: int = 2

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> Verdict:
        llm = ctx.require_llm("llm_yes_probability sufficiency judge")
        prompt = load_prompt("sufficiency", self.prompt_version)
        request = prompt.request(question=question, evidence=numbered(evidence))
        reply = llm.complete(attrs.evolve(request, top_logprobs=self.top_logprobs))
        score = yes_share(reply)
        unread = parse_yes_no(reply.text) is None
        return Verdict(ok=score >= self.threshold, raw=reply.text, score=score, unread=unread)


@SUFFICIENCY_JUDGES.register("similarity", example={"threshold": 0.6})
@attrs.frozen
class SimilarityJudge:
    """Says yes when an evidence unit's cosine to the question is at least ``threshold``.

    No LLM call (not the paper's): the index's own embedder and embeddings.

    The question is embedded as a query; each evidence text is looked up among the index's
    units (the walk's evidence is units of its index) and embedded afresh only where it is not
    one. The verdict's ``score`` is the best cosine, its ``raw`` says yes or no with it (for
    a reader of the trace). Made for issue 49: the 1.5B model's
    P(yes) rises with the evidence's length, so that no threshold chosen on short probes
    sends a walk past its first hop, while the best cosine does not grow with it (``chainrag
    experiment judge-steps --similarity-units sentences`` chooses the threshold on MuSiQue's
    training questions, per sentence as the walk's units are).
    Recipe: ``{kind: similarity, threshold: 0.6}``.
    """

    threshold: float = attrs.field(
        default=0.6, validator=[attrs.validators.ge(-1.0), attrs.validators.le(1.0)]
    )

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> Verdict:
        if not evidence:
            return Verdict(ok=False, raw="no evidence", score=-1.0)
        index = ctx.require_index()
        query = query_vector(index, question, ctx)[0]
        best = float(np.max(text_vectors(index, evidence, ctx) @ query))
        ok = best >= self.threshold
        said = f"{'yes' if ok else 'no'} (best cosine {best:.3f}, threshold {self.threshold})"
        return Verdict(ok=ok, raw=said, score=best)


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
        return Verdict(ok=True, checked=False)
