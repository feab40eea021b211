"""Any dataset file: ``--dataset PATH`` in whichever format its records are in.

    questions = load_file("my/questions.jsonl", say=print)
    # my/questions.jsonl: FlashRAG format, detected from its 120 records; its questions ...

A file is a JSON array (its first character is ``[``) or JSON Lines, whatever its suffix, and
holds questions of one format, told by the shape (keys and types) of its records. The formats,
in the order they are tried:

* **MuSiQue**: ``id``, ``question``, ``answer``, ``paragraphs`` of ``{idx, title,
  paragraph_text, is_supporting}``, optional ``answer_aliases`` and ``question_decomposition``;
  each question over its own paragraphs. HippoRAG's ``musique.json`` is one.
* **HotpotQA/2Wiki**: ``_id``, ``question``, ``answer``, ``context`` of ``[title,
  [sentences]]``, optional ``supporting_facts`` and ``type``; each question over its own
  paragraphs. HippoRAG's ``hotpotqa.json`` and ``2wikimultihopqa.json`` are ones.
* **LongBench**: ``input``, ``context`` (one string of "Passage N:" blocks), ``answers``.
* **HippoRAG**: the layout of HippoRAG 2's ``reproduce/dataset/sample.json``: ``question``,
  ``answer`` (a string or a list), ``paragraphs`` of ``{title, text or paragraph_text,
  is_supporting}``; ``id``/``_id``, ``idx``, ``answer_aliases`` and ``question_decomposition``
  optional. As HippoRAG's evaluation counts them (its ``main.py``, ``get_gold_docs``), a
  paragraph without ``is_supporting`` is gold, and ``text`` is read before ``paragraph_text``;
  a file in which no paragraph carries the mark is warned about (every paragraph is then gold).
* **FlashRAG**: ``{id, question, golden_answers, metadata}`` (``id`` and ``metadata`` optional;
  of ``metadata`` only ``type`` is read, as the question type). Its questions carry no
  passages (FlashRAG retrieves from a corpus such as its Wikipedia dump), so such a file runs
  only over a corpus index (``chainrag run --index DIR``); without one the run is refused.

The file's format is the first one that every record fits; MuSiQue, HotpotQA/2Wiki and
LongBench records give the same questions as the named loaders (``musique``, ``hotpotqa``,
``longbench:PATH``) give. A record without an id is named by its place (``line-3``).

**HippoRAG's pair.** HippoRAG ships a question file ``NAME.json`` with its corpus
``NAME_corpus.json`` beside it (``[{title, text}]``, or a title → sentences map), and answers
every question over the whole corpus. Here the question file loads as above, and the corpus
is the shared-corpus setting through a corpus index: ``chainrag index R --corpus
NAME_corpus.json --out-dir DIR`` builds it, ``chainrag run R --dataset NAME.json --index DIR``
answers every question over all of its passages (retrieval scored against the gold passages
by title), and ``chainrag index R --dataset NAME.json`` indexes the corpus, as for
``musique_train``. Without ``--index`` each question is answered over its own paragraphs (the
per-question setting); the message :func:`load_file` says names the corpus it found.

A file no format fits is a :class:`~chainrag.data.records.DatasetError` naming the file and
the first record that fits none (with what each format misses in it); one mixing formats
names the first record that is not in the format of those before it, and the format it is in;
records of the file's format with bad fields are all listed, as for a named dataset. A
paragraph key a MuSiQue or HippoRAG file's paragraphs carry but that is not read (a misspelt
``is_support``) is named in a warning.

Layer: data; imports :mod:`chainrag.core` and :mod:`chainrag.data.datasets`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from chainrag.core.types import GoldStep, Passage, QAExample
from chainrag.data.formats import (
    FORMATS,
    MUSIQUE_STEP,
    RecordFormat,
    examples_of,
    unread_paragraph_keys,
)
from chainrag.data.names import corpus_beside
from chainrag.data.records import DatasetError, checked, read_records, readable
from chainrag.data.specs import (
    ALIASES,
    BOOLEAN,
    KEY,
    PASSAGE_OBJECT,
    STRING,
    TEXT,
    Is,
    ListOf,
    Obj,
    OneOf,
    Spec,
)

Say = Callable[[str], None]
"""Where the chosen format is said (the CLI: a line on stderr)."""


def _hipporag_paragraph(text_field: str) -> Obj:
    return Obj(
        "a paragraph object",
        {"title": STRING, text_field: TEXT},
        {"is_supporting": BOOLEAN, "idx": KEY},
    )


HIPPORAG = Obj(
    "a JSON object",
    {
        "question": TEXT,
        "answer": OneOf(
            (TEXT, ListOf(TEXT, "a list", 1)), "a non-empty string or a list of strings"
        ),
        "paragraphs": ListOf(
            OneOf(
                (_hipporag_paragraph("text"), _hipporag_paragraph("paragraph_text")),
                "a {title, text} or {title, paragraph_text} object",
            ),
            "a non-empty list of paragraphs",
            1,
        ),
    },
    {
        "id": KEY,
        "_id": KEY,
        "answer_aliases": ALIASES,
        "question_decomposition": ListOf(MUSIQUE_STEP, "a list of sub-questions"),
    },
)
FLASHRAG = Obj(
    "a JSON object",
    {"question": TEXT, "golden_answers": ListOf(TEXT, "a non-empty list of strings", 1)},
    {"id": KEY, "metadata": Is("an object", lambda v: isinstance(v, dict))},
)


HIPPORAG_PARAGRAPH_KEYS = ("title", "text", "paragraph_text", "is_supporting", "idx")
"""The keys of a HippoRAG paragraph that are read."""


def _hipporag_notes(records: Sequence[tuple[str, Any]]) -> list[str]:
    """Unread paragraph keys, and a file in which no paragraph carries ``is_supporting``:
    every paragraph then counts as gold, so Recall@k says how many of a question's
    paragraphs were retrieved, not how many of its supporting ones."""
    notes = unread_paragraph_keys(records, HIPPORAG_PARAGRAPH_KEYS)
    marked = any("is_supporting" in p for _, record in records for p in record["paragraphs"])
    if not marked:
        notes.append(
            "no paragraph carries 'is_supporting', so every paragraph counts as gold (as "
            "HippoRAG's evaluation counts them) and Recall@k measures how many of a question's "
            "paragraphs are retrieved, not its supporting ones; mark those with "
            '"is_supporting": true'
        )
    return notes


def _hipporag(record: Mapping[str, Any], dataset: str) -> QAExample:
    paragraphs = record["paragraphs"]
    passages = tuple(
        Passage(str(p.get("idx", i)), p["title"], p["text"] if "text" in p else p["paragraph_text"])
        for i, p in enumerate(paragraphs)
    )
    position = {str(p["idx"]): i for i, p in enumerate(paragraphs) if "idx" in p}
    steps = tuple(
        GoldStep(s["question"], s["answer"], position.get(str(s.get("paragraph_support_idx"))))
        for s in record.get("question_decomposition", [])
    )
    answer = record["answer"]
    answers = [answer] if isinstance(answer, str) else list(answer)
    return QAExample(
        qid=str(record.get("id", record.get("_id", ""))),
        dataset=dataset,
        question=record["question"],
        passages=passages,
        answers=tuple(dict.fromkeys([*answers, *record.get("answer_aliases", [])])),
        supporting_passages=tuple(
            i for i, p in enumerate(paragraphs) if p.get("is_supporting", True)
        ),
        decomposition=steps,
    )


def _flashrag(record: Mapping[str, Any], dataset: str) -> QAExample:
    kind = record.get("metadata", {}).get("type", "")
    return QAExample(
        qid=str(record.get("id", "")),
        dataset=dataset,
        question=record["question"],
        answers=tuple(record["golden_answers"]),
        question_type=kind if isinstance(kind, str) else "",
    )


DETECTED: tuple[RecordFormat, ...] = (
    FORMATS["musique"],
    FORMATS["hotpot"],
    FORMATS["longbench"],
    RecordFormat("HippoRAG", HIPPORAG, _hipporag, notes=_hipporag_notes),
    RecordFormat("FlashRAG", FLASHRAG, _flashrag, contexts=False),
)
"""The formats a file is read in, in the order they are tried."""


def fits(spec: Spec, value: Any) -> bool:
    """Whether a record read from a file matches ``spec`` in every field."""
    return readable(value) and next(spec.problems(value, ""), None) is None


ANY_JSON = Is("a JSON value", readable)


def detect_format(path: Path, records: Sequence[tuple[str, Any]]) -> RecordFormat:
    """The format of the file ``path`` read as ``records`` ((place, value) pairs, at least one,
    each one JSON).

    It is the first of :data:`DETECTED` that every record fits; else the first that the first
    record fits, whose check (:func:`~chainrag.data.records.checked`) then lists the records
    not in it. A first record no format fits, or a later one in another format than the
    first's, is a :class:`DatasetError` naming the file and that record.
    """
    place, first = records[0]
    candidates = [form for form in DETECTED if fits(form.spec, first)]
    if not candidates:
        raise DatasetError(_in_no_format(path, place, first))
    for form in candidates:
        if all(fits(form.spec, value) for _, value in records):
            return form
    form = candidates[0]
    where, misfit = next((p, v) for p, v in records if not fits(form.spec, v))
    other = next((f for f in DETECTED if fits(f.spec, misfit)), None)
    if other is not None:
        raise DatasetError(
            f"{path}: {where} is in the {other.name} format, {place} in the {form.name} "
            "format: a file holds questions of one format"
        )
    return form


def _in_no_format(path: Path, place: str, value: Any) -> str:
    lines = [f"{path}: {place} is in none of the dataset formats chainrag reads:"]
    for form in DETECTED:
        problems = [f"field {f!r}: {m}" if f else m for f, m in form.spec.problems(value, "")]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        lines.append(f"  - not {form.name}: {problems[0]}{more}")
    if fits(PASSAGE_OBJECT, value):
        lines.append(
            "  It is a passage ({title, text}): a corpus is indexed with chainrag index RECIPE "
            "--corpus FILE --out-dir DIR, and a run answers over it with --index DIR."
        )
    return "\n".join(lines)


def load_file(name: str, limit: int | None = None, say: Say | None = None) -> list[QAExample]:
    """The first ``limit`` questions (all if None) of the file at path ``name``, in the format
    detected from its records (:func:`detect_format`), every record checked against it;
    ``say`` is told the format chosen (:func:`chosen`), then each of the format's warnings
    about the file (``PATH: warning: ...``)."""
    path = Path(name)
    records = checked(path, read_records(path), ANY_JSON, "JSON")  # not empty, each one JSON
    form = detect_format(path, records)
    checked(path, records, form.spec, form.name)
    if say is not None:
        say(chosen(path, form, len(records)))
        for note in form.notes(records):
            say(f"{path}: warning: {note}")
    return examples_of(records, form, name, limit)


def file_format(path: Path) -> str:
    """The name of the format the file at ``path`` is read in (:func:`detect_format`)."""
    records = checked(path, read_records(path), ANY_JSON, "JSON")
    return detect_format(path, records).name


def chosen(path: Path, form: RecordFormat, count: int) -> str:
    """What is said of a file read in ``form``: the format, and where its questions are
    answered when it has no passages of its own or a HippoRAG corpus beside it."""
    said = f"{path}: {form.name} format, detected from its {count:,} record{'s' * (count != 1)}"
    corpus = corpus_beside(path)
    build = f"chainrag index R --corpus {corpus or 'FILE'} --out-dir DIR"
    if not form.contexts:
        return (
            f"{said}; its questions have no passages of their own, so it runs only over a "
            f"corpus index: --index DIR ({build})"
        )
    if corpus is not None:
        return (
            f"{said}; HippoRAG's corpus is beside it: --index DIR answers every question over "
            f"it ({build}), without --index each question is answered over its own passages"
        )
    return said
