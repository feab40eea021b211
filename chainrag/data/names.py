"""Dataset and corpus names: the files that ship, and the grammar of a ``--dataset``.

A named dev or train set (:data:`DATASETS`) or corpus (:data:`CORPORA`; old corpus names work
for one release, :data:`RENAMED_CORPORA`); ``pooled:NAME``, ``long:NAME`` (``long:NAME:PATH``
and ``long:PATH`` for a question file, :func:`long_parts`) and ``longbench:PATH``; any other
file by its PATH (:func:`is_file_dataset`); any of them with a slice of its questions,
``NAME[START:STOP]`` (:func:`split_slice`). Also where a name's file is (:func:`dataset_path`),
the run folder it gets (:func:`dataset_slug`) and the corpus its
questions share (:func:`shared_corpus`). Loading is :mod:`chainrag.data.datasets`.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import attrs

from chainrag.core.paths import data_root
from chainrag.data import long
from chainrag.data.records import DatasetError


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


POOLED = "pooled:"
"""Prefix of a dev set in the shared-corpus setting (:func:`pool`)."""


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
    if name.startswith(long.PREFIX):
        return dataset_path(long_parts(name)[1], root)
    if name.startswith(POOLED):
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


def long_parts(name: str) -> tuple[str | None, str]:
    """What ``long:…`` (without a slice) pads, and to whose LongBench length: ``long:NAME`` is
    (NAME, NAME), NAME's dev file to NAME's length; ``long:NAME:PATH`` is (NAME, PATH), the
    question file PATH to NAME's length; ``long:PATH`` is (None, PATH), the length to be read
    from the file's format (:data:`chainrag.data.long.FORMAT_LENGTHS`)."""
    inner = name.removeprefix(long.PREFIX)
    length, colon, rest = inner.partition(":")
    if colon and length in long.LONGBENCH_WORDS:
        if not rest:
            raise DatasetError(f"{name!r} names no question file: long:{length}:PATH")
        return length, rest
    return (inner if inner in long.LONGBENCH_WORDS else None), inner


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


def dataset_slug(dataset: str) -> str:
    """The run folder name of a dataset: its name, ``pooled-<name>``, ``long-<name>``,
    ``longbench-<stem>``, or a file's stem (``my/questions.jsonl``: ``questions``;
    ``long:2wiki:my/questions.jsonl``: ``long-2wiki-questions``); a slice of its questions
    follows (``long:2wiki[30:60]``: ``long-2wiki-30-60``)."""
    base, part = split_slice(dataset)
    if part is not None:
        return f"{dataset_slug(base)}-{part.start or 0}-{'end' if part.stop is None else part.stop}"
    if dataset.startswith(POOLED):
        return "pooled-" + dataset_slug(dataset.removeprefix(POOLED))
    if dataset.startswith(long.PREFIX):
        length, source = long_parts(dataset)
        named = f"{length}-" if length is not None and length != source else ""
        return f"long-{named}{dataset_slug(source)}"
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
