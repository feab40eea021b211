"""LLM reasoning stages (ChainRAG §3.3–3.4): decompose, rewrite, summarise, answer, integrate."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import attrs

from chainrag.components.judges import first_token_share, numbered, yes_share
from chainrag.components.rerankers import NoRerank
from chainrag.core.budget import fit, words
from chainrag.core.context import Context, MissingResourceError
from chainrag.core.errors import LLMOutputError
from chainrag.core.types import (
    Answer,
    Decomposition,
    Hit,
    IntegrationInput,
    LLMResponse,
    Pick,
    Sentence,
    SubAnswer,
    Verdict,
)
from chainrag.data.metrics import normalize_answer
from chainrag.llm.prompts import load_prompt
from chainrag.llm.structured import complete_json
from chainrag.protocols.llm import LLM
from chainrag.protocols.reasoning import Integrator
from chainrag.protocols.retrieval import Reranker, Sentenced
from chainrag.recipes.registry import (
    ANSWERERS,
    DECOMPOSERS,
    INTEGRATORS,
    MULTI_HOP_JUDGES,
    REWRITERS,
    SUFFICIENCY_JUDGES,
    SUMMARIZERS,
)

if TYPE_CHECKING:
    from chainrag.recipes.recipe import Recipe

T = TypeVar("T")


ANSWER_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def answer_name_ok(
    instance: object, attribute: attrs.Attribute[str | None], value: str | None
) -> None:
    """An integrator's ``name``: lower-case letters, digits and ``_``, a letter first (it keys
    the run's records and shows in the report)."""
    if value is not None and not ANSWER_NAME.match(value):
        raise ValueError(
            f"name {value!r}: an answer's name is lower-case letters, digits and _, a letter first"
        )


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


def _string_list(value: Any) -> list[str]:
    if isinstance(value, dict):  # {"sub_questions": [...]} and similar
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list) or not value:
        raise ValueError("expected a non-empty JSON array of sub-questions")
    items = [str(v).strip() for v in value if str(v).strip()]
    if not items:
        raise ValueError("expected a non-empty JSON array of sub-questions")
    return items


def _is_multi_hop(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("is_multi_hop"), bool):
        raise ValueError('expected {"is_multi_hop": true|false}')
    return bool(value["is_multi_hop"])


def ask_json(
    who: str, prompt_id: tuple[str, int], question: str, ctx: Context, read: Callable[[Any], T]
) -> tuple[T | None, str]:
    """Ask the prompt (id, version) about ``question`` for JSON, read with ``read``
    (:func:`~chainrag.llm.structured.complete_json`: one repair, then give up).

    Returns:
        The value and the last reply's text, or None and the error when the reply was still
        unusable after the repair. ``who`` names the stage if the context has no LLM.
    """
    llm = ctx.require_llm(who)
    request = load_prompt(*prompt_id).request(question=question)
    try:
        value, responses = complete_json(llm, request, read)
    except LLMOutputError as exc:
        return None, str(exc)
    return value, responses[-1].text


@DECOMPOSERS.register("llm_json")
@attrs.frozen
class LLMDecomposer:
    """Sub-questions as a JSON array from the LLM: ``decompose@v2`` is appendix D's prompt
    (Figure 8) with a worked example for each kind; ``prompt_version: 1`` is our earlier, shorter
    prompt, which also told the model to refer to earlier answers with a pronoun;
    ``prompt_version: 3`` (not the paper's) is v2 with numbered references (``Where was #1
    born?``) for the ``numbered`` rewriter.

    Unusable output (after one repair) falls back to the question itself, marked ``fallback``
    in the trace. Recipe: ``{kind: llm_json, max_sub_questions: 4}``.
    """

    max_sub_questions: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    prompt_version: int = 2

    def __call__(self, question: str, ctx: Context) -> Decomposition:
        prompt_id = ("decompose", self.prompt_version)
        subs, raw = ask_json("llm_json decomposer", prompt_id, question, ctx, _string_list)
        if subs is None:
            return Decomposition((question,), fallback=True, raw=raw)
        return Decomposition(tuple(subs[: self.max_sub_questions]), raw=raw)


@MULTI_HOP_JUDGES.register("llm_json")
@attrs.frozen
class LLMMultiHopJudge:
    """Asks the LLM for ``{"is_multi_hop": bool}`` (the authors' code's first step); an
    unusable reply counts as multi-hop, so the question is still decomposed.
    Recipe: ``{kind: llm_json}``.
    """

    prompt_version: int = 1

    def __call__(self, question: str, ctx: Context) -> Verdict:
        prompt_id = ("multi_hop", self.prompt_version)
        multi, raw = ask_json("llm_json multi-hop judge", prompt_id, question, ctx, _is_multi_hop)
        return Verdict(True if multi is None else multi, raw)


def history_text(history: Sequence[SubAnswer]) -> str:
    return "\n".join(f"Q: {h.question}\nA: {h.answer}" for h in history) or "(none)"


@REWRITERS.register("llm")
@attrs.frozen
class LLMRewriter:
    """Fills the entity a sub-question refers to from all earlier questions and answers (§3.3).

    An empty reply keeps the sub-question as it was. Recipe: ``{kind: llm}``.
    """

    prompt_version: int = 1

    def __call__(self, sub_question: str, history: Sequence[SubAnswer], ctx: Context) -> str:
        llm = ctx.require_llm("llm rewriter")
        prompt = load_prompt("rewrite", self.prompt_version)
        reply = llm.complete(prompt.request(question=sub_question, history=history_text(history)))
        rewritten = clean_answer(reply.text)
        return rewritten or sub_question


@SUMMARIZERS.register("llm")
@attrs.frozen
class LLMSummarizer:
    """Summarises an unanswered sub-question's sentences for the next one (§3.3).

    Recipe: ``{kind: llm}``.
    """

    prompt_version: int = 1

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> str:
        llm = ctx.require_llm("llm summarizer")
        prompt = load_prompt("summarize", self.prompt_version)
        reply = llm.complete(prompt.request(question=question, evidence=numbered(evidence)))
        return reply.text.strip()


@ANSWERERS.register("llm_short")
@attrs.frozen
class LLMShortAnswer:
    """The shortest answer from the evidence, or "unanswerable" (ChainRAG's sub-answer).

    Recipe: ``{kind: llm_short, prompt: answer_sub, prompt_version: 2}`` (``cxtint`` answers
    without the unanswerable option, as the baselines do). ``answer_sub@v2`` shares its prefix
    with the sufficiency judge's ``sufficiency@v2``: after the last check, the server's prompt
    cache already holds the evidence (bench/llm_speed.py: about a minute saved per sub-question
    with the 1.5B model on 2 cores).
    """

    prompt: str = "answer_sub"
    prompt_version: int = 1

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> SubAnswer:
        llm = ctx.require_llm("llm_short answerer")
        template = load_prompt(self.prompt, self.prompt_version)
        reply = llm.complete(template.request(question=question, evidence=numbered(evidence)))
        answer = clean_answer(reply.text)
        return SubAnswer(question, answer, not is_unanswerable(answer))


@SUFFICIENCY_JUDGES.register("llm_answerable")
@attrs.frozen
class LLMAnswerable:
    """A sufficiency judge that tries: it asks for the sub-answer (``answer_sub``) and counts
    the evidence as sufficient unless the reply is "unanswerable".

    Not the paper's judgement (§3.2 asks the LLM whether the sentences suffice; that is
    ``llm_yes_no``). It exists because a small model answers that question "yes" to nearly
    anything: ``chainrag experiment judge`` measures how well a judge tells the gold paragraphs
    from distractors. Its request is exactly the sub-answer's, so after the last check the
    server's prompt cache holds the whole prompt. Its verdict carries the cleaned sub-answer
    (``Verdict.answer``), so ChainRAG's ``answer_from_judge`` can take it instead of asking
    again.
    Recipe: ``{kind: llm_answerable}``.
    """

    answers: ClassVar[bool] = True
    """Its verdicts carry the sub-answer (``Verdict.answer``, what ``answer_from_judge`` reads)."""

    prompt_version: int = 2

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> Verdict:
        answer = LLMShortAnswer("answer_sub", self.prompt_version)(question, evidence, ctx)
        return Verdict(ok=answer.answered, raw=answer.answer, answer=answer.answer)


@INTEGRATORS.register("ans_int")
@attrs.frozen
class AnsInt:
    """AnsInt (§3.4): the original question and the sub-question/answer pairs → the answer.

    ``use_original_sub_questions`` feeds the sub-questions before rewriting (the authors' code).
    Recipe: ``{kind: ans_int}``.
    """

    use_original_sub_questions: bool = False
    prompt_version: int = 1
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        llm = ctx.require_llm("ans_int integrator")
        pairs = list(inputs.sub_answers)
        if self.use_original_sub_questions and len(inputs.original_sub_questions) == len(pairs):
            originals = inputs.original_sub_questions
            pairs = [attrs.evolve(p, question=q) for p, q in zip(pairs, originals, strict=True)]
        prompt = load_prompt("ansint", self.prompt_version)
        reply = llm.complete(prompt.request(question=inputs.question, pairs=history_text(pairs)))
        return Answer(clean_answer(reply.text), reply.text)


@INTEGRATORS.register("cxt_int")
@attrs.frozen
class CxtInt:
    """CxtInt (§3.4): all retrieved sentences, de-duplicated, reranked against the original
    question, kept within the word budget → the answer. Recipe: ``{kind: cxt_int}``.

    ``layout: passages`` (not the paper's) shows the same kept sentences as passages: those of
    one passage together, in the passage's own order, after its title, the passages in the
    order of their best-ranked sentence — so a sentence reads with what names its subject. The
    budget counts the sentences' words, as before; it needs an index of sentences.
    ``notes: true`` (not the paper's) adds the answered sub-questions and their answers after
    the context, as notes that may be wrong (prompt ``cxtint_notes``): what AnsInt reads and
    what CxtInt reads in one request.
    ``order: best_last`` (not the paper's) shows the same items in reverse, the best-ranked
    sentence or passage last, next to the question that follows the context — for readers
    that weigh what they read last (the paper shows the best first).
    ``reason: true`` (not the paper's) lets the reader name the facts that answer the question
    in at most three short sentences before its answer (prompt ``cxtint_reason``, the answer
    read after its last "So the answer is"): one call, as before, with more completion tokens.
    """

    reranker: Reranker = attrs.field(factory=NoRerank)
    word_budget: int = attrs.field(default=3000, validator=attrs.validators.ge(1))
    layout: Literal["ranked", "passages"] = "ranked"
    order: Literal["best_first", "best_last"] = "best_first"
    notes: bool = False
    reason: bool = attrs.field(default=False)
    prompt_version: int = 1
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    @reason.validator
    def _one_prompt(self, _: attrs.Attribute[bool], reason: bool) -> None:
        if reason and self.notes:
            raise ValueError(
                "cxt_int: notes: true and reason: true are two different prompts "
                "(cxtint_notes, cxtint_reason); choose one"
            )

    def check_recipe(self, recipe: Recipe) -> None:
        """``layout: passages`` needs an index of sentences."""
        if self.layout == "passages" and recipe.index is not None and recipe.index.chunker:
            raise ValueError(
                "cxt_int's layout: passages shows each sentence with its passage's other kept "
                "sentences and title; this recipe's index is chunks (index.chunker): use "
                "layout: ranked"
            )

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        llm = ctx.require_llm("cxt_int integrator")
        readable = inputs.readable()
        texts = [text for text, _ in readable]
        hits = [Hit(i, 0.0) for i in range(len(texts))]  # the candidates, by position
        ranked = self.reranker(inputs.question, hits, texts, ctx)
        kept, _, _ = fit(ranked, lambda hit: words(texts[hit.index]), self.word_budget)
        shown = [texts[hit.index] for hit in kept]
        if self.layout == "passages":
            shown = as_passages([readable[hit.index][1] for hit in kept], ctx)
        if self.order == "best_last":
            shown.reverse()
        values = {"question": inputs.question, "evidence": numbered(shown)}
        if self.notes:
            values["pairs"] = history_text([a for a in inputs.sub_answers if a.answered])
        name = "cxtint_notes" if self.notes else "cxtint_reason" if self.reason else "cxtint"
        reply = llm.complete(load_prompt(name, self.prompt_version).request(**values))
        read = final_answer if self.reason else clean_answer
        return Answer(read(reply.text), reply.text)


def as_passages(kept: Sequence[int | None], ctx: Context) -> list[str]:
    """The sentence units ``kept`` (best first) as one ``title: sentence sentence …`` text per
    passage, sentences in passage order, passages in the order of their best sentence."""
    index = ctx.require_index()
    if not isinstance(index, Sentenced) or None in kept:
        raise MissingResourceError(
            "cxt_int with layout: passages needs an index of sentences and the units its "
            "evidence came from (ChainRAG over a sentence graph or a corpus index)"
        )
    sentences = [index.sentences[unit] for unit in kept if unit is not None]
    groups: dict[int, list[Sentence]] = {}
    for sentence in sentences:
        groups.setdefault(sentence.passage, []).append(sentence)
    return [
        f"{group[0].title}: " + " ".join(s.text for s in sorted(group, key=lambda s: s.position))
        for group in groups.values()
    ]


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


@INTEGRATORS.register(
    "form_checked", example={"integrator": {"kind": "cxt_int"}, "fallback": {"kind": "ans_int"}}
)
@attrs.frozen
class FormChecked:
    """``integrator``'s answer unless it does not fit the form the question asks for
    (:func:`misfit`): then ``fallback``'s, if that one fits (not the paper's).

    The fallback is asked only for those questions, so it adds a call only to them; when the
    recipe's list also holds the fallback, its answer is that one's, computed once a question
    (:class:`~chainrag.core.types.Integrated`). Made for issue 24: with the passage layout
    the 1.5B reader answered "Yes" to 5 of 60 which/who questions, where AnsInt named one.
    The answer's first :class:`~chainrag.core.types.Pick` says which integrator answered and
    why.
    Recipe: ``{kind: form_checked, integrator: {kind: cxt_int, …}, fallback: {kind: ans_int}}``.
    """

    integrator: Integrator
    fallback: Integrator
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        first = inputs.integrated.answer(self.integrator, inputs, ctx)
        why = misfit(inputs.question, first.text)
        if why is None:
            return picked(first, Pick("first", "fits", "form"))
        other = inputs.integrated.answer(self.fallback, inputs, ctx)
        if misfit(inputs.question, other.text) is not None:
            note = f"{why}; the fallback's {other.text!r} does not fit either"
            return picked(first, Pick("first", note, "form", misfit=why))
        note = f"the first answer, {first.text!r}, is {why}"
        return picked(other, Pick("fallback", note, "form", misfit=why))


def picked(answer: Answer, pick: Pick) -> Answer:
    """``answer``, as an integrator that picked it among its parts' answers gives it: with
    ``pick`` before the picks it already carries."""
    return attrs.evolve(answer, picks=(pick, *answer.picks))


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
    (:func:`~chainrag.components.judges.yes_share`); ``second``'s answer is taken where its
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
        first = inputs.integrated.answer(self.first, inputs, ctx)
        second = inputs.integrated.answer(self.second, inputs, ctx)
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
