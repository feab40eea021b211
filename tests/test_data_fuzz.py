"""Mutated dataset files never make a loader raise anything but DatasetError (issue 19).

Each format starts from a real record (or a small valid document) and breaks it: values
replaced by random JSON (wrong types, nulls, empty strings and lists), keys and items deleted,
records mixed with random JSON values and random bytes. Loading must either succeed with
well-formed questions and passages, or raise a DatasetError that names the file.
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from chainrag.core.types import Passage, QAExample
from chainrag.data.datasets import DatasetError, load_context_file, load_corpus, load_dataset

from .conftest import DATA_ROOT

DELETE = "<delete>"
"""An edit that removes the key or item instead of replacing its value."""

LONGBENCH = {"input": "Who played the Skipper?", "_id": "lb1", "answers": ["Alan Hale Jr."],
             "context": "Passage 1:\nThe Skipper\nPlayed by Alan Hale Jr.\n"}  # fmt: skip
CORPUS_LIST = [{"title": "A", "text": "One. Two."}, {"title": "B", "text": "Three."}]
CORPUS_MAP = {"A": ["One.", "Two."], "B": ["", "Three."]}
CONTEXT = [{"title": "A", "text": "One."}, ["B", ["Two.", "Three."]]]
FLASHRAG = {"id": "t0", "question": "Who wrote Dune?", "golden_answers": ["Frank Herbert"],
            "metadata": {"type": "bridge"}}  # fmt: skip
HIPPORAG = [
    {"question": "Who wrote Dune?", "answer": ["Frank Herbert"],
     "paragraphs": [{"title": "Dune", "text": "Dune is by Frank Herbert."},
                    {"title": "Lima", "paragraph_text": "Lima is in Peru.", "idx": 3,
                     "is_supporting": False}]},
    {"_id": "b", "question": "Where is Lima?", "answer": "Peru",
     "paragraphs": [{"title": "Lima", "text": "Lima is in Peru.", "is_supporting": True}]},
]  # fmt: skip

# kind: (file under the data root, what one line or the whole file holds, JSON Lines?)
FILES: dict[str, tuple[str, str, bool]] = {
    "musique": ("musique_dev.jsonl", "musique_dev.jsonl", True),
    "pooled:hotpotqa": ("hotpotqa_dev.jsonl", "hotpotqa_dev.jsonl", True),
    "2wiki": ("2wikimultihopqa_dev.jsonl", "2wikimultihopqa_dev.jsonl", True),
    "musique_train": ("hipporag/musique_train.json", "hipporag/musique_train.json", False),
    "hotpotqa_train": ("hipporag/hotpotqa_train.json", "hipporag/hotpotqa_train.json", False),
    "longbench": ("lb.jsonl", "longbench", True),
    "corpus_list": ("corpus.json", "corpus_list", False),
    "corpus_map": ("map.json", "corpus_map", False),
    "context": ("context.json", "context", False),
    # any file, its format detected (issue 22, item 3)
    "file:musique": ("mine.jsonl", "musique_dev.jsonl", True),
    "file:hotpot": ("mine.json", "hipporag/hotpotqa_train.json", False),
    "file:flashrag": ("flash.jsonl", "flashrag", True),
    "file:hipporag": ("sample.json", "hipporag", False),
}


@functools.cache
def _base(source: str) -> Any:
    """A valid value to break: a real line, two real records, or a small document."""
    fixed = {"longbench": LONGBENCH, "corpus_list": CORPUS_LIST, "corpus_map": CORPUS_MAP,
             "context": CONTEXT, "flashrag": FLASHRAG, "hipporag": HIPPORAG}  # fmt: skip
    if source in fixed:
        return fixed[source]
    text = (DATA_ROOT / source).read_text()
    return json.loads(text.splitlines()[0]) if source.endswith(".jsonl") else json.loads(text)[:2]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside ``value`` that an edit can replace or delete."""
    children: Sequence[tuple[Any, Any]] = ()
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    inner = [p for key, child in children for p in _paths(child, (*prefix, key))]
    return [prefix, *inner] if prefix else inner


def _holds(node: Any, key: Any) -> bool:
    if isinstance(node, dict):
        return key in node
    return isinstance(node, list) and isinstance(key, int) and key < len(node)


def _edited(value: Any, edits: Sequence[tuple[tuple[Any, ...], Any]]) -> Any:
    """A copy of ``value`` with each edit applied that an earlier one left a way to."""
    copy = json.loads(json.dumps(value))
    for where, new in edits:
        node = copy
        for key in where[:-1]:
            node = node[key] if _holds(node, key) else None
        if not _holds(node, where[-1]):
            continue
        if new == DELETE:
            del node[where[-1]]
        else:
            node[where[-1]] = new
    return copy


edge_values = st.sampled_from([None, "", " ", "no", "\ud800", 0, -1, 1.5, True, [], {}, [""]])
scalars = st.one_of(edge_values, st.booleans(), st.integers(), st.floats(), st.text(max_size=10))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _broken(base: Any) -> st.SearchStrategy[Any]:
    """``base`` with one to three values replaced (by anything, often a near miss) or removed."""
    edit = st.tuples(st.sampled_from(_paths(base)), st.one_of(json_values, st.just(DELETE)))
    return st.lists(edit, min_size=1, max_size=3).map(lambda edits: _edited(base, edits))


def _dumped(value: Any) -> bytes:
    return json.dumps(value).encode()


def _file(base: Any, json_lines: bool) -> st.SearchStrategy[bytes]:
    """A whole file: JSON lines (broken records, good ones, other JSON, raw bytes), or one
    JSON document (broken, other JSON, or raw bytes)."""
    if json_lines:
        line = st.one_of(
            _broken(base).map(_dumped),
            st.just(_dumped(base)),
            json_values.map(_dumped),
            st.binary(max_size=30),
        )
        return st.lists(line, max_size=4).map(b"\n".join)
    return st.one_of(_broken(base).map(_dumped), json_values.map(_dumped), st.binary(max_size=60))


Loaded = Sequence[QAExample] | Sequence[Passage]


def _load(kind: str, root: Path, path: Path) -> Loaded:
    if kind.startswith("corpus"):
        return load_corpus(str(path))
    if kind == "context":
        return load_context_file(path)
    if kind == "longbench":
        return load_dataset(f"longbench:{path}")
    if kind.startswith("file:"):
        return load_dataset(str(path))
    return load_dataset(kind, root=root)


def _well_formed(loaded: Loaded, kind: str) -> None:
    """What a loader promises: questions with answers and passages (none in a FlashRAG file),
    all non-empty text."""
    assert loaded
    for item in loaded:
        passages = item.passages if isinstance(item, QAExample) else (item,)
        if isinstance(item, QAExample):
            assert item.qid and item.question.strip() and item.answers
            assert item.passages or kind == "file:flashrag"
            assert all(isinstance(a, str) and a.strip() for a in item.answers)
            assert all(isinstance(i, int) for i in item.supporting_passages)
        assert all(isinstance(p.title, str) and p.text.strip() for p in passages)


def _outcome(kind: str, root: Path, path: Path) -> Loaded | DatasetError:
    try:
        return _load(kind, root, path)
    except DatasetError as exc:
        return exc


def _check(kind: str, root: Path, path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    loaded = _outcome(kind, root, path)
    event(f"{kind}: {type(loaded).__name__}")
    if isinstance(loaded, DatasetError):
        assert str(path) in str(loaded), "the error names the file"
    else:
        _well_formed(loaded, kind)


@pytest.mark.parametrize("kind", list(FILES))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_broken_file_loads_or_is_a_dataset_error(kind: str, data: st.DataObject) -> None:
    file, source, json_lines = FILES[kind]
    content = data.draw(_file(_base(source), json_lines), label="file")
    with tempfile.TemporaryDirectory() as folder:
        _check(kind, Path(folder), Path(folder) / file, content)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=80).map(str.encode), st.binary(max_size=80)))
def test_a_text_context_file_loads_or_is_a_dataset_error(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _check("context", Path(folder), Path(folder) / "context.txt", content)
