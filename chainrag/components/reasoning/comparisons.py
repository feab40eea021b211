"""Comparison questions answered by rule from the sub-answers (not the papers').

"Which film came out earlier, A or B?" decomposes into "When did A come out?" and "When did B
come out?"; the local 1.5B reader, given both dates, often names the wrong film (issue 24:
long:2wiki's comparison questions). Here the comparison itself is made by rule: the two
choices are read from the question, each one's value (a date, or a count for "more …") from
the answered sub-question that names that choice and asks about the compared attribute, and
the earlier / later / larger / smaller choice is the answer. Where any part does not apply —
not a two-choice comparison, a choice without exactly one such value, a tie — another
integrator answers (``fallback``), so a question costs no more calls than that one.

A comparison of two films' directors ("Which film has the director born earlier, A or B?")
needs each director's birth, which the LLM's decomposition seldom asks for (it asks who the
director is, then when the film came out). :class:`RoleComparison` decomposes such a question
by rule, with numbered references ("Who is the director of A?", "When was #1 born?"), and the
rule reads a sub-question that says ``#1`` as naming what sub-question 1 names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import attrs

from chainrag.components.reasoning.answer_form import is_unanswerable
from chainrag.components.reasoning.choosers import picked
from chainrag.components.reasoning.integrators import answer_name_ok, integrated
from chainrag.components.reasoning.rewrite_triggers import NUMBERED_REFERENCE
from chainrag.core.types import Answer, Decomposition, IntegrationInput, Pick, SubAnswer
from chainrag.data.metrics import normalize_answer
from chainrag.protocols.context import Context
from chainrag.protocols.reasoning import Decomposer, Integrator
from chainrag.recipes.registry import DECOMPOSERS, INTEGRATORS

Attribute = Literal["birth", "death", "release", "count"]
Direction = Literal["least", "most"]

# The compared attribute: what the question's comparative is about, and the words a
# sub-question must use to ask about the same attribute.
_ASKED_BY: dict[Attribute, re.Pattern[str]] = {
    "birth": re.compile(r"\b(?:born|birth)\b", re.IGNORECASE),
    "death": re.compile(r"\b(?:die|died|death)\b", re.IGNORECASE),
    "release": re.compile(
        r"\b(?:came out|come out|comes out|released?|published|founded|established|formed"
        r"|premiered|first aired|aired|launched)\b",
        re.IGNORECASE,
    ),
    "count": re.compile(r"\bhow many\b", re.IGNORECASE),
}
_EARLIEST = r"(?:first|earlier|earliest|sooner)"
_LATEST = r"(?:later|latest|last|more recently|most recently|newer|newest)"
_FORMS: tuple[tuple[str, Attribute, Direction], ...] = (
    (rf"\bborn {_EARLIEST}\b|\b(?:older|oldest)\b", "birth", "least"),
    (rf"\bborn {_LATEST}\b|\b(?:younger|youngest)\b", "birth", "most"),
    (rf"\b(?:died|die) {_EARLIEST}\b", "death", "least"),
    (rf"\b(?:died|die) {_LATEST}\b", "death", "most"),
    (rf"\b(?:came out|come out|released|published|founded|established|formed|premiered"
     rf"|aired|launched) {_EARLIEST}\b", "release", "least"),
    (rf"\b(?:came out|come out|released|published|founded|established|formed|premiered"
     rf"|aired|launched) {_LATEST}\b", "release", "most"),
    (r"\b(?:more|most)\s+(?:of\s+)?(?:the\s+)?(?!recently\b)(\w+)", "count", "most"),
    (r"\b(?:fewer|fewest|less|least)\s+(?:of\s+)?(?:the\s+)?(\w+)", "count", "least"),
)  # fmt: skip
_COMPARATIVES = tuple((re.compile(form, re.IGNORECASE), a, d) for form, a, d in _FORMS)
_MONTHS = {m: i for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), start=1)}  # fmt: skip
_NUMBER_WORDS = {w: i for i, w in enumerate(
    ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
     "eleven", "twelve"))}  # fmt: skip
_YEAR = re.compile(r"(?<!\d)(1\d{3}|20\d{2})(?!\d)")
_MONTH_NAME = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b", re.IGNORECASE)
_DAY = re.compile(r"(?<!\d)([0-3]?\d)(?:st|nd|rd|th)?(?!\d)")
# A person of each choice whose birth or death is compared ("Which film has the director born
# first", "… whose producer is older"), and how a sub-question asks for it.
_ROLE = re.compile(
    r"\b(?:has|have|had|with|whose)\s+(?:the\s+)?(director|producer|composer|screenwriter"
    r"|writer|performer|creator|author|editor|lyricist|cinematographer)s?\b",
    re.IGNORECASE,
)
_ASK_OF_PERSON: dict[Attribute, str] = {"birth": "When was #{} born?", "death": "When did #{} die?"}


@attrs.frozen
class Comparison:
    """What a two-choice comparison question asks: its choices as written, the compared
    attribute, and whether the answer has the least or the most of it."""

    choices: tuple[str, str]
    attribute: Attribute
    direction: Direction
    counted: str = ""  # for a count, the word after "more" / "fewer" ("acts")


@attrs.frozen
class Ruling:
    """A comparison decided by rule: the chosen choice and why (the values it compared)."""

    answer: str
    why: str


def parse_comparison(question: str) -> Comparison | None:
    """The comparison ``question`` asks, or None when it is not a two-choice comparison of a
    date or a count this module can decide.

    Two forms are read: "Which film came out earlier, A or B?" (the choices after the first
    comma) and "Was A or B born first?". "Who lived longer" and other durations are not
    decided (they need two dates a choice).
    """
    text = " ".join(question.split()).rstrip("?").strip()
    head, sep, options = text.partition(",")
    if sep and re.match(r"^(?:which|who|what)\b", head, re.IGNORECASE):
        parts = options.split(" or ")
    elif found := re.match(r"^(?:was|were|is|are|did|does|do)\s+(.+)$", text, re.IGNORECASE):
        head = found[1]
        parts = head.split(" or ")
    else:
        return None
    if len(parts) != 2:
        return None
    for pattern, attribute, direction in _COMPARATIVES:
        said = pattern.search(head)
        if said is None:
            continue
        first, second = parts
        if not sep:  # "Was A or B born first?": the comparative ends the second choice
            second = second[: second.find(said[0])] if said[0] in second else second
        first, second = (c.strip(" ,;:\"'") for c in (first, second))
        if not first or not second or normalize_answer(first) == normalize_answer(second):
            return None
        counted = said[1].lower() if attribute == "count" else ""
        return Comparison((first, second), attribute, direction, counted)
    return None


def parse_date(text: str) -> tuple[int, int, int] | None:
    """A sub-answer's date as (year, month, day), month and day 0 where not given; None
    without a four-digit year (1000–2099) or with more than one year."""
    years = _YEAR.findall(text)
    if len(set(years)) != 1:
        return None
    month_name = _MONTH_NAME.search(text)
    month = _MONTHS[month_name[1].lower()] if month_name else 0
    day = 0
    if month_name:
        rest = _YEAR.sub(" ", text)
        days = [int(d) for d in _DAY.findall(rest) if 1 <= int(d) <= 31]
        day = days[0] if len(days) == 1 else 0
    return int(years[0]), month, day


def parse_count(text: str) -> int | None:
    """A sub-answer's count: its one number (digits or one to twelve in words), else None."""
    numbers = re.findall(r"(?<![\d.,])\d+(?![\d.,])", text)
    words = [_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _NUMBER_WORDS]
    found = [int(n) for n in numbers] + words
    return found[0] if len(found) == 1 else None


def named(sub_answers: Sequence[SubAnswer], originals: Sequence[str] = ()) -> list[str]:
    """What each sub-question names: the question it was asked as, or, where the decomposition
    wrote it with numbered references (``When was #1 born?``; ``originals`` are the sub-questions
    before rewriting, aligned with ``sub_answers``), that one with each ``#n`` replaced by what
    sub-question n names — so "When was #1 born?" after "Who is the director of A?" names A."""
    aligned = len(originals) == len(sub_answers)
    texts: list[str] = []
    for i, sub in enumerate(sub_answers):
        original = originals[i] if aligned else ""
        if NUMBERED_REFERENCE.search(original) is None:
            texts.append(sub.question)
            continue

        def earlier(match: re.Match[str], done: int = i) -> str:
            n = int(match[1])
            return f"({texts[n - 1]})" if 1 <= n <= done else match[0]

        texts.append(NUMBERED_REFERENCE.sub(earlier, original))
    return texts


def value_of(choice: str, other: str, asked: Comparison, sub_answers: Sequence[SubAnswer],
             originals: Sequence[str] = ()) -> tuple[int, ...] | None:  # fmt: skip
    """The value of the compared attribute for ``choice``: from the answered sub-questions
    that name it (and not ``other``; :func:`named`) and ask about that attribute (for a count,
    "how many" and the counted word); None unless they give exactly one."""
    attribute, counted = asked.attribute, normalize_answer(asked.counted)
    name, rival = normalize_answer(choice), normalize_answer(other)
    values: set[tuple[int, ...]] = set()
    for sub, names in zip(sub_answers, named(sub_answers, originals), strict=True):
        said = f" {normalize_answer(names)} "
        names_it = f" {name} " in said and f" {rival} " not in said
        asks_it = _ASKED_BY[attribute].search(sub.question) and (
            not counted or f" {counted} " in f" {normalize_answer(sub.question)} "
        )
        if not sub.answered or is_unanswerable(sub.answer) or not names_it or not asks_it:
            continue
        value: tuple[int, ...] | None
        if attribute == "count":
            count = parse_count(sub.answer)
            value = None if count is None else (count,)
        else:
            value = parse_date(sub.answer)
        if value is None:
            return None
        values.add(value)
    return values.pop() if len(values) == 1 else None


def before(a: tuple[int, ...], b: tuple[int, ...]) -> bool | None:
    """Whether ``a`` comes before ``b``: by their first part (a year, a count), then as far as
    both give the rest (a month or day of 0 is not given); None when they cannot be told
    apart."""
    if a[0] != b[0]:
        return a[0] < b[0]
    for x, y in zip(a[1:], b[1:], strict=True):
        if x == 0 or y == 0:
            return None
        if x != y:
            return x < y
    return None


def rule_comparison(question: str, sub_answers: Sequence[SubAnswer],
                    originals: Sequence[str] = ()) -> Ruling | None:  # fmt: skip
    """The answer to a two-choice comparison ``question`` from its ``sub_answers`` (asked as
    ``originals`` before rewriting) by rule, or None when the rule does not apply (see the
    module's docstring)."""
    asked = parse_comparison(question)
    if asked is None:
        return None
    first, second = asked.choices
    a = value_of(first, second, asked, sub_answers, originals)
    b = value_of(second, first, asked, sub_answers, originals)
    if a is None or b is None:
        return None
    a_first = before(a, b)
    if a_first is None:
        return None
    chosen = first if a_first == (asked.direction == "least") else second
    return Ruling(chosen, f"{asked.attribute} {asked.direction}: {first} {a}, {second} {b}")


@INTEGRATORS.register("by_rule", example={"fallback": {"kind": "ans_int"}})
@attrs.frozen
class ComparedByRule:
    """A two-choice comparison of dates or counts decided by rule from the sub-answers
    (:func:`rule_comparison`), any other question answered by ``fallback`` — not the papers'
    (ChainRAG §3.4 lets the LLM integrate). No LLM call where the rule applies. The answer's
    first :class:`~chainrag.core.types.Pick` says which answered and why.
    Recipe: ``{kind: by_rule, fallback: {kind: cxt_int}}``.
    """

    fallback: Integrator
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    @property
    def parts(self) -> tuple[Integrator]:
        """The integrator it falls back to (what a recipe check looks inside)."""
        return (self.fallback,)

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        ruling = rule_comparison(inputs.question, inputs.sub_answers, inputs.original_sub_questions)
        if ruling is not None:
            return Answer(ruling.answer, picks=(Pick("rule", ruling.why, "rule"),))
        other = integrated(self.fallback, inputs, ctx)
        return picked(other, Pick("fallback", "no comparison the rule decides", "rule"))


def role_sub_questions(question: str) -> tuple[str, ...] | None:
    """Sub-questions for a comparison of the two choices' directors (producers, composers, …)
    by birth or death: "Who is the director of A?", "When was #1 born?", the same for B; None
    for any other question."""
    asked = parse_comparison(question)
    if asked is None or asked.attribute not in _ASK_OF_PERSON:
        return None
    role = _ROLE.search(" ".join(question.split()).partition(",")[0])
    if role is None:
        return None
    subs: list[str] = []
    for choice in asked.choices:
        subs.append(f"Who is the {role[1].lower()} of {choice}?")
        subs.append(_ASK_OF_PERSON[asked.attribute].format(len(subs)))
    return tuple(subs)


@DECOMPOSERS.register("role_comparison", example={"fallback": {"kind": "llm_json"}})
@attrs.frozen
class RoleComparison:
    """Decomposes a comparison of the two choices' directors (producers, composers, …) by
    birth or death by rule (:func:`role_sub_questions`, with numbered references for the
    ``numbered`` rewriter), with no LLM call; any other question goes to ``fallback``. Not the
    papers' (ChainRAG §3.3 decomposes with the LLM). Recipe:
    ``{kind: role_comparison, fallback: {kind: llm_json}}``.
    """

    fallback: Decomposer

    def __call__(self, question: str, ctx: Context) -> Decomposition:
        subs = role_sub_questions(question)
        if subs is None:
            return self.fallback(question, ctx)
        return Decomposition(subs, raw="[by rule: each choice's person, then the date compared]")
