"""Dataset loaders: every file that ships in ``chainrag/data/files`` (or ``$CHAINRAG_DATA``)
into one typed :class:`QAExample`.

Dev sets (per-question setting, each question with its own paragraphs): ``musique``,
``hotpotqa``, ``2wiki``. Train sets with a shared corpus (HippoRAG's files): ``musique_train``
and ``hotpotqa_train`` (questions) and the corpora ``musique_train_corpus``,
``hotpotqa_train_corpus``, ``2wiki_hipporag_corpus`` (a corpus never shares a question set's
name; the old corpus names work for one release, with a deprecation line). HotpotQA/2Wiki
ship their text split into sentences; the passage keeps those sentence spans, since gold
supporting facts point at them. LongBench's JSON Lines format
(``input``, ``context``, ``answers``: the setting the ChainRAG paper evaluates in) is read from
any file named as ``longbench:PATH``; it has no gold evidence, so retrieval is not scored on
it.

Every record is checked against its format's field spec (``MUSIQUE``, ``HOTPOT``, ``LONGBENCH``,
``PASSAGE_OBJECT``…, built from :class:`Is`, :class:`ListOf`, :class:`Pair`, :class:`Obj` and
:class:`OneOf`) before any question is built: a file with bad records is one
:class:`DatasetError` listing each problem with its line (JSON Lines) or record (JSON), the
field and what was expected, e.g. ``line 3, field 'answer_aliases': expected a list of strings,
got 'Richland'``. Nothing is coerced: a string is not a list of aliases, ``"no"`` is not false.

``pooled:NAME`` (e.g. ``pooled:hotpotqa``) is the dev set NAME in a shared-corpus setting, as
Patwa et al. evaluates (one vector store of every question's passages): every question gets the
same context, all the file's passages once each, so retrieval ranks ~1,000–2,000 passages
instead of a question's own 10–20.

Any other file is named by its path (``--dataset my/questions.jsonl``: a name with a ``/`` or
ending in ``.json`` / ``.jsonl``); its format is detected from its records
(:mod:`chainrag.data.detect`: MuSiQue, HotpotQA/2Wiki, LongBench, HippoRAG, FlashRAG).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.paths import data_root
from chainrag.core.types import GoldStep, Passage, QAExample, SupportingSentence
from chainrag.data import long

MAX_LISTED = 20
"""How many problems a :class:`DatasetError` lists before "... and N more problems"."""


@attrs.frozen
class BadRecord:
    """One problem of one record, e.g. ``line 3, field 'answer': expected a non-empty string,
    got null``. ``field`` is the path inside the record, "" for the record itself."""

    place: str  # "line 3" (JSON Lines), "record 3" (JSON array) or "title 'X'" (a corpus map)
    field: str
    problem: str

    def __str__(self) -> str:
        where = f"{self.place}, field {self.field!r}" if self.field else self.place
        return f"{where}: {self.problem}"


class DatasetError(ChainragError):
    """A dataset file is missing or malformed; the message names the file and the place.

    ``problems`` holds every bad record found where the file was checked record by record.
    """

    def __init__(self, message: str, problems: Sequence[BadRecord] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


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
    "musique_train_corpus": "hipporag/musique_train_corpus.json",
    "hotpotqa_train_corpus": "hipporag/hotpotqa_train_corpus.json",
    "2wiki_hipporag_corpus": "hipporag/2wikimultihopqa_corpus.json",
}
RENAMED_CORPORA = {
    "musique_train": "musique_train_corpus",
    "hotpotqa_train": "hotpotqa_train_corpus",
    "2wiki": "2wiki_hipporag_corpus",
}
"""Old corpus names that still work for one release, with a deprecation line: a corpus and a
question set no longer share a name (``--corpus 2wiki`` was HippoRAG's 6,119 passages while
``--dataset 2wiki`` is the 82 dev questions)."""


# --------------------------------------------------------------------------- record specs


class Spec(Protocol):
    """What a JSON value must be: ``expected`` in words, ``problems`` as (field, message)."""

    @property
    def expected(self) -> str: ...

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]: ...


def shown(value: Any) -> str:
    """A JSON value as a message shows it: ``null``, ``42``, ``'Richland'``, ``a list``."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "an object" if value else "an empty object"
    text = repr(value)  # escapes lone surrogates and control characters
    return text if len(text) <= 40 else f"{text[:36]}...{text[-1]}"


def _mismatch(spec: Spec, value: Any) -> str:
    return f"expected {spec.expected}, got {shown(value)}"


def _join(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


@attrs.frozen
class Is:
    """A value for which ``test`` holds: a scalar, or a list checked as a whole."""

    expected: str
    test: Callable[[Any], bool]

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not self.test(value):
            yield field, _mismatch(self, value)


@attrs.frozen
class ListOf:
    """A list of at least ``min_items`` values, each matching ``item``."""

    item: Spec
    expected: str
    min_items: int = 0

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not isinstance(value, list) or len(value) < self.min_items:
            yield field, _mismatch(self, value)
            return
        for i, item in enumerate(value):
            yield from self.item.problems(item, f"{field}[{i}]")


@attrs.frozen
class Pair:
    """A two-item list such as HotpotQA's ``[title, [sentences]]``."""

    first: Spec
    second: Spec
    expected: str

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not isinstance(value, list) or len(value) != 2:
            yield field, _mismatch(self, value)
            return
        yield from self.first.problems(value[0], f"{field}[0]")
        yield from self.second.problems(value[1], f"{field}[1]")


@attrs.frozen
class Obj:
    """A JSON object with ``required`` and ``optional`` fields; other fields are not read."""

    expected: str
    required: Mapping[str, Spec]
    optional: Mapping[str, Spec] = attrs.field(factory=dict)

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not isinstance(value, dict):
            yield field, _mismatch(self, value)
            return
        for name, spec in (*self.required.items(), *self.optional.items()):
            if name in value:
                yield from spec.problems(value[name], _join(field, name))
            elif name in self.required:
                yield _join(field, name), f"missing (expected {spec.expected})"


@attrs.frozen
class OneOf:
    """A value matching one of ``options``; a mismatch reports what is wrong inside the option
    of the value's own shape (an object or a list), else that none of them fits."""

    options: tuple[Spec, ...]
    expected: str

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        found = [list(option.problems(value, field)) for option in self.options]
        if all(found):
            inside = [f for f in found if all(where != field for where, _ in f)]
            yield from inside[0] if inside else [(field, _mismatch(self, value))]


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sentences(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(s, str) for s in value)
        and any(s.strip() for s in value)
    )


STRING = Is("a string", lambda v: isinstance(v, str))
TEXT = Is("a non-empty string", _text)
BOOLEAN = Is("true or false", lambda v: isinstance(v, bool))
INDEX = Is("an integer >= 0", lambda v: _integer(v) and v >= 0)
KEY = Is("a non-empty string or an integer", lambda v: _text(v) or _integer(v))
ALIASES = ListOf(TEXT, "a list of strings")
SENTENCES = Is("a list of sentences (strings, not all empty)", _sentences)
TITLED_SENTENCES = Pair(STRING, SENTENCES, "[title, [sentences]]")
PASSAGE_OBJECT = Obj("a {title, text} object", {"text": TEXT}, {"title": STRING})
CONTEXT_ITEM = OneOf((PASSAGE_OBJECT, TITLED_SENTENCES), "{title, text} or [title, [sentences]]")

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


# --------------------------------------------------------------------------- reading


class _Unreadable(Exception):  # noqa: N818 (a value of the file, not an error of the program)
    """Bytes that are not UTF-8, or text that is not JSON; ``line``/``column`` where known."""

    def __init__(self, reason: str, line: int = 0, column: int = 0) -> None:
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        reason = f"not UTF-8 (byte 0x{data[exc.start]:02x})"
        raise _Unreadable(reason, line, exc.start - line_start + 1) from None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise _Unreadable("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise _Unreadable(f"invalid JSON: {str(exc).partition(';')[0]}") from None


def _read_bytes(path: Path, what: str = "file") -> bytes:
    if not path.is_file():
        raise DatasetError(f"{path}: no such {what}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from None


def _read_json(path: Path, what: str = "file") -> Any:
    """The JSON document in ``path``; one that is not UTF-8 or not JSON is a DatasetError."""
    try:
        return _json(_decode(_read_bytes(path, what)))
    except _Unreadable as exc:
        where = f", line {exc.line}" if exc.line else ""
        raise DatasetError(f"{path}{where}: {exc.reason}") from None


def _jsonl_values(data: bytes) -> Iterator[tuple[str, Any]]:
    """(``line N``, value) of each non-blank line; a line that cannot be read is _Unreadable."""
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            text = _decode(raw)
            if text.strip():
                yield f"line {number}", _json(text)
        except _Unreadable as exc:
            yield f"line {number}", exc


def _question_records(path: Path) -> list[tuple[str, Any]]:
    """(place, record) pairs of a JSON Lines or JSON-array file, as read, before any check."""
    if path.suffix == ".jsonl":
        return list(
            _jsonl_values(_read_bytes(path, "file (set $CHAINRAG_DATA to the data folder)"))
        )
    data = _read_json(path, "file (set $CHAINRAG_DATA to the data folder)")
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of questions, got {shown(data)}")
    return [(f"record {i}", record) for i, record in enumerate(data, 1)]


def read_records(path: Path) -> list[tuple[str, Any]]:
    """(place, record) pairs of any question file, as read, before any check: a JSON array when
    its first character is ``[`` (``record N``), else JSON Lines (``line N``), whatever the
    suffix. A line that cannot be read is kept as a value :func:`readable` refuses."""
    data = _read_bytes(path)
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        lines = list(_jsonl_values(data))
        if len(lines) > 1 and not readable(lines[0][1]):
            _one_document(path, data)
        return lines
    try:
        array = _json(_decode(data))
    except _Unreadable as exc:
        where = f", line {exc.line}" if exc.line else ""
        raise DatasetError(f"{path}{where}: {exc.reason}") from None
    return [(f"record {i}", record) for i, record in enumerate(array, 1)]


def _one_document(path: Path, data: bytes) -> None:
    """Raise if ``data``, whose first line is not JSON, is one JSON document over several
    lines (an object, such as HippoRAG's title → sentences corpus): not a file of questions."""
    try:
        whole = _json(_decode(data))
    except _Unreadable:
        return
    lines = len(data.splitlines())
    raise DatasetError(
        f"{path}: expected questions as a JSON array or as JSON Lines (one per line), got "
        f"{shown(whole)} over {lines} lines"
    )


def readable(value: Any) -> bool:
    """False for a line of :func:`read_records` that is not UTF-8 or not JSON."""
    return not isinstance(value, _Unreadable)


def _record_problems(place: str, value: Any, spec: Spec) -> Iterator[BadRecord]:
    if isinstance(value, _Unreadable):
        column = f" at column {value.column}" if value.column else ""
        yield BadRecord(place, "", value.reason + column)
        return
    for field, problem in spec.problems(value, ""):
        yield BadRecord(place, field, problem)


def checked(
    path: Path, records: Sequence[tuple[str, Any]], spec: Spec, what: str
) -> Sequence[tuple[str, Any]]:
    """The (place, record) pairs if there is at least one and each matches ``spec``; else a
    DatasetError that lists every bad record (the first :data:`MAX_LISTED` problems)."""
    problems = [bad for place, value in records for bad in _record_problems(place, value, spec)]
    if problems:
        raise _bad_records(path, what, problems)
    if not records:
        raise DatasetError(f"{path}: no records (an empty {what} file)")
    return records


def _bad_records(path: Path, what: str, problems: Sequence[BadRecord]) -> DatasetError:
    count = len({p.place for p in problems})
    head = (
        f"{path}: {_count(count, 'record')} not in the {what} format "
        f"({_count(len(problems), 'problem')}):"
    )
    listed = [f"  - {p}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        listed.append(f"  - ... and {len(problems) - MAX_LISTED} more problems")
    return DatasetError("\n".join([head, *listed]), problems)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


# --------------------------------------------------------------------------- formats


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
    return _text(value) and all(p.text for p in longbench_passages(value))


LONGBENCH = Obj(
    "a JSON object",
    {
        "input": TEXT,
        "context": Is('a non-empty string (no empty "Passage N:" block)', _longbench_context),
        "answers": ListOf(TEXT, "a non-empty list of strings", 1),
    },
    {"_id": Is("a string or an integer", lambda v: isinstance(v, str) or _integer(v))},
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
    may assume the record matches the spec), and whether its questions carry passages."""

    name: str
    spec: Spec
    parse: Callable[[Mapping[str, Any], str], QAExample]
    contexts: bool = True


FORMATS: dict[str, RecordFormat] = {
    "musique": RecordFormat("MuSiQue", MUSIQUE, _musique),
    "hotpot": RecordFormat("HotpotQA/2Wiki", HOTPOT, _hotpot),
    "longbench": RecordFormat("LongBench", LONGBENCH, _longbench),
}


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


def is_file_dataset(name: str) -> bool:
    """Whether ``name`` is a file's path rather than a dataset's name: not a known name, and
    with a ``/`` or ending in ``.json`` / ``.jsonl``."""
    return name not in DATASETS and (
        "/" in name or "\\" in name or name.endswith((".json", ".jsonl"))
    )


def dataset_path(name: str, root: Path | None = None) -> tuple[Path, str]:
    """The file and record format of a dataset name (``musique``, ``pooled:musique``, …,
    ``longbench:PATH``, or a file's PATH, whose format is ``detect``: read from its records;
    any of them with a slice of its questions, ``NAME[30:60]``)."""
    name, _ = split_slice(name)
    if name.startswith((POOLED, long.PREFIX)):
        return dataset_path(name.split(":", 1)[1], root)
    if name.startswith("longbench:"):
        return Path(name.removeprefix("longbench:")), "longbench"
    if is_file_dataset(name):
        return Path(name), "detect"
    if name not in DATASETS:
        raise DatasetError(
            f"unknown dataset {name!r}; known: {', '.join(DATASETS)}, pooled:NAME, long:NAME, "
            "longbench:PATH, or a file's PATH (with a / or ending in .json or .jsonl)"
        )
    spec = DATASETS[name]
    return (root or data_root()) / spec.path, spec.format


_SLICE = re.compile(r"^(?P<name>.+)\[(?P<start>\d*):(?P<stop>\d*)\]$")


def split_slice(name: str) -> tuple[str, slice | None]:
    """A dataset name without its slice of questions, and the slice: ``long:2wiki[30:60]`` is
    questions 31 to 60 of ``long:2wiki`` (Python's slice, counted from 0, the stop excluded;
    either end may be left out). A DatasetError for a slice that holds no question."""
    found = _SLICE.match(name)
    if found is None:
        if name.endswith("]") and "[" in name:
            raise DatasetError(
                f"{name!r}: a slice of questions is [START:STOP] with whole numbers, "
                "e.g. long:2wiki[30:60]"
            )
        return name, None
    start = int(found["start"]) if found["start"] else None
    stop = int(found["stop"]) if found["stop"] else None
    if start is not None and stop is not None and stop <= start:
        raise DatasetError(f"{name!r}: the slice [{start}:{stop}] holds no question")
    return found["name"], slice(start, stop)


def load_dataset(
    name: str,
    limit: int | None = None,
    root: Path | None = None,
    *,
    say: Callable[[str], None] | None = None,
) -> list[QAExample]:
    """The first ``limit`` questions (all if None) of the dataset called ``name``.

    Every record of the file is checked first, whatever ``limit``: a file with a bad record
    is a :class:`DatasetError` listing each one, and an empty file is one too.

    ``pooled:NAME``: the questions of NAME over the pool of all its questions' passages (the
    pool does not depend on ``limit``). ``long:NAME``: each question's passages padded to
    LongBench's context length (:mod:`chainrag.data.long`). A file's PATH: its format detected
    from its records (:func:`chainrag.data.detect.load_file`), which ``say`` is told. Any of
    them as ``NAME[START:STOP]``: that slice of its questions (:func:`split_slice`), then the
    first ``limit`` of those — a held-out slice, whose questions are the full dataset's.
    """
    base, part = split_slice(name)
    if part is not None:
        loaded = load_dataset(base, part.stop, root, say=say)[part][:limit]
        if not loaded:
            raise DatasetError(f"{name!r}: the slice holds no question ({base} has fewer)")
        return [attrs.evolve(e, dataset=name) for e in loaded]
    if name.startswith(long.PREFIX):
        return _long(name, limit, root)
    if name.startswith(POOLED):
        inner = name.removeprefix(POOLED)
        if inner.startswith(("longbench:", POOLED, long.PREFIX)):
            raise DatasetError(f"{name!r}: only the dev sets can be pooled ({', '.join(DATASETS)})")
        loaded = load_dataset(inner, None, root, say=say)
        everything = [attrs.evolve(e, dataset=name) for e in loaded]
        try:
            return pool(everything)[:limit]
        except DatasetError as exc:
            raise DatasetError(f"{dataset_path(inner, root)[0]}: {exc}") from None
    path, fmt = dataset_path(name, root)
    if fmt == "detect":
        from chainrag.data.detect import load_file  # detect reads this module's formats

        return load_file(name, limit, say)
    form = FORMATS[fmt]
    return examples_of(checked(path, _question_records(path), form.spec, form.name), form, name,
                       limit)  # fmt: skip


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


def _long(name: str, limit: int | None, root: Path | None) -> list[QAExample]:
    inner = name.removeprefix(long.PREFIX)
    if inner not in long.LONGBENCH_WORDS:
        raise DatasetError(
            f"{name!r}: only the dev sets can be padded to LongBench's length "
            f"({', '.join(long.LONGBENCH_WORDS)})"
        )
    everything = [attrs.evolve(e, dataset=name) for e in load_dataset(inner, None, root)]
    return long.pad(everything[:limit], long.LONGBENCH_WORDS[inner], everything)


def dataset_setting(name: str) -> str | None:
    """What a derived dataset (``long:NAME``) does to its file, and the format a file given by
    its PATH was read in (``read as MuSiQue``), as a run records it; None for a named file as
    it is."""
    name, _ = split_slice(name)
    said = []
    if name.startswith(long.PREFIX):
        said.append(long.setting(name.removeprefix(long.PREFIX)))
    path, fmt = dataset_path(name)
    if fmt == "detect":
        from chainrag.data.detect import file_format  # detect reads this module's formats

        said.append(f"read as {file_format(path)}")
    return "; ".join(said) or None


def corpus_name(name: str) -> str:
    """``name``, or the new name of a renamed corpus (with a deprecation line on stderr)."""
    if name in RENAMED_CORPORA:
        new = RENAMED_CORPORA[name]
        warnings.warn(
            f"the corpus {name!r} is now named {new!r} (a corpus and a question set no longer "
            f"share a name); {name!r} works for this release only",
            FutureWarning,
            stacklevel=3,
        )
        return new
    return name


def load_corpus(name_or_path: str, root: Path | None = None) -> list[Passage]:
    """A shared corpus by name (``musique_train_corpus``, ``hotpotqa_train_corpus``,
    ``2wiki_hipporag_corpus``) or by path.

    Accepts HippoRAG's two layouts: a list of ``{title, text}`` and a mapping title → sentences.
    """
    name_or_path = corpus_name(name_or_path)
    rel = CORPORA.get(name_or_path)
    path = (root or data_root()) / rel if rel else Path(name_or_path)
    data = _read_json(path, f"corpus file (named corpora: {', '.join(CORPORA)})")
    if isinstance(data, dict):
        titled = [(f"title {shown(title)}", sentences) for title, sentences in data.items()]
        checked(path, titled, SENTENCES, "title → sentences corpus")
        return [sentences_passage(str(i), t, s) for i, (t, s) in enumerate(data.items())]
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a list of {{title, text}} or a title → sentences map")
    records = [(f"record {i}", item) for i, item in enumerate(data, 1)]
    checked(path, records, PASSAGE_OBJECT, "{title, text} corpus")
    return [Passage(str(i), item.get("title", ""), item["text"]) for i, item in enumerate(data)]


def load_context_file(path: Path) -> tuple[Passage, ...]:
    """Passages for ``chainrag ask``: a JSON list of ``{title, text}`` or of HotpotQA-style
    ``[title, [sentences]]``, or a text file whose blank-line-separated paragraphs are passages
    (a first line ending in ":" is taken as the title)."""
    if path.suffix == ".json":
        data = _read_json(path, "context file")
        if not isinstance(data, list):
            raise DatasetError(f"{path}: expected a JSON list of passages, got {shown(data)}")
        checked(path, [(f"record {i}", x) for i, x in enumerate(data, 1)], CONTEXT_ITEM, "context")
        return tuple(
            Passage(str(i), item.get("title", ""), item["text"])
            if isinstance(item, dict)
            else sentences_passage(str(i), item[0], item[1])
            for i, item in enumerate(data)
        )
    try:
        raw = _decode(_read_bytes(path, "context file"))
    except _Unreadable as exc:
        raise DatasetError(f"{path}, line {exc.line}: {exc.reason}") from None
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


def dataset_slug(dataset: str) -> str:
    """The run folder name of a dataset: its name, ``pooled-<name>``, ``long-<name>``,
    ``longbench-<stem>``, or a file's stem (``my/questions.jsonl``: ``questions``); a slice of
    its questions follows (``long:2wiki[30:60]``: ``long-2wiki-30-60``)."""
    base, part = split_slice(dataset)
    if part is not None:
        return f"{dataset_slug(base)}-{part.start or 0}-{'end' if part.stop is None else part.stop}"
    if dataset.startswith(POOLED):
        return "pooled-" + dataset_slug(dataset.removeprefix(POOLED))
    if dataset.startswith(long.PREFIX):
        return "long-" + dataset.removeprefix(long.PREFIX)
    if dataset.startswith("longbench:"):
        return "longbench-" + Path(dataset.removeprefix("longbench:")).stem
    if is_file_dataset(dataset):
        return Path(dataset).stem
    return dataset


def shared_corpus(dataset: str) -> str | None:
    """The corpus a dataset's questions share, if it names one: a HippoRAG train set's named
    corpus, or the ``STEM_corpus.json`` beside a question file (HippoRAG's pair)."""
    if dataset in DATASETS and DATASETS[dataset].setting == "shared_corpus":
        return f"{dataset}_corpus"
    if is_file_dataset(dataset):
        beside = corpus_beside(Path(dataset))
        return str(beside) if beside else None
    return None


def corpus_beside(path: Path) -> Path | None:
    """HippoRAG's corpus of the question file ``DIR/NAME.json``: ``DIR/NAME_corpus.json``, if
    it exists (HippoRAG's ``reproduce/dataset/`` layout)."""
    corpus = path.with_name(f"{path.stem}_corpus.json")
    return corpus if corpus.is_file() else None
