"""The built-in question formats: MuSiQue, HotpotQA/2Wiki and LongBench, each a record spec and
a parser into :class:`~chainrag.core.types.QAExample` (:data:`FORMATS`); the formats that are
only detected from a file's records (HippoRAG, FlashRAG) are in :mod:`chainrag.data.detect`.

HotpotQA/2Wiki ship their text split into sentences; the passage keeps those sentence spans,
since gold supporting facts point at them. LongBench's JSON Lines (``input``, ``context``,
``answers``: the setting the ChainRAG paper evaluates in) has no gold evidence, so retrieval is
not scored on it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import attrs

from chainrag.core.types import GoldStep, Passage, QAExample, SupportingSentence
from chainrag.data.specs import (
    ALIASES,
    BOOLEAN,
    INDEX,
    KEY,
    STRING,
    TEXT,
    TITLED_SENTENCES,
    Is,
    ListOf,
    Obj,
    Pair,
    Spec,
    is_integer,
    is_text,
)

MUSIQUE_PARAGRAPH = Obj(
    "a paragraph object",
    {"idx": KEY, "title": STRING, "paragraph_text": TEXT},
    {"is_supporting": BOOLEAN},
)
MUSIQUE_STEP = Obj(
    "a sub-question object",
    {"question": TEXT, "answer": TEXT},
    {"paragraph_support_idx": Is("a paragraph idx or null", lambda v: v is None or KEY.test(v))},
)
MUSIQUE = Obj(
    "a JSON object",
    {
        "id": KEY,
        "question": TEXT,
        "answer": TEXT,
        "paragraphs": ListOf(MUSIQUE_PARAGRAPH, "a non-empty list of paragraphs", 1),
    },
    {
        "answer_aliases": ALIASES,
        "question_decomposition": ListOf(MUSIQUE_STEP, "a list of sub-questions"),
    },
)
HOTPOT = Obj(
    "a JSON object",
    {
        "_id": KEY,
        "question": TEXT,
        "answer": TEXT,
        "context": ListOf(TITLED_SENTENCES, "a non-empty list of [title, [sentences]]", 1),
    },
    {
        "answer_aliases": ALIASES,
        "supporting_facts": ListOf(
            Pair(STRING, INDEX, "[title, sentence index]"), "a list of [title, sentence index]"
        ),
        "type": STRING,
    },
)


def unread_paragraph_keys(records: Sequence[tuple[str, Any]], known: Collection[str]) -> list[str]:
    """A warning for each key of the records' ``paragraphs`` that is not in ``known`` (a
    misspelt ``is_support`` would otherwise be ignored and its marks lost): how many
    paragraphs have it, where first, and the known key it is closest to."""
    found: dict[str, list[str]] = {}
    for place, record in records:
        for i, paragraph in enumerate(record["paragraphs"]):
            for key in paragraph:
                if key not in known:
                    found.setdefault(key, []).append(f"{place}, paragraphs[{i}]")
    notes = []
    for key, where in found.items():
        close = difflib.get_close_matches(key, list(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        many = f"{len(where)} paragraphs, the first at {where[0]}" if len(where) > 1 else where[0]
        notes.append(
            f"paragraph key {key!r} is not read ({many}){hint} (the keys read: {', '.join(known)})"
        )
    return notes


def _musique_notes(records: Sequence[tuple[str, Any]]) -> list[str]:
    return unread_paragraph_keys(
        records, [*MUSIQUE_PARAGRAPH.required, *MUSIQUE_PARAGRAPH.optional]
    )


def _no_notes(records: Sequence[tuple[str, Any]]) -> list[str]:
    return []


def _musique(record: Mapping[str, Any], dataset: str) -> QAExample:
    paragraphs = record["paragraphs"]
    passages = tuple(Passage(str(p["idx"]), p["title"], p["paragraph_text"]) for p in paragraphs)
    position = {str(p["idx"]): i for i, p in enumerate(paragraphs)}
    steps = tuple(
        GoldStep(
            s["question"],
            s["answer"],
            position.get(str(s.get("paragraph_support_idx"))),
        )
        for s in record.get("question_decomposition", [])
    )
    return QAExample(
        qid=str(record["id"]),
        dataset=dataset,
        question=record["question"],
        passages=passages,
        answers=(record["answer"], *record.get("answer_aliases", [])),
        supporting_passages=tuple(i for i, p in enumerate(paragraphs) if p.get("is_supporting")),
        decomposition=steps,
        question_type=str(record["id"]).split("__")[0],
    )


def sentences_passage(pid: str, title: str, sentences: list[str]) -> Passage:
    """A passage from pre-split sentences, joined with a space where none separates them."""
    text, spans = "", []
    for sentence in sentences:
        if text and not text[-1].isspace() and not sentence[:1].isspace():
            text += " "
        lead = len(sentence) - len(sentence.lstrip())
        start = len(text) + lead
        text += sentence
        spans.append((start, len(text.rstrip())))
    return Passage(pid, title, text, tuple(spans))


def _hotpot(record: Mapping[str, Any], dataset: str) -> QAExample:
    passages = tuple(
        sentences_passage(str(i), title, sentences)
        for i, (title, sentences) in enumerate(record["context"])
    )
    facts = tuple(SupportingSentence(t, i) for t, i in record.get("supporting_facts", []))
    titles = {f.title for f in facts}
    return QAExample(
        qid=str(record["_id"]),
        dataset=dataset,
        question=record["question"],
        passages=passages,
        answers=(record["answer"], *record.get("answer_aliases", [])),
        supporting_sentences=facts,
        supporting_passages=tuple(i for i, p in enumerate(passages) if p.title in titles),
        question_type=record.get("type", ""),
    )


_PASSAGE_MARK = re.compile(r"^Passage \d+:\s*$", re.MULTILINE)


def longbench_passages(context: str) -> tuple[Passage, ...]:
    """LongBench's ``context``: "Passage N:" blocks whose first line is the title; without
    such marks, blank-line-separated paragraphs without titles."""
    marks = list(_PASSAGE_MARK.finditer(context))
    if not marks:
        paragraphs = [p.strip() for p in context.split("\n\n") if p.strip()]
        return tuple(Passage(str(i), "", p) for i, p in enumerate(paragraphs))
    out = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(context)
        title, _, text = context[mark.end() : end].strip().partition("\n")
        out.append(Passage(str(i), title.strip(), text.strip() or title.strip()))
    return tuple(out)


def _longbench_context(value: Any) -> bool:
    return is_text(value) and all(p.text for p in longbench_passages(value))


LONGBENCH = Obj(
    "a JSON object",
    {
        "input": TEXT,
        "context": Is('a non-empty string (no empty "Passage N:" block)', _longbench_context),
        "answers": ListOf(TEXT, "a non-empty list of strings", 1),
    },
    {"_id": Is("a string or an integer", lambda v: isinstance(v, str) or is_integer(v))},
)


def _longbench(record: Mapping[str, Any], dataset: str) -> QAExample:
    return QAExample(
        qid=str(record.get("_id", "")),
        dataset=dataset,
        question=record["input"],
        passages=longbench_passages(record["context"]),
        answers=tuple(record["answers"]),
    )


@attrs.frozen
class RecordFormat:
    """A question file format: its name in messages, the spec of a record, its parser (which
    may assume the record matches the spec), whether its questions carry passages, and the
    warnings a file of checked records deserves (what its records hold that is not read, or
    that changes what a score means)."""

    name: str
    spec: Spec
    parse: Callable[[Mapping[str, Any], str], QAExample]
    contexts: bool = True
    notes: Callable[[Sequence[tuple[str, Any]]], list[str]] = _no_notes


FORMATS: dict[str, RecordFormat] = {
    "musique": RecordFormat("MuSiQue", MUSIQUE, _musique, notes=_musique_notes),
    "hotpot": RecordFormat("HotpotQA/2Wiki", HOTPOT, _hotpot),
    "longbench": RecordFormat("LongBench", LONGBENCH, _longbench),
}


def examples_of(
    records: Sequence[tuple[str, Any]], form: RecordFormat, name: str, limit: int | None
) -> list[QAExample]:
    """The first ``limit`` checked records as questions of the dataset ``name``; a record
    without an id (LongBench's ``_id``, FlashRAG's ``id``…) is named by its place (``line-3``)."""
    out = []
    for place, record in records[:limit]:
        example = form.parse(record, name)
        if not example.qid:
            example = attrs.evolve(example, qid=place.replace(" ", "-"))
        out.append(example)
    return out
