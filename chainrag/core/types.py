"""Typed, frozen data passed between stages.

Every stage of every method takes and returns these records, never ``dict[str, Any]``.
Identity of a sentence or chunk is its integer index in the index it belongs to, never its
text. Records holding numpy arrays compare arrays by value (``np.array_equal``).

The records fall into five groups: the corpus (passages, sentences, mentions), QA examples
with their gold annotations, retrieval results, the reasoning steps of a method (decomposition,
rewriting, answers), and the LLM request/response pair with its accounting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs
import numpy as np
from numpy.typing import NDArray

from chainrag.core.notes import MethodNotes

FloatArray = NDArray[np.float32]
"""A float32 array; embeddings are (n, d) and L2-normalised."""


def _array_eq(a: FloatArray, b: FloatArray) -> bool:
    return bool(a.shape == b.shape and np.array_equal(a, b))


# --------------------------------------------------------------------------- corpus


@attrs.frozen
class Passage:
    """A passage (paragraph) of a context or a corpus.

    Attributes:
        pid: Stable id within its context or corpus (e.g. the dataset's paragraph ``idx``).
        title: The passage's title (Wikipedia page title in the multi-hop sets).
        text: The passage text.
        sentence_spans: Character spans of the dataset's own sentences, where it ships the text
            split (HotpotQA, 2Wiki); gold supporting sentences refer to them by position.
    """

    pid: str
    title: str
    text: str
    sentence_spans: tuple[tuple[int, int], ...] = ()


@attrs.frozen
class Sentence:
    """A sentence with its provenance: the graph's node.

    Attributes:
        sid: Index of the sentence in its index (0..n-1).
        text: The sentence text.
        passage: Index of its passage in the passages the index was built from.
        title: The passage title (kept here so a trace reads without a look-up).
        position: Position of the sentence within its passage (0-based).
        start: Character offset of the sentence in the passage text.
        end: Character offset one past its last character.
    """

    sid: int
    text: str
    passage: int
    title: str
    position: int
    start: int
    end: int


@attrs.frozen
class Chunk:
    """A fixed-size word chunk of a passage: the unit of chunk mode (NaiveRAG, "w/o Graph").

    ``start``/``end`` are character offsets in the passage text, as for a sentence.
    """

    cid: int
    text: str
    passage: int
    title: str
    position: int
    start: int = 0
    end: int = 0


@attrs.frozen
class Mention:
    """A named-entity mention found by NER in one sentence."""

    text: str
    label: str
    start: int
    end: int


@attrs.frozen
class ScoredEntity:
    """An entity (normalised surface form) with its importance score."""

    name: str
    score: float


def _optional_array_eq(a: FloatArray | None, b: FloatArray | None) -> bool:
    if a is None or b is None:
        return a is b
    return _array_eq(a, b)


@attrs.frozen
class GraphInputs:
    """What the edge builders of a sentence graph read (ChainRAG §3.1).

    Attributes:
        sentences: The nodes, with passage and position (SA edges read these).
        key_entities: Key entities of each sentence, aligned with ``sentences`` (EC edges).
        embeddings: (n, d) L2-normalised sentence embeddings, or None if no builder needs them
            (SS edges read these).
    """

    sentences: tuple[Sentence, ...]
    key_entities: tuple[tuple[ScoredEntity, ...], ...] = ()
    embeddings: FloatArray | None = attrs.field(
        default=None, eq=attrs.cmp_using(eq=_optional_array_eq), hash=False
    )


# --------------------------------------------------------------------------- QA examples


@attrs.frozen
class SupportingSentence:
    """A gold supporting sentence: HotpotQA/2Wiki ``supporting_facts`` entry."""

    title: str
    index: int


@attrs.frozen
class GoldStep:
    """One step of a gold decomposition (MuSiQue ``question_decomposition``).

    ``question`` may refer to earlier answers as ``#1``, ``#2``...; ``paragraph`` is the index
    of the passage supporting the step, or None where the dataset gives none.
    """

    question: str
    answer: str
    paragraph: int | None


@attrs.frozen
class QAExample:
    """One question with its context and gold annotations, whatever the source dataset.

    Attributes:
        qid: The dataset's question id.
        dataset: Short dataset name (``musique``, ``hotpotqa``, ``2wiki``...).
        question: The question text.
        passages: The question's own context (empty in the shared-corpus setting).
        answers: Gold answer followed by its aliases; scoring takes the max over them.
        supporting_sentences: Gold supporting sentences (HotpotQA/2Wiki).
        supporting_passages: Indexes into ``passages`` of gold supporting paragraphs (MuSiQue),
            or passage ids in the shared-corpus setting.
        decomposition: Gold decomposition steps where the dataset has them.
        question_type: The dataset's question type (``bridge``, ``comparison``, ``2hop``...).
    """

    qid: str
    dataset: str
    question: str
    passages: tuple[Passage, ...] = ()
    answers: tuple[str, ...] = ()
    supporting_sentences: tuple[SupportingSentence, ...] = ()
    supporting_passages: tuple[int, ...] = ()
    decomposition: tuple[GoldStep, ...] = ()
    question_type: str = ""


# --------------------------------------------------------------------------- retrieval


@attrs.frozen
class Hit:
    """A retrieved unit (sentence or chunk index) with its score; higher is better."""

    index: int
    score: float


@attrs.frozen
class Verdict:
    """A yes/no judgement by an LLM (sufficiency, support, entailment) and its raw text.

    Attributes:
        ok: The judgement: yes (enough, supported, entailed) or no.
        raw: The judge's reply, as a trace shows it.
        answer: The sub-answer of a judge that answers while it judges (``llm_answerable``),
            None for a judge that only says yes or no.
        score: How sure a judge that scores is that the answer is yes, 0..1
            (``llm_yes_probability``'s P(yes)), None for a judge that does not score.
        checked: False for a verdict given without a check (the ``none`` judge), so a trace
            and ``chainrag walks`` tell it from a judge's "yes".
        unread: True where the judge's reply held neither a yes nor a no (read as no); False
            for a reply read, and for a judge that reads no yes/no reply.
    """

    ok: bool
    raw: str = ""
    answer: str | None = None
    score: float | None = None
    checked: bool = True
    unread: bool = False


@attrs.frozen
class Expansion:
    """What an expander gathered for one (sub-)question.

    Attributes:
        units: Retrieved unit indexes in the order they were added (de-duplicated unless an
            expander reproduces code that does not).
        seeds: The seed units the expansion started from.
        hops: Number of expansion steps taken (0 means the seeds only).
        verdicts: Sufficiency verdicts, one per check made.
        words: Number of words in the gathered units.
        budget_cut: Whether the word budget stopped the expansion (a unit did not fit); None
            where an expander has no budget, and in records written before it was kept.
    """

    units: tuple[int, ...]
    seeds: tuple[int, ...]
    hops: int = 0
    verdicts: tuple[Verdict, ...] = ()
    words: int = 0
    budget_cut: bool | None = None


@attrs.frozen
class KnowledgeItem:
    """A piece of retrieved knowledge as Shi et al.'s filter and reservoir see it."""

    text: str
    title: str = ""
    source: int | None = None
    score: float = 0.0


@attrs.frozen
class ReservoirMatch:
    """What a knowledge reservoir returned for a query: stored items and their cosines."""

    items: tuple[KnowledgeItem, ...]
    similarities: FloatArray = attrs.field(eq=attrs.cmp_using(eq=_array_eq), hash=False)


# --------------------------------------------------------------------------- reasoning


@attrs.frozen
class Decomposition:
    """Sub-questions of a question, in the order they are to be answered.

    ``fallback`` is True when the decomposer's output was unusable and the question itself was
    used as the only sub-question; this is counted and reported, never silent.
    """

    sub_questions: tuple[str, ...]
    fallback: bool = False
    raw: str = ""


@attrs.frozen
class SubAnswer:
    """The answer to one sub-question; ``answered`` is False for "unanswerable"."""

    question: str
    answer: str
    answered: bool


Took = Literal["first", "second", "fallback", "rule"]
"""Whose answer an integrator that picks one gave: its first or second part's, its
fallback's, or (``by_rule``) the one its rule decided."""

DecidedBy = Literal["same", "form", "llm", "rule"]
"""What decided a pick: the parts gave the same answer, the question's form (one answer does
not fit it), the LLM (asked), or a rule on the sub-answers."""


@attrs.frozen
class Pick:
    """How an integrator that picks one of its parts' answers (``form_checked``, ``choose``,
    ``by_rule``) decided, for the view, ``chainrag claims`` and the scripts to read.

    Attributes:
        took: Whose answer it gave (:data:`Took`).
        why: The reason in words (``the second, 'Yes', is no answer``).
        by: What decided (:data:`DecidedBy`).
        misfit: Where the form decided, how the answer set aside does not fit it (``no
            answer``; :func:`~chainrag.components.reasoning.answer_form.misfit`); else None.
        p_second: ``choose`` by probabilities: the mean share of the second answer over the
            two orders; else None.
        p_yes: ``choose`` by verify: the two answers' P(yes) that the evidence supports them,
            (first's, second's); else None.
        weighed: ``choose`` by verify: the two values weighed, (first's, second's): ``p_yes``,
            or with ``calibrate`` how far the passages raised each; else None.
    """

    took: Took
    why: str
    by: DecidedBy
    misfit: str | None = None
    p_second: float | None = None
    p_yes: tuple[float, float] | None = None
    weighed: tuple[float, float] | None = None

    @property
    def said(self) -> str:
        """The pick in one line, ``[second: the first, 'Yes', is no answer]`` (a rule's own
        answer ``[by rule: …]``)."""
        return f"[{'by rule' if self.took == 'rule' else self.took}: {self.why}]"


@attrs.frozen
class Answer:
    """A final answer with the text the LLM returned.

    ``picks``: how the integrators that picked it among their parts' answers decided, the
    outermost first (empty for an answer no integrator picked).
    """

    text: str
    raw: str = ""
    picks: tuple[Pick, ...] = ()


@attrs.frozen
class IntegrationInput:
    """Everything an integrator may use to produce the final answer.

    Attributes:
        question: The original question.
        sub_answers: Sub-question/answer pairs in order (AnsInt uses these).
        original_sub_questions: The sub-questions before rewriting (the authors' code feeds these).
        evidence: The texts of all retrieved units, one per unit (de-duplicated by unit, not
            by text), in retrieval order (CxtInt uses these; :meth:`readable` is what a reader
            sees).
        evidence_units: The index unit of each evidence text, aligned with ``evidence``
            (CxtInt's passage layout reads their provenance); empty when unknown.
        integrated: The answers of the integrators already run for this question, by what
            each computes (:func:`chainrag.components.reasoning.integrators.integrated` fills
            and reads it), shared by those that build on them.
    """

    question: str
    sub_answers: tuple[SubAnswer, ...] = ()
    original_sub_questions: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    evidence_units: tuple[int, ...] = ()
    integrated: dict[object, Answer] = attrs.field(factory=dict, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.evidence_units and len(self.evidence_units) != len(self.evidence):
            raise ValueError(
                f"evidence_units has {len(self.evidence_units)} units for "
                f"{len(self.evidence)} evidence texts: they must be aligned"
            )

    def readable(self) -> list[tuple[str, int | None]]:
        """The evidence as a reader sees it: each text once, with the first unit that gave it
        (None where units are unknown), in retrieval order. Two units with one text (a
        sentence two passages share) read as one: shown twice it adds words, not facts."""
        units: Sequence[int | None] = self.evidence_units or [None] * len(self.evidence)
        first: dict[str, int | None] = {}
        for text, unit in zip(self.evidence, units, strict=True):
            first.setdefault(text, unit)
        return list(first.items())


@attrs.frozen
class QueryPlan:
    """Output of Query Rewriter+ (Shi et al.): clarified questions and search queries."""

    questions: tuple[str, ...]
    queries: tuple[str, ...]


# --------------------------------------------------------------------------- LLM


Role = Literal["system", "user", "assistant"]


@attrs.frozen
class Message:
    """One chat message."""

    role: Role
    content: str


@attrs.frozen
class LLMRequest:
    """A complete LLM request: everything that determines the response, hence the cache key.

    Components leave ``model``, ``temperature``, ``max_tokens`` and ``seed`` unset (empty or
    None) unless a prompt needs its own value (a yes/no judge wants few tokens); the LLM stack
    fills them from the recipe's ``llm:`` before the request is cached or sent.

    Attributes:
        messages: The conversation.
        prompt_id: Which prompt template produced it, e.g. ``decompose``.
        prompt_version: The template's version, e.g. ``1``.
        model: Model string as litellm takes it (``openai/gpt-4o-mini``); "" = the recipe's.
        temperature: Sampling temperature; None = the recipe's.
        max_tokens: Completion token limit; None = the recipe's.
        seed: Sampling seed, where the backend honours one; None = the recipe's.
        json_schema: A JSON schema (as JSON text) the answer must follow, or None for free text.
        top_logprobs: How many of the first answer token's likeliest tokens to return with
            their log-probabilities (:attr:`LLMResponse.top_logprobs`); None = none. Left out
            of the cache key while None, so keys made before it existed stay valid.
    """

    messages: tuple[Message, ...]
    prompt_id: str
    prompt_version: int = 1
    model: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    json_schema: str | None = None
    top_logprobs: int | None = None


@attrs.frozen
class Usage:
    """Accounting for one or many LLM calls; cache hits are not calls and carry no tokens."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            calls=self.calls + other.calls,
            cache_hits=self.cache_hits + other.cache_hits,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_s=self.latency_s + other.latency_s,
            cost_usd=cost,
        )

    def __sub__(self, earlier: Usage) -> Usage:
        """The usage since ``earlier`` (a reading of the same counter taken before this one).

        The cost is known when this reading's is (an unknown earlier cost counts as 0)."""
        cost = None
        if self.cost_usd is not None:
            cost = self.cost_usd - (earlier.cost_usd or 0.0)
        return Usage(
            calls=self.calls - earlier.calls,
            cache_hits=self.cache_hits - earlier.cache_hits,
            prompt_tokens=self.prompt_tokens - earlier.prompt_tokens,
            completion_tokens=self.completion_tokens - earlier.completion_tokens,
            latency_s=self.latency_s - earlier.latency_s,
            cost_usd=cost,
        )


@attrs.frozen
class EncoderUsage:
    """Accounting for a remote encoder's work (an embedding model's, a reranker's): its
    requests, the tokens they embedded, the searches they ranked, the texts sent and the texts
    whose vector or score came from the store instead, the inputs cut to the model's token
    limit, latency and dollars (None where litellm's price map has no entry)."""

    requests: int = 0
    tokens: int = 0
    searches: int = 0
    sent: int = 0
    stored: int = 0
    cut: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None

    def __add__(self, other: EncoderUsage) -> EncoderUsage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return EncoderUsage(
            requests=self.requests + other.requests,
            tokens=self.tokens + other.tokens,
            searches=self.searches + other.searches,
            sent=self.sent + other.sent,
            stored=self.stored + other.stored,
            cut=self.cut + other.cut,
            latency_s=self.latency_s + other.latency_s,
            cost_usd=cost,
        )


@attrs.frozen
class LLMResponse:
    """The text an LLM returned for a request, with the usage it cost.

    ``top_logprobs``: the first answer token's likeliest tokens and their natural-log
    probabilities, likeliest first, where the request asked for them; else empty.
    """

    text: str
    model: str
    usage: Usage = Usage()
    cached: bool = False
    top_logprobs: tuple[tuple[str, float], ...] = ()


# --------------------------------------------------------------------------- traces


@attrs.frozen
class StepTrace:
    """What happened for one sub-question (or one retrieval round of an iterative method).

    Attributes:
        question: The sub-question as decomposed.
        rewritten: The rewritten sub-question, or None if the trigger did not fire.
        retrieved: Unit indexes retrieved for the step, in order.
        expansion: The expansion record, where the method expands.
        answer: The sub-answer, where the method answers per step.
        usage: LLM usage of the step.
        kept: The units among ``retrieved`` that a knowledge filter kept (Shi et al.'s
            four-module methods, LongRAG's CoT-guided filter), or None where no filter ran.
        from_memory: True for a query a knowledge reservoir answered instead of retrieval
            (Shi et al.'s four-module method; nothing is retrieved for it). Traces written
            before this field marked such a step by a ``"memory: "`` prefix of ``question``;
            :func:`chainrag.run.record.read_legacy_step` reads them.
        summary: ChainRAG's summary of an unanswered step's units, which the next step's
            answerer reads (§3.3); LongRAG's extracted information, which its generator reads
            after the kept chunks; or None (traces written before this field hold none).
        rewrite_check: The rewrite confirmer's verdict (``confirm_rewrite``: does the
            triggered sub-question refer back?), or None where none was asked (traces
            written before this field hold none; a record leaves it out when None).
    """

    question: str
    rewritten: str | None = None
    retrieved: tuple[int, ...] = ()
    expansion: Expansion | None = None
    answer: SubAnswer | None = None
    usage: Usage = Usage()
    kept: tuple[int, ...] | None = None
    from_memory: bool = False
    summary: str | None = None
    rewrite_check: Verdict | None = None


@attrs.frozen
class PhraseGraphStats:
    """What a phrase graph was built from, as a trace records it.

    Attributes:
        passages: Passages read (the index's units).
        phrases: Nodes (distinct cleaned heads and tails of well-formed triples).
        triples: Distinct well-formed triples (the code's facts).
        malformed_triples: Triples with more than one element but not three (dropped).
        synonymy_edges: Directed synonymy pairs added (the code's ``equivalent`` relations).
        unread_ner: Passages whose NER reply could not be read (no entities).
        unread_triples: Passages whose triples reply could not be read (no triples).
    """

    passages: int = 0
    phrases: int = 0
    triples: int = 0
    malformed_triples: int = 0
    synonymy_edges: int = 0
    unread_ner: int = 0
    unread_triples: int = 0


@attrs.frozen
class NamedAnswer:
    """One of a method's final answers, e.g. ``ansint`` and ``cxtint`` from one ChainRAG run."""

    name: str
    answer: Answer


@attrs.frozen
class Prediction:
    """A method's output for one question: its final answer(s) and a typed trace.

    ``answers[0]`` is the primary answer; further entries are variants produced in the same run
    (ChainRAG's AnsInt and CxtInt). ``usage`` and ``usage_by_prompt`` count the LLM calls,
    cache hits, tokens, latency and cost the question took, per prompt id (``encoder_usage``:
    the remote encoders' requests, tokens and searches, by stage). ``read`` is the
    question the final answer was read for where it is not the dataset's own (Shi et al.'s reader
    answers Query Rewriter+'s rewritten question), else None. ``phrase_graph`` is what the
    phrase graph a retriever built to answer it was made of (HippoRAG's: passages, phrases,
    triples, synonymy edges, OpenIE replies it could not read), else None. ``notes`` is what the
    method says of how it answered (:class:`~chainrag.core.notes.MethodNotes`: its answers'
    integrators, its rewriting), which the run adds to the method's prediction; None for a
    method that says nothing.
    """

    answers: tuple[NamedAnswer, ...]
    steps: tuple[StepTrace, ...] = ()
    decomposition: Decomposition | None = None
    usage: Usage = Usage()
    usage_by_prompt: tuple[tuple[str, Usage], ...] = ()
    read: str | None = None
    phrase_graph: PhraseGraphStats | None = None
    notes: MethodNotes | None = None
    encoder_usage: tuple[tuple[str, EncoderUsage], ...] = ()
    """The remote encoders' work for the question by stage (``embed passages``, ``embed
    queries``, ``rerank``); empty where no remote encoder worked."""

    @property
    def answer(self) -> str:
        """The primary answer's text."""
        return self.answers[0].answer.text if self.answers else ""
