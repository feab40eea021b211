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

Every record is checked against its format's field spec (:mod:`chainrag.data.formats`, built
from :mod:`chainrag.data.specs`) before any question is built: a file with bad records is one
:class:`~chainrag.data.records.DatasetError` listing each problem with its line (JSON Lines) or
record (JSON), the field and what was expected, e.g. ``line 3, field 'answer_aliases':
expected a list of strings, got 'Richland'``. Nothing is coerced: a string is not a list of
aliases, ``"no"`` is not false.

``pooled:NAME`` (e.g. ``pooled:hotpotqa``) is the dev set NAME in a shared-corpus setting, as
Patwa et al. evaluates (one vector store of every question's passages): every question gets the
same context, all the file's passages once each, so retrieval ranks ~1,000–2,000 passages
instead of a question's own 10–20.

Any other file is named by its path (``--dataset my/questions.jsonl``: a name with a ``/`` or
ending in ``.json`` / ``.jsonl``); its format is detected from its records
(:mod:`chainrag.data.detect`: MuSiQue, HotpotQA/2Wiki, LongBench, HippoRAG, FlashRAG).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from chainrag.core.paths import data_root
from chainrag.core.types import Passage, QAExample
from chainrag.data import long
from chainrag.data.detect import file_format, load_file
from chainrag.data.formats import FORMATS, examples_of, sentences_passage
from chainrag.data.names import (
    CORPORA,
    DATASETS,
    POOLED,
    RENAMED_CORPORA,
    corpus_beside,
    corpus_name,
    dataset_path,
    dataset_slug,
    is_file_dataset,
    long_parts,
    shared_corpus,
    split_slice,
)
from chainrag.data.records import (
    DatasetError,
    Unreadable,
    checked,
    decode,
    question_records,
    read_bytes,
    read_json,
)
from chainrag.data.specs import CONTEXT_ITEM, PASSAGE_OBJECT, SENTENCES, shown

__all__ = [  # the loaders, and the names callers use with them
    "CORPORA",
    "DATASETS",
    "RENAMED_CORPORA",
    "DatasetError",
    "corpus_beside",
    "dataset_path",
    "dataset_setting",
    "dataset_slug",
    "is_file_dataset",
    "load_context_file",
    "load_corpus",
    "load_dataset",
    "pool",
    "shared_corpus",
    "split_slice",
]


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
        return _long(name, limit, root, say)
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
        return load_file(name, limit, say)
    form = FORMATS[fmt]
    return examples_of(checked(path, question_records(path), form.spec, form.name), form, name,
                       limit)  # fmt: skip


def _long(
    name: str, limit: int | None, root: Path | None, say: Callable[[str], None] | None
) -> list[QAExample]:
    _, source = long_parts(name)
    length = padded_length(name, root)
    everything = [attrs.evolve(e, dataset=name) for e in load_dataset(source, None, root, say=say)]
    target = long.LONGBENCH_WORDS[length]
    padded = long.pad(everything[:limit], target, everything)
    short = sum(sum(long.words(p) for p in e.passages) < target for e in padded)
    if short and say is not None:
        say(
            f"{name}: {short} of {len(padded)} questions stay under {target:,} words: the "
            "file's other questions have too few paragraphs to pad them further"
        )
    return padded


def padded_length(name: str, root: Path | None = None) -> str:
    """Whose LongBench length ``long:…`` (without a slice) pads to: a dev set's name. A
    :class:`DatasetError` for what cannot be padded: a named set other than the dev sets, a
    file whose questions have no passages or are LongBench's already, and ``long:PATH`` where
    the file's format does not say its length (HotpotQA and 2Wiki share one)."""
    length, source = long_parts(name)
    if not is_file_dataset(source):
        if source not in long.LONGBENCH_WORDS:
            raise DatasetError(
                f"{name!r}: only the dev sets ({', '.join(long.LONGBENCH_WORDS)}) or a question "
                "file (long:NAME:PATH, or long:PATH for MuSiQue's format) can be padded to "
                "LongBench's length"
            )
        return length or source
    path, _ = dataset_path(source, root)
    form = file_format(path)
    if form in ("LongBench", "FlashRAG"):
        why = "are LongBench's already" if form == "LongBench" else "have no passages to pad"
        raise DatasetError(f"{path}: {form} format: its questions {why}; {name!r} pads nothing")
    if length is not None:
        return length
    if form in long.FORMAT_LENGTHS:
        return long.FORMAT_LENGTHS[form]
    choices = ", ".join(
        f"long:{dev}:{source} ({words:,} words)" for dev, words in long.LONGBENCH_WORDS.items()
    )
    raise DatasetError(
        f"{path}: {form} format does not say which LongBench length to pad to; name it: {choices}"
    )


def dataset_setting(name: str) -> str | None:
    """What a derived dataset (``long:NAME``) does to its file, and the format a file given by
    its PATH was read in (``read as MuSiQue``), as a run records it; None for a named file as
    it is."""
    name, _ = split_slice(name)
    said = []
    if name.startswith(long.PREFIX):
        said.append(long.setting(padded_length(name), long_parts(name)[1]))
    path, fmt = dataset_path(name)
    if fmt == "detect":
        said.append(f"read as {file_format(path)}")
    return "; ".join(said) or None


def load_corpus(name_or_path: str, root: Path | None = None) -> list[Passage]:
    """A shared corpus by name (``musique_train_corpus``, ``hotpotqa_train_corpus``,
    ``2wiki_hipporag_corpus``) or by path.

    Accepts HippoRAG's two layouts: a list of ``{title, text}`` and a mapping title → sentences.
    """
    name_or_path = corpus_name(name_or_path)
    rel = CORPORA.get(name_or_path)
    path = (root or data_root()) / rel if rel else Path(name_or_path)
    data = read_json(path, f"corpus file (named corpora: {', '.join(CORPORA)})")
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
        data = read_json(path, "context file")
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
        raw = decode(read_bytes(path, "context file"))
    except Unreadable as exc:
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
