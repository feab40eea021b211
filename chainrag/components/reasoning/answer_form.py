"""What an answer's text is and whether it fits the question: the answer read out of a
reply (its first line, or a chain of thought's stated answer), "unanswerable" and its variants,
and the forms a question asks for (:func:`misfit`)."""

from __future__ import annotations

import re

from chainrag.data.metrics import normalize_answer


def clean_answer(text: str) -> str:
    """The first line of a reply, without "Answer:", quotes, or a trailing period."""
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^\s*(final\s+)?answer\s*:\s*", "", line, flags=re.IGNORECASE)
    return line.strip().strip('"').strip("'").rstrip(".").strip()


_SO_THE_ANSWER = re.compile(r"so the (?:final )?answer is\s*:?\s*", re.IGNORECASE)


def stated_answer(generation: str) -> str | None:
    """What follows a chain-of-thought generation's last "So the answer is", cleaned (first
    line, no quotes or final period); None when it states no answer."""
    marks = list(_SO_THE_ANSWER.finditer(generation))
    return clean_answer(generation[marks[-1].end() :]) if marks else None


def final_answer(generation: str) -> str:
    """The answer of a chain-of-thought generation: its stated answer, else its last line."""
    stated = stated_answer(generation)
    if stated is not None:
        return stated
    lines = [ln for ln in generation.strip().splitlines() if ln.strip()]
    return clean_answer(lines[-1]) if lines else ""


def is_unanswerable(answer: str) -> bool:
    """True for "unanswerable" and its usual variants, or an empty answer."""
    lowered = answer.lower()
    return not lowered or bool(re.search(r"\bunanswerable\b|\bcannot be answered\b", lowered))


_ASKS_YES_NO = re.compile(
    r"^\W*(?:is|are|was|were|am|do|does|did|can|could|has|have|had|will|would|shall|should"
    r"|may|might|must)\b",
    re.IGNORECASE,
)


_NAMES_CHOICES = re.compile(r"^\W*(?:which|who|whom|whose)\b.*,.*\bor\b", re.IGNORECASE | re.DOTALL)


_NO_ANSWER = re.compile(
    r"^\W*(?:unknown\W*$|none\W*$|n/?a\W*$|not (?:mentioned|provided|specified|stated|given"
    r"|found|known|enough)|no (?:information|answer)|(?:it )?cannot|can ?not|insufficient"
    r"|(?:the )?(?:context|text|passages?|information) (?:does|do) not|there is no)",
    re.IGNORECASE,
)


def misfit(question: str, answer: str) -> str | None:
    """Why ``answer`` does not fit the form ``question`` asks for, or None when it fits.

    Three forms are checked, each by rule: an answer at all (not empty, "unanswerable", "not
    mentioned", "the context does not …"); yes or no only to a question that asks yes or no
    (one that opens with an auxiliary verb: "Is …", "Did …"); and, for a which/who question
    that names its choices ("Who died first, A or B?"), one of them: the answer's words must
    be in the question's.
    """
    if is_unanswerable(answer) or _NO_ANSWER.match(answer):
        return "no answer"
    said = normalize_answer(answer)
    if said in ("yes", "no") and not _ASKS_YES_NO.match(question):
        return "yes or no to a question that does not ask yes or no"
    if _NAMES_CHOICES.match(question) and f" {said} " not in f" {normalize_answer(question)} ":
        return "none of the choices the question names"
    return None
