"""Dataset loaders: every file in ``../shared/data`` into one typed :class:`QAExample`.

Dev sets (per-question setting, each question with its own paragraphs): ``musique``,
``hotpotqa``, ``2wiki``. Train sets with a shared corpus (HippoRAG's files): ``musique_train``
and ``hotpotqa_train`` (questions) and the corpora ``musique_train``, ``hotpotqa_train``,
``2wiki``. HotpotQA/2Wiki ship their text split into sentences; the passage keeps those
sentence spans, since gold supporting facts point at them. LongBench's JSON Lines format
(``input``, ``context``, ``answers``: the setting the ChainRAG paper evaluates in) is read from
any file named as ``longbench:PATH``; it has no gold evidence, so retrieval is not scored on
it. A malformed file is an error that names the file and the line (JSON Lines) or the record
(JSON).

``pooled:NAME`` (e.g. ``pooled:hotpotqa``) is the dev set NAME in a shared-corpus setting, as
seed 002 evaluates (one vector store of every question's passages): every question gets the
same context, all the file's passages once each, so retrieval ranks ~1,000–2,000 passages
instead of a question's own 10–20.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.errors import ChainragError
from chainrag.paths import data_root
from chainrag.types import GoldStep, Passage, QAExample, SupportingSentence


class DatasetError(ChainragError):
    """A dataset file is missing or malformed; the message names the file and the place."""


@attrs.frozen
class DatasetFile:
    """Where a named dataset lives (relative to the data root) and its record format."""

    path: str
    format: str  # "musique" | "hotpot"
    setting: str  # "per_question" | "shared_corpus"


DATASETS: dict[str, DatasetFile] = {
    "musique": DatasetFile("musique_dev.jsonl", "musique", "per_question"),
    "hotpotqa": DatasetFile("hotpotqa_dev.jsonl", "hotpot", "per_question"),
    "2wiki": DatasetFile("2wikimultihopqa_dev.jsonl", "hotpot", "per_question"),
    "musique_train": DatasetFile("hipporag/musique_train.json", "musique", "shared_corpus"),
    "hotpotqa_train": DatasetFile("hipporag/hotpotqa_train.json", "hotpot", "shared_corpus"),
}
CORPORA: dict[str, str] = {
    "musique_train": "hipporag/musique_train_corpus.json",
    "hotpotqa_train": "hipporag/hotpotqa_train_corpus.json",
    "2wiki": "hipporag/2wikimultihopqa_corpus.json",
}


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """(place, record) pairs of a JSON Lines or JSON-array file; place is "line N"/"record N"."""
    if not path.is_file():
        raise DatasetError(f"{path}: no such file (set $CHAINRAG_DATA to the data folder)")
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield f"line {number}", json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}, line {number}: invalid JSON: {exc.msg}") from None
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of questions")
    for number, record in enumerate(data, 1):
        yield f"record {number}", record


def _musique(record: Mapping[str, Any], dataset: str) -> QAExample:
    paragraphs = record.get("paragraphs", [])
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
        sentences_passage(str(i), title, list(sentences))
        for i, (title, sentences) in enumerate(record.get("context", []))
    )
    facts = tuple(SupportingSentence(t, int(i)) for t, i in record.get("supporting_facts", []))
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


def _longbench(record: Mapping[str, Any], dataset: str) -> QAExample:
    if not isinstance(record, Mapping):
        raise TypeError("expected a JSON object")
    for key, kind in (("input", str), ("context", str), ("answers", list)):
        if not isinstance(record[key], kind):
            raise TypeError(f"field {key!r} must be a {kind.__name__}")
    if not record["answers"] or not all(isinstance(a, str) for a in record["answers"]):
        raise ValueError("field 'answers' must be a non-empty list of strings")
    return QAExample(
        qid=str(record.get("_id", "")),
        dataset=dataset,
        question=record["input"],
        passages=longbench_passages(record["context"]),
        answers=tuple(record["answers"]),
    )


POOLED = "pooled:"
"""Prefix of a dev set in the shared-corpus setting (:func:`pool`)."""


def pool(examples: Sequence[QAExample]) -> list[QAExample]:
    """The examples with one shared context: every example's passages, each (title, text) once,
    in first-seen order (``pid`` = the position in the pool).

    MuSiQue's gold paragraph indexes are re-pointed into the pool. HotpotQA/2Wiki gold sentences
    name a title; a title pooled with two different texts would make that ambiguous, so it is an
    error that names the title.
    """
    passages: list[Passage] = []
    where: dict[tuple[str, str], int] = {}
    first_text: dict[str, str] = {}
    mappings = []
    for example in examples:
        mapping = []
        for passage in example.passages:
            key = (passage.title, passage.text)
            if key not in where:
                seen = first_text.setdefault(passage.title, passage.text)
                if seen != passage.text and example.supporting_sentences:
                    raise DatasetError(
                        f"{example.dataset}, question {example.qid}: title {passage.title!r} "
                        "comes with two different texts, so its gold sentences cannot be pooled"
                    )
                where[key] = len(passages)
                passages.append(attrs.evolve(passage, pid=str(len(passages))))
            mapping.append(where[key])
        mappings.append(mapping)
    shared = tuple(passages)
    return [
        attrs.evolve(
            example,
            passages=shared,
            supporting_passages=tuple(mapping[i] for i in example.supporting_passages),
        )
        for example, mapping in zip(examples, mappings, strict=True)
    ]


def dataset_path(name: str, root: Path | None = None) -> tuple[Path, str]:
    """The file and record format of a dataset name (``musique``, ``pooled:musique``, … or
    ``longbench:PATH``)."""
    if name.startswith(POOLED):
        return dataset_path(name.removeprefix(POOLED), root)
    if name.startswith("longbench:"):
        return Path(name.removeprefix("longbench:")), "longbench"
    if name not in DATASETS:
        raise DatasetError(
            f"unknown dataset {name!r}; known: {', '.join(DATASETS)}, or longbench:PATH"
        )
    spec = DATASETS[name]
    return (root or data_root()) / spec.path, spec.format


def load_dataset(name: str, limit: int | None = None, root: Path | None = None) -> list[QAExample]:
    """The first ``limit`` questions (all if None) of the dataset called ``name``.

    ``pooled:NAME``: the questions of NAME over the pool of all its questions' passages (the
    pool does not depend on ``limit``).
    """
    if name.startswith(POOLED):
        inner = name.removeprefix(POOLED)
        if inner.startswith(("longbench:", POOLED)):
            raise DatasetError(f"{name!r}: only the dev sets can be pooled ({', '.join(DATASETS)})")
        everything = [attrs.evolve(e, dataset=name) for e in load_dataset(inner, None, root)]
        return pool(everything)[:limit]
    path, fmt = dataset_path(name, root)
    parse = {"musique": _musique, "hotpot": _hotpot, "longbench": _longbench}[fmt]
    out: list[QAExample] = []
    for place, record in _records(path):
        if limit is not None and len(out) >= limit:
            break
        try:
            example = parse(record, name)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise DatasetError(f"{path}, {place}: not a {fmt} record: {what}") from None
        if not example.qid:  # LongBench records without an _id: their line number
            example = attrs.evolve(example, qid=place.replace(" ", "-"))
        out.append(example)
    return out


def load_corpus(name_or_path: str, root: Path | None = None) -> list[Passage]:
    """A shared corpus by name (``musique_train``, ``hotpotqa_train``, ``2wiki``) or by path.

    Accepts HippoRAG's two layouts: a list of ``{title, text}`` and a mapping title → sentences.
    """
    rel = CORPORA.get(name_or_path)
    path = (root or data_root()) / rel if rel else Path(name_or_path)
    if not path.is_file():
        known = ", ".join(CORPORA)
        raise DatasetError(f"{path}: no such corpus file (named corpora: {known})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
    if isinstance(data, dict):
        return [
            sentences_passage(str(i), title, list(sentences))
            for i, (title, sentences) in enumerate(data.items())
        ]
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a list of {{title, text}} or a title → sentences map")
    passages = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise DatasetError(f"{path}, record {i + 1}: expected {{title, text}}")
        passages.append(Passage(str(i), str(item.get("title", "")), item["text"]))
    return passages


def load_context_file(path: Path) -> tuple[Passage, ...]:
    """Passages for ``chainrag ask``: a JSON list of ``{title, text}`` or of HotpotQA-style
    ``[title, [sentences]]``, or a text file whose blank-line-separated paragraphs are passages
    (a first line ending in ":" is taken as the title)."""
    if not path.is_file():
        raise DatasetError(f"{path}: no such context file")
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
        if not isinstance(data, list):
            raise DatasetError(f"{path}: expected a JSON list of passages")
        out = []
        for i, item in enumerate(data):
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                out.append(Passage(str(i), str(item.get("title", "")), item["text"]))
            elif isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
                out.append(sentences_passage(str(i), str(item[0]), [str(s) for s in item[1]]))
            else:
                raise DatasetError(
                    f"{path}, record {i + 1}: expected {{title, text}} or [title, [sentences]]"
                )
        return tuple(out)
    paragraphs = [p.strip() for p in raw.split("\n\n") if p.strip()]
    out = []
    for i, paragraph in enumerate(paragraphs):
        first, _, rest = paragraph.partition("\n")
        title, text = (
            (first.rstrip(":"), rest.strip()) if first.endswith(":") and rest else ("", paragraph)
        )
        out.append(Passage(str(i), title, text))
    if not out:
        raise DatasetError(f"{path}: no text")
    return tuple(out)
