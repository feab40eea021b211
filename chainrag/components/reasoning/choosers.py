"""Integrators that pick one of two integrators' answers (not the paper's): ``form_checked``
(the first unless it does not fit the question's form) and ``choose`` (the LLM prefers one,
by letters, probabilities or verification), each saying why in its answer's
:class:`~chainrag.core.types.Pick`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import attrs

from chainrag.components.reasoning.answer_form import misfit
from chainrag.components.reasoning.integrators import answer_name_ok, integrated
from chainrag.components.reasoning.sub_questions import history_text
from chainrag.components.retrieval.judges import first_token_share, numbered, yes_share
from chainrag.core.budget import words
from chainrag.core.types import (
    Answer,
    IntegrationInput,
    LLMResponse,
    Pick,
)
from chainrag.data.metrics import normalize_answer
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.protocols.llm import LLM
from chainrag.protocols.reasoning import Integrator
from chainrag.recipes.registry import (
    INTEGRATORS,
)


def picked(answer: Answer, pick: Pick) -> Answer:
    """``answer``, as an integrator that picked it among its parts' answers gives it: with
    ``pick`` before the picks it already carries."""
    return attrs.evolve(answer, picks=(pick, *answer.picks))


@INTEGRATORS.register(
    "form_checked", example={"integrator": {"kind": "cxt_int"}, "fallback": {"kind": "ans_int"}}
)
@attrs.frozen
class FormChecked:
    """``integrator``'s answer unless it does not fit the form the question asks for
    (:func:`misfit`): then ``fallback``'s, if that one fits (not the paper's).

    The fallback is asked only for those questions, so it adds a call only to them; when the
    recipe's list also holds the fallback, its answer is that one's, computed once a question
    (:func:`~chainrag.components.reasoning.integrators.integrated`). Made for issue 24: with
    the passage layout the 1.5B reader answered "Yes" to 5 of 60 which/who questions, where
    AnsInt named one. The answer's first :class:`~chainrag.core.types.Pick` says which
    integrator answered and why.
    Recipe: ``{kind: form_checked, integrator: {kind: cxt_int, …}, fallback: {kind: ans_int}}``.
    """

    integrator: Integrator
    fallback: Integrator
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        first = integrated(self.integrator, inputs, ctx)
        why = misfit(inputs.question, first.text)
        if why is None:
            return picked(first, Pick("first", "fits", "form"))
        other = integrated(self.fallback, inputs, ctx)
        if misfit(inputs.question, other.text) is not None:
            note = f"{why}; the fallback's {other.text!r} does not fit either"
            return picked(first, Pick("first", note, "form", misfit=why))
        note = f"the first answer, {first.text!r}, is {why}"
        return picked(other, Pick("fallback", note, "form", misfit=why))


_A_OR_B = re.compile(r"\b([AB])\b")


_PLAIN = frozenset({"a", "an", "and", "as", "at", "by", "for", "from", "in", "is", "of", "on",
                    "or", "the", "to", "was", "with"})  # fmt: skip


def mentions(sentence: str, answer: str) -> bool:
    """Whether ``sentence`` names ``answer``: at least half of the answer's words, other than
    the commonest short ones, are words of the sentence (both normalised as EM is)."""
    wanted = set(normalize_answer(answer).split()) - _PLAIN
    if not wanted:
        return False
    found = wanted & set(normalize_answer(sentence).split())
    return 2 * len(found) >= len(wanted)


def naming_evidence(evidence: Sequence[str], answers: Sequence[str], budget: int) -> list[str]:
    """The evidence texts that name one of ``answers`` (:func:`mentions`), taken in turn —
    the first text naming the first answer, the first naming the second, … — each once and in
    retrieval order per answer, while their words fit in ``budget``."""
    queues = [[t for t in dict.fromkeys(evidence) if mentions(t, a)] for a in answers]
    chosen: list[str] = []
    used = 0
    while any(queues):
        for queue in queues:
            while queue and queue[0] in chosen:
                queue.pop(0)
            if not queue:
                continue
            text = queue.pop(0)
            size = words(text)
            if used + size > budget:
                return chosen
            chosen.append(text)
            used += size
    return chosen


def letter_share(response: LLMResponse, letter: str) -> float:
    """``letter``'s share of the probability the response's first token gives "A" and "B"
    (its top log-probabilities, tokens read without spaces); 0.5 when neither is among them."""
    return first_token_share(response, letter, "B" if letter == "A" else "A")


NO_PASSAGES = "N/A"
"""What a ``choose`` by ``verify`` with ``calibrate`` shows in place of the passages."""


@INTEGRATORS.register(
    "choose", example={"first": {"kind": "cxt_int"}, "second": {"kind": "ans_int"}}
)
@attrs.frozen
class Choose:
    """``first``'s answer, or ``second``'s where the LLM prefers it both ways round (not the
    paper's).

    Both integrators answer. The same answer (normalised as EM is) is the answer. Where one
    of them does not fit the form the question asks for (:func:`misfit`) and the other does,
    the other is the answer, with no call. Otherwise the LLM reads the evidence that names
    either answer (:func:`naming_evidence`, within ``word_budget`` words), the answered
    sub-questions as notes, and the two answers, and is asked which one the evidence
    supports — twice, once as A/B and once as B/A. ``by: letters``: ``second``'s answer
    replaces ``first``'s only if both replies choose it, so a reader that always says "A" (or
    "B") changes nothing. ``by: probabilities``: each ask returns the first token's top 5
    log-probabilities; the second's share of the two letters' probability (0.5 where neither
    letter is among the 5) is averaged over the two orders, which cancels a constant lean to
    one position, and ``second``'s answer is taken where the mean is above 0.5.
    ``by: verify``: no A/B choice; each answer is checked on its own against the same
    sentences ("Do the passages support this answer?", the ``supports`` prompt, version
    ``prompt_version``) and P(yes) read from the first token's top 5 log-probabilities
    (:func:`~chainrag.components.retrieval.judges.yes_share`);
    ``second``'s answer is taken where its
    P(yes) is above ``first``'s by more than ``margin`` (default 0: any amount), so no
    position is favoured and a tie keeps ``first``; the answer's pick holds the two P(yes)
    (:attr:`~chainrag.core.types.Pick.p_yes`) and the values weighed. With ``calibrate``,
    each answer is also asked with "N/A" in place of the passages (:data:`NO_PASSAGES`), and
    what is weighed is how far the passages raise its P(yes): P(yes) less P(yes) without
    them, the contextual calibration of Zhao et al. (2021, "Calibrate before use"), which
    takes out how likely the reader finds an answer whatever it reads.
    At most two calls a question beyond the two integrators' (four with ``calibrate``), and
    none where they agree.
    Made for issue 24, where AnsInt and CxtInt disagree on 52 of 90 questions and the better
    of the two per question scores 7 F1 above the better integration per set.
    The answer's first :class:`~chainrag.core.types.Pick` says which integrator answered, why,
    and what was weighed.
    Recipe: ``{kind: choose, first: {kind: cxt_int, …}, second: {kind: ans_int}}``.
    """

    first: Integrator
    second: Integrator
    word_budget: int = attrs.field(default=600, validator=attrs.validators.ge(1))
    by: Literal["letters", "probabilities", "verify"] = "letters"
    margin: float = attrs.field(default=0.0, validator=[attrs.validators.ge(0.0),
                                                        attrs.validators.lt(1.0)])  # fmt: skip
    """With ``by: verify``: how much higher ``second``'s P(yes) must be than ``first``'s."""
    calibrate: bool = attrs.field(default=False)
    """With ``by: verify``: weigh P(yes) less P(yes) without the passages (two more calls)."""
    prompt_version: int = 1
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    @margin.validator
    @calibrate.validator
    def _verify_only(self, attribute: attrs.Attribute[float], value: float) -> None:
        """``margin`` and ``calibrate`` set (not at their defaults) only with ``by: verify``."""
        if value and self.by != "verify":
            said = "true" if value is True else value
            raise ValueError(
                f"{attribute.name}: {said} applies to by: verify only (here by: {self.by})"
            )

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        first = integrated(self.first, inputs, ctx)
        second = integrated(self.second, inputs, ctx)
        if normalize_answer(first.text) == normalize_answer(second.text):
            return picked(first, Pick("first", "both said it", "same"))
        first_misfit = misfit(inputs.question, first.text)
        second_misfit = misfit(inputs.question, second.text)
        if first_misfit is not None and second_misfit is None:
            why = f"the first, {first.text!r}, is {first_misfit}"
            return picked(second, Pick("second", why, "form", misfit=first_misfit))
        if second_misfit is not None:
            why = f"the second, {second.text!r}, is {second_misfit}"
            return picked(first, Pick("first", why, "form", misfit=second_misfit))
        llm = ctx.require_llm("choose integrator")
        texts = [text for text, _ in inputs.readable()]
        shown = naming_evidence(texts, [first.text, second.text], self.word_budget)
        evidence = numbered(shown) or "(none of the sentences names either answer)"
        if self.by == "verify":
            return self._verify(inputs.question, evidence, first, second, llm)
        prompt = load_prompt("choose", self.prompt_version)
        values = {
            "question": inputs.question,
            "evidence": evidence,
            "pairs": history_text([a for a in inputs.sub_answers if a.answered]),
        }
        top = 5 if self.by == "probabilities" else None
        replies = []
        for a, b in ((first, second), (second, first)):
            request = attrs.evolve(prompt.request(**values, a=a.text, b=b.text), top_logprobs=top)
            replies.append(llm.complete(request))
        takes_second, said, p_second = self._read(replies)
        pick = Pick("second" if takes_second else "first", said, "llm", p_second=p_second)
        return picked(second if takes_second else first, pick)

    def _verify(
        self, question: str, evidence: str, first: Answer, second: Answer, llm: LLM
    ) -> Answer:
        """``by: verify``: each answer's P(yes) that the evidence supports it (with
        ``calibrate``, less its P(yes) without the evidence); the higher wins."""
        prompt = load_prompt("supports", self.prompt_version)

        def p_yes(shown: str, answer: Answer) -> float:
            request = prompt.request(evidence=shown, question=question, answer=answer.text)
            return yes_share(llm.complete(attrs.evolve(request, top_logprobs=5)))

        p_first, p_second = (p_yes(evidence, a) for a in (first, second))
        said = f"P(yes) {p_second:.4f} for the second, {p_first:.4f} for the first"
        weigh_first, weigh_second = p_first, p_second
        if self.calibrate:
            q_first, q_second = (p_yes(NO_PASSAGES, a) for a in (first, second))
            weigh_first, weigh_second = p_first - q_first, p_second - q_second
            said += (f"; {q_second:.4f} and {q_first:.4f} without the passages, so "
                     f"{weigh_second:+.4f} against {weigh_first:+.4f}")  # fmt: skip
        if self.margin:
            said += f", margin {self.margin:g}"
        takes_second = weigh_second > weigh_first + self.margin
        pick = Pick("second" if takes_second else "first", said, "llm", p_yes=(p_first, p_second),
                    weighed=(weigh_first, weigh_second))  # fmt: skip
        return picked(second if takes_second else first, pick)

    def _read(self, replies: Sequence[LLMResponse]) -> tuple[bool, str, float | None]:
        """Whether the replies to the two asks (first answer as A, then as B) choose the
        second answer, what they said, and (by probabilities) the mean P(second)."""
        if self.by == "probabilities":
            shares = [letter_share(replies[0], "B"), letter_share(replies[1], "A")]
            mean = sum(shares) / 2
            return mean > 0.5, (f"P(second) {mean:.2f}, the mean of {shares[0]:.2f} with the "
                                f"first as A and {shares[1]:.2f} with it as B"), mean  # fmt: skip
        letters = [found.group(1) if (found := _A_OR_B.search(r.text)) else "?" for r in replies]
        said = f"replied {letters[0]} with the first as A, {letters[1]} with it as B"
        if letters == ["B", "A"]:
            return True, f"chosen both ways; {said}", None
        return False, f"the second not chosen both ways; {said}", None
