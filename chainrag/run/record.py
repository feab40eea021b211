"""The typed line of a run: one answered question (:class:`RunRecord`) or one that failed
(:class:`QuestionError`), each one JSON object in a run folder's ``predictions.jsonl`` or
``errors.jsonl``.

    line = record_line(record)          # the JSON object, as written
    record = read_record(line)          # a RunRecord again; RecordError if it is not one

A record holds the question (id, dataset, text, type, gold answers), each answer variant's text
and scores (the primary first), the retrieval scores, the seconds the question took and the
method's whole typed trace (:class:`~chainrag.core.types.Prediction`, with its LLM usage). Its line
keeps the shape ``chainrag run`` has always written, so that a line is readable without this
package: the primary answer's ``primary``, ``answer``, ``em`` and ``f1`` beside ``answers``, and
the usage (in total and per prompt id) at the top; the trace is written without its usage per
prompt (the top holds it). :data:`RECORD_FORMAT` versions it: a line without ``format`` was
written before the key existed (format 1, the same fields; its trace may mark a step answered
from a knowledge reservoir by a ``"memory: "`` question prefix); a line of format 2 held in
text what today's traces hold in typed fields (an integrator's pick in the first lines of its
answer's ``raw``, an unchecked sufficiency verdict by a sentinel ``raw``, a reply neither yes nor
no only in its ``raw``); a line of format 3 held no notes of its method (the trace's
``notes``: its answers' integrators, its rewriting), which a reader takes from the run's stored
recipe (:func:`chainrag.run.notes.notes_of`). :func:`upgrade_trace` reads such a trace into
today's fields, when the line is read: the one place where stage text is parsed and where an
old line gets its method's notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs

from chainrag.core.errors import ChainragError
from chainrag.core.notes import MethodNotes
from chainrag.core.types import Answer, Pick, Prediction, StepTrace, Usage, Verdict
from chainrag.recipes.structure import make_converter, problems, to_plain, type_name

T = TypeVar("T")

RECORD_FORMAT = 4
"""The version of a record's line; lines without ``format`` are format 1. Format 3 holds an
answer's picks and a verdict's ``checked`` and ``unread`` as fields, format 4 the trace's
``notes`` (:func:`upgrade_trace`)."""


class RecordError(ChainragError, ValueError):
    """A JSON line that is not a run record (of this version); the message lists every problem
    with its path (``required key missing @ record.gold``)."""


@attrs.frozen
class ScoredAnswer:
    """One answer variant of a question with its EM and F1 against the gold answers (0..1)."""

    text: str
    em: float
    f1: float


@attrs.frozen
class RetrievalRecord:
    """Retrieval scores of a question's units against its gold evidence (see
    :mod:`chainrag.data.metrics`): the gold ``level`` (``paragraph`` or ``sentence``) and ``scores``
    by name (``recall@5``, ``hit@4``, ``mrr``, ``recall@all``, ``words``), in the line's order."""

    level: str
    scores: Mapping[str, float]


@attrs.frozen
class RunRecord:
    """One answered question of a run (see the module docstring).

    Attributes:
        answers: Answer variant -> its text and scores, the primary (the method's first
            answer) first; ChainRAG gives ``ansint`` and ``cxtint``.
        retrieval: None when the question has no gold evidence to score against.
        trace: The method's prediction, with the question's LLM usage (``trace.usage``, and per
            prompt id ``trace.usage_by_prompt``).
        seconds: Wall time of the question, index building included (rounded to ms).
        state: The run's cross-question state after the question, a marker per state
            (``{"reservoir": 17}``), where the method has any (None otherwise, and the line
            leaves it out).
    """

    id: str
    dataset: str
    question: str
    question_type: str
    gold: tuple[str, ...]
    answers: Mapping[str, ScoredAnswer]
    retrieval: RetrievalRecord | None
    trace: Prediction
    seconds: float
    state: Mapping[str, int] | None = None

    @property
    def primary(self) -> str:
        """The primary answer variant's name ("" for a method that gave no answer)."""
        return next(iter(self.answers), "")

    @property
    def scored(self) -> ScoredAnswer:
        """The primary answer with its scores (EM and F1 0 when there is none)."""
        return self.answers[self.primary] if self.answers else ScoredAnswer("", 0.0, 0.0)

    @property
    def em(self) -> float:
        return self.scored.em

    @property
    def f1(self) -> float:
        return self.scored.f1

    @property
    def usage(self) -> Usage:
        """The LLM calls, cache hits, tokens, latency and cost of the question."""
        return self.trace.usage


@attrs.frozen
class QuestionError:
    """The ``errors.jsonl`` line of a question that failed (credentials already masked).

    ``bug`` marks an exception that is not a :class:`~chainrag.core.errors.ChainragError` (a defect
    to report, recorded with the end of its ``traceback``); the run went on either way.
    """

    id: str
    error: str
    message: str
    when: str
    bug: bool = False
    traceback: str | None = None


# --------------------------------------------------------------------------- lines


def _make() -> cattrs.Converter:
    conv = make_converter()
    omit = cattrs.gen.make_dict_unstructure_fn(QuestionError, conv, _cattrs_omit_if_default=True)
    conv.register_unstructure_hook(QuestionError, omit)
    conv.register_unstructure_hook(Verdict, _verdict_data)
    pick = cattrs.gen.make_dict_unstructure_fn(Pick, conv, _cattrs_omit_if_default=True)
    conv.register_unstructure_hook(Pick, pick)
    answer = cattrs.gen.make_dict_unstructure_fn(
        Answer, conv, picks=cattrs.gen.override(omit_if_default=True)
    )
    conv.register_unstructure_hook(Answer, answer)
    step = cattrs.gen.make_dict_unstructure_fn(
        StepTrace, conv, rewrite_check=cattrs.gen.override(omit_if_default=True)
    )
    conv.register_unstructure_hook(StepTrace, step)
    prediction = cattrs.gen.make_dict_unstructure_fn(
        Prediction,
        conv,
        phrase_graph=cattrs.gen.override(omit_if_default=True),
        notes=cattrs.gen.override(omit_if_default=True),
    )
    conv.register_unstructure_hook(Prediction, prediction)
    return conv


def _verdict_data(verdict: Verdict) -> dict[str, Any]:
    own: dict[str, Any] = {"ok": verdict.ok, "raw": verdict.raw}
    extra = {"answer": verdict.answer, "score": verdict.score}
    own |= {key: value for key, value in extra.items() if value is not None}
    if not verdict.checked:
        own["checked"] = False
    if verdict.unread:
        own["unread"] = True
    return own


CONVERTER = _make()
"""The strict project converter (:func:`chainrag.recipes.structure.make_converter`) that run records
are written and read through; a :class:`QuestionError`'s line leaves out ``bug`` and
``traceback`` when they are unset, a verdict its ``answer``, ``score``, ``checked`` and
``unread``, an answer its ``picks`` and a pick its unset values, a trace step its
``rewrite_check``, and a trace its ``phrase_graph`` and ``notes``, each at its default (so
records are written as before those fields existed)."""


def plain(value: Any, converter: cattrs.Converter = CONVERTER) -> Any:
    """An attrs value as JSON data (tuples as lists)."""
    return to_plain(converter.unstructure(value))


def structured(data: Any, cls: type[T], what: str, converter: cattrs.Converter = CONVERTER) -> T:
    """``data`` as a ``cls``; a :class:`RecordError` lists every problem, each with its path
    from ``what`` (``required key missing @ record.gold``)."""
    if not isinstance(data, Mapping):
        raise RecordError(f"expected a JSON object, got {type_name(data)}")
    try:
        return converter.structure(data, cls)
    except Exception as exc:  # a cattrs error tree, or a validator's error
        found = problems(exc, what)
        raise RecordError("; ".join(map(str, found)) or f"{what}: {exc}") from None


def record_line(record: RunRecord) -> dict[str, Any]:
    """The JSON object of ``record`` as ``predictions.jsonl`` holds it (see the module
    docstring for its shape)."""
    trace = record.trace
    retrieval = None
    if record.retrieval is not None:
        retrieval = {"level": record.retrieval.level, **record.retrieval.scores}
    return {
        "id": record.id,
        "dataset": record.dataset,
        "question": record.question,
        "question_type": record.question_type,
        "gold": list(record.gold),
        "primary": record.primary,
        "answer": trace.answer,
        "em": record.em,
        "f1": record.f1,
        "answers": {name: plain(scored) for name, scored in record.answers.items()},
        "retrieval": retrieval,
        "usage": plain(trace.usage),
        "usage_by_prompt": {prompt: plain(usage) for prompt, usage in trace.usage_by_prompt},
        "seconds": record.seconds,
        "trace": _bare_trace(trace),
        "format": RECORD_FORMAT,
    } | ({"state": dict(record.state)} if record.state is not None else {}) | (
        {"encoder_usage": {stage: plain(u) for stage, u in trace.encoder_usage}}
        if trace.encoder_usage else {}
    )  # fmt: skip


def _bare_trace(trace: Prediction) -> dict[str, Any]:
    """The trace as a line holds it: its usage by prompt and the encoders' at the line's top."""
    bare = plain(attrs.evolve(trace, usage_by_prompt=()))
    bare.pop("encoder_usage", None)
    return dict(bare)


TYPED_FORMAT = 3
"""The first format whose lines hold in typed fields what stage text said before."""

_DERIVED = ("primary", "answer", "em", "f1", "format")
"""Keys of a line that repeat what the record holds elsewhere (and its version)."""


def no_notes() -> MethodNotes | None:
    return None


def read_record(data: Any, notes: Callable[[], MethodNotes | None] = no_notes) -> RunRecord:
    """The record of one ``predictions.jsonl`` line (of format 1 to :data:`RECORD_FORMAT`); a
    :class:`RecordError` listing what is missing or of the wrong type otherwise. ``notes()``:
    what the run's recipe says of its method, asked for a line written before lines held it
    (:func:`chainrag.run.notes.notes_of`)."""
    if not isinstance(data, Mapping):
        raise RecordError(f"expected a JSON object, got {type_name(data)}")
    version = data.get("format", 1)
    if version not in range(1, RECORD_FORMAT + 1):
        raise RecordError(
            f"record format {version!r}: written by another version of chainrag (this one "
            f"reads formats 1 to {RECORD_FORMAT})"
        )
    fields = {k: v for k, v in data.items() if k not in _DERIVED}
    trace, usage = fields.get("trace"), fields.pop("usage", None)
    by_prompt = fields.pop("usage_by_prompt", {})
    encoders = fields.pop("encoder_usage", {})
    if isinstance(trace, Mapping):  # the usage is the line's, at its top
        trace = {**trace, "usage": usage} if usage is not None else dict(trace)
        if isinstance(by_prompt, Mapping):
            trace["usage_by_prompt"] = [[k, v] for k, v in by_prompt.items()]
        if isinstance(encoders, Mapping) and encoders:
            trace["encoder_usage"] = [[k, v] for k, v in encoders.items()]
        old = version < RECORD_FORMAT
        fields["trace"] = upgrade_trace(trace, version, notes()) if old else trace
    retrieval = fields.get("retrieval")
    if isinstance(retrieval, Mapping):
        scores = {k: v for k, v in retrieval.items() if k != "level"}
        fields["retrieval"] = {"level": retrieval.get("level"), "scores": scores}
    return structured(fields, RunRecord, "record")


# --------------------------------------------------------------------------- older lines

LEGACY_MEMORY_PREFIX = "memory: "
"""How traces of format 1 marked a step answered from a knowledge reservoir: the prefix of its
question (today ``StepTrace.from_memory``)."""

LEGACY_NOT_CHECKED = "not checked (judge: none)"
"""The ``raw`` of a sufficiency verdict given without a check (the ``none`` judge) in lines
before format 3 (today ``Verdict.checked``)."""

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
"""The first standalone yes/no of a judge's reply, as the judges read it
(``components.retrieval.judges.parse_yes_no``; tests/test_run_records.py checks that the two
agree)."""

_PICK = re.compile(r"^\[(first|second|fallback|by rule): (.*)\]$")
_P_SECOND = re.compile(r"^P\(second\) ([0-9.]+), ")
_P_YES = re.compile(
    r"^P\(yes\) ([0-9.]+) for the second, ([0-9.]+) for the first"
    r"(?:; [0-9.]+ and [0-9.]+ without the passages, so ([-+][0-9.]+) against ([-+][0-9.]+))?"
)
_NEITHER_FITS = re.compile(r"^(.+?); the fallback's .* does not fit either$")


def upgrade_trace(
    trace: Mapping[str, Any], version: int, notes: MethodNotes | None = None
) -> dict[str, Any]:
    """The JSON data of a trace from a line of format ``version`` (before
    :data:`RECORD_FORMAT`) in today's form: what its text said, in typed fields, and
    ``notes`` (what the run's recipe says of its method) where it has none.

    - format 1: a step whose question starts with ``"memory: "`` is the query without it,
      answered from memory (``from_memory``);
    - formats 1 and 2: a sufficiency verdict whose ``raw`` is :data:`LEGACY_NOT_CHECKED` is
      unchecked (``checked: false``, no ``raw``); one that may be a yes/no judge's
      (:func:`_yes_no_judges`) whose reply holds neither is ``unread``; an answer whose
      ``raw`` starts with the lines an integrator that picks wrote (``[second: the first,
      'Yes', is no answer]``) has those lines as its ``picks``, outermost first, and the rest
      as its ``raw``;
    - formats 1 to 3: the trace's ``notes`` are ``notes``, the run's recipe's.
    """
    out = dict(trace)
    if notes is not None and out.get("notes") is None:
        out["notes"] = plain(notes)
    if version >= TYPED_FORMAT:
        return out
    steps = out.get("steps")
    if isinstance(steps, list):
        out["steps"] = [_step(s, version) if isinstance(s, Mapping) else s for s in steps]
    answers = out.get("answers")
    if isinstance(answers, list):
        out["answers"] = [_named(a) if isinstance(a, Mapping) else a for a in answers]
    return out


def read_legacy_step(data: Mapping[str, Any]) -> dict[str, Any]:
    """A trace step's JSON data of format 1 in today's form: a step whose question starts with
    ``"memory: "`` is the query without it, answered from memory. Data with a ``from_memory``
    key is returned as it is."""
    step = dict(data)
    question = step.get("question")
    if isinstance(question, str) and "from_memory" not in step:
        query = question.removeprefix(LEGACY_MEMORY_PREFIX)
        if query != question:
            step["question"], step["from_memory"] = query, True
    return step


def _step(data: Mapping[str, Any], version: int) -> dict[str, Any]:
    step = read_legacy_step(data) if version == 1 else dict(data)
    expansion = step.get("expansion")
    if isinstance(expansion, Mapping) and isinstance(expansion.get("verdicts"), list):
        verdicts = [_verdict(v) if isinstance(v, Mapping) else v for v in expansion["verdicts"]]
        step["expansion"] = {**expansion, "verdicts": verdicts}
    return step


def _verdict(data: Mapping[str, Any]) -> dict[str, Any]:
    verdict = dict(data)
    raw = verdict.get("raw")
    if not isinstance(raw, str):
        return verdict
    if raw == LEGACY_NOT_CHECKED:
        verdict["raw"], verdict["checked"] = "", False
    elif _YES_NO.search(raw) is None and _yes_no_judges(verdict):
        verdict["unread"] = True
    return verdict


def _yes_no_judges(verdict: Mapping[str, Any]) -> bool:
    """Whether an old verdict may be a yes/no judge's: not one that answers (``answer``), nor
    a "yes" without a score, which a yes/no judge gives only to a reply that says yes (an
    answering judge's, written before verdicts kept its answer)."""
    return verdict.get("answer") is None and (
        verdict.get("ok") is not True or verdict.get("score") is not None
    )


def _named(data: Mapping[str, Any]) -> dict[str, Any]:
    named = dict(data)
    answer = named.get("answer")
    if isinstance(answer, Mapping) and isinstance(answer.get("raw"), str):
        raw, picks = answer["raw"], []
        while (found := _PICK.match(raw.split("\n", 1)[0])) is not None:
            picks.append(_pick(found.group(1), found.group(2)))
            raw = raw.partition("\n")[2]
        if picks:
            named["answer"] = {**answer, "raw": raw, "picks": picks}
    return named


def _pick(took: str, why: str) -> dict[str, Any]:
    """The JSON data of the :class:`~chainrag.core.types.Pick` one ``[took: why]`` line said."""
    pick: dict[str, Any] = {"took": "rule" if took == "by rule" else took, "why": why}
    if took == "by rule" or why == "no comparison the rule decides":
        return pick | {"by": "rule"}
    if why == "both said it":
        return pick | {"by": "same"}
    if (found := _P_SECOND.match(why)) is not None:
        return pick | {"by": "llm", "p_second": float(found.group(1))}
    if (found := _P_YES.match(why)) is not None:
        p_yes = [float(found.group(2)), float(found.group(1))]
        weighed = [float(found.group(4)), float(found.group(3))] if found.group(3) else p_yes
        return pick | {"by": "llm", "p_yes": p_yes, "weighed": weighed}
    if "chosen both ways; " in why:
        return pick | {"by": "llm"}
    if why == "fits":
        return pick | {"by": "form"}
    found = _NEITHER_FITS.match(why)
    misfit = found.group(1) if found is not None else why.rpartition(", is ")[2]
    return pick | {"by": "form", "misfit": misfit}


def error_line(error: QuestionError) -> dict[str, Any]:
    """The JSON object of a failed question as ``errors.jsonl`` holds it."""
    return plain(error)  # type: ignore[no-any-return]


def read_error(data: Any) -> QuestionError:
    """The failed question of one ``errors.jsonl`` line; a :class:`RecordError` otherwise."""
    return structured(data, QuestionError, "error")
