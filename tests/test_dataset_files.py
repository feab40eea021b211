"""Any dataset file (issue 22, item 3): ``--dataset PATH`` detects the format from the records.

Every format the loaders know, as a small file (JSON array and JSON Lines where both exist),
is detected and gives the questions the named loader gives; a mixed file, an unknown one and
malformed ones are errors naming the file and the first record that does not fit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from chainrag.core.types import GoldStep, Passage, QAExample
from chainrag.data.datasets import (
    DatasetError,
    dataset_path,
    dataset_slug,
    load_corpus,
    load_dataset,
    shared_corpus,
)
from chainrag.data.detect import load_file

from .conftest import DATA_ROOT

DATA = DATA_ROOT
LONGBENCH = {"input": "Who played the Skipper?", "_id": "lb1", "answers": ["Alan Hale Jr."],
             "context": "Passage 1:\nThe Skipper\nPlayed by Alan Hale Jr.\n"}  # fmt: skip
FLASHRAG = [
    {"id": "test_0", "question": "Who wrote Hamlet?", "golden_answers": ["Shakespeare",
     "William Shakespeare"], "metadata": {"type": "bridge", "level": "easy"}},
    {"id": 7, "question": "What is the capital of Peru?", "golden_answers": ["Lima"],
     "metadata": {}},
    {"question": "Which river flows through Cairo?", "golden_answers": ["Nile"]},
]  # fmt: skip
HIPPORAG_SAMPLE = [
    {"question": "Which city hosts the university the author of Dune attended?",
     "answer": ["Seattle", "Seattle, Washington"],
     "paragraphs": [
         {"title": "Frank Herbert", "text": "Frank Herbert wrote Dune. He studied at the "
          "University of Washington.", "is_supporting": True},
         {"title": "University of Washington", "paragraph_text": "The University of "
          "Washington is a university in Seattle."},
         {"title": "Lima", "text": "Lima is the capital of Peru.", "is_supporting": False},
     ]},
    {"_id": "q2", "question": "Who wrote Dune?", "answer": "Frank Herbert",
     "answer_aliases": ["Herbert"],
     "paragraphs": [{"idx": 4, "title": "Frank Herbert", "paragraph_text": "Frank Herbert "
                     "wrote Dune.", "is_supporting": True}],
     "question_decomposition": [{"question": "Who wrote Dune?", "answer": "Frank Herbert",
                                 "paragraph_support_idx": 4}]},
]  # fmt: skip


def _records(file: str, n: int) -> list[Any]:
    """The first ``n`` records of a real file."""
    text = (DATA / file).read_text()
    if file.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines()[:n]]
    return list(json.loads(text)[:n])


def _write(path: Path, records: list[Any]) -> Path:
    """``records`` as JSON Lines (``.jsonl``) or as one JSON array (any other suffix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    return path


def _loaded(path: Path) -> tuple[list[QAExample], list[str]]:
    said: list[str] = []
    return load_dataset(str(path), say=said.append), said


def _same(mine: list[QAExample], named: list[QAExample]) -> bool:
    return mine == [attrs.evolve(e, dataset=mine[0].dataset) for e in named]


# ------------------------------------------------------------------- every format, detected


@pytest.mark.parametrize(
    ("file", "name", "shown"),
    [
        ("musique_dev.jsonl", "musique", "MuSiQue"),
        ("hotpotqa_dev.jsonl", "hotpotqa", "HotpotQA/2Wiki"),
        ("2wikimultihopqa_dev.jsonl", "2wiki", "HotpotQA/2Wiki"),
        ("hipporag/musique_train.json", "musique_train", "MuSiQue"),
        ("hipporag/hotpotqa_train.json", "hotpotqa_train", "HotpotQA/2Wiki"),
    ],
)
@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_dev_or_train_file_is_detected_and_read_as_its_named_loader_reads_it(
    tmp_path: Path, file: str, name: str, shown: str, suffix: str
) -> None:
    path = _write(tmp_path / f"mine{suffix}", _records(file, 3))
    examples, said = _loaded(path)
    assert said == [f"{path}: {shown} format, detected from its 3 records"]
    assert _same(examples, load_dataset(name, 3))
    assert all(e.dataset == str(path) for e in examples)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_longbench_file_is_detected(tmp_path: Path, suffix: str) -> None:
    lines = _write(tmp_path / "lb.jsonl", [LONGBENCH, LONGBENCH | {"_id": "lb2"}])
    path = _write(tmp_path / f"mine{suffix}", [LONGBENCH, LONGBENCH | {"_id": "lb2"}])
    examples, said = _loaded(path)
    assert said == [f"{path}: LongBench format, detected from its 2 records"]
    assert _same(examples, load_dataset(f"longbench:{lines}"))


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_flashrag_file_has_no_passages_and_says_it_needs_an_index(
    tmp_path: Path, suffix: str
) -> None:
    path = _write(tmp_path / f"flash{suffix}", FLASHRAG)
    examples, said = _loaded(path)
    assert said == [
        f"{path}: FlashRAG format, detected from its 3 records; its questions have no passages "
        "of their own, so it runs only over a corpus index: --index DIR (chainrag index "
        "R --corpus FILE --out-dir DIR)"
    ]
    place = "line-3" if suffix == ".jsonl" else "record-3"
    assert examples == [
        QAExample("test_0", str(path), "Who wrote Hamlet?",
                  answers=("Shakespeare", "William Shakespeare"), question_type="bridge"),
        QAExample("7", str(path), "What is the capital of Peru?", answers=("Lima",)),
        QAExample(place, str(path), "Which river flows through Cairo?", answers=("Nile",)),
    ]  # fmt: skip


def test_a_flashrag_file_runs_only_over_a_corpus_index(tmp_path: Path) -> None:
    from chainrag.run.jobs import load_questions

    path = str(_write(tmp_path / "flash.jsonl", FLASHRAG))
    with pytest.raises(
        DatasetError,
        match=r"flash\.jsonl: its questions carry no passages of their own .*run it over a "
        r"corpus index: --index DIR, built by chainrag index",
    ):
        load_questions(path, None, shared=False)
    assert len(load_questions(path, None, shared=True)) == 3


def test_hipporags_own_sample_layout(tmp_path: Path) -> None:
    """HippoRAG 2's sample.json layout: no ids, ``text`` or ``paragraph_text``, an answer list,
    and a paragraph without ``is_supporting`` counted as gold, as HippoRAG's evaluation does."""
    path = _write(tmp_path / "sample.json", HIPPORAG_SAMPLE)
    (first, second), said = _loaded(path)
    assert said == [f"{path}: HippoRAG format, detected from its 2 records"]
    assert first == QAExample(
        "record-1", str(path), HIPPORAG_SAMPLE[0]["question"],
        passages=(
            Passage("0", "Frank Herbert",
                    "Frank Herbert wrote Dune. He studied at the University of Washington."),
            Passage("1", "University of Washington",
                    "The University of Washington is a university in Seattle."),
            Passage("2", "Lima", "Lima is the capital of Peru."),
        ),
        answers=("Seattle", "Seattle, Washington"),
        supporting_passages=(0, 1),
    )  # fmt: skip
    assert second.qid == "q2" and second.answers == ("Frank Herbert", "Herbert")
    assert second.passages == (Passage("4", "Frank Herbert", "Frank Herbert wrote Dune."),)
    assert second.decomposition == (GoldStep("Who wrote Dune?", "Frank Herbert", 0),)


def _unmarked(records: list[Any], key: str | None) -> list[Any]:
    """``records`` with each paragraph's ``is_supporting`` dropped, or renamed to ``key``."""
    return [
        r | {"paragraphs": [
            {k: v for k, v in p.items() if k != "is_supporting"}
            | ({key: p["is_supporting"]} if key and "is_supporting" in p else {})
            for p in r["paragraphs"]
        ]}
        for r in records
    ]  # fmt: skip


def test_a_hipporag_file_without_any_gold_mark_is_warned_about(tmp_path: Path) -> None:
    path = _write(tmp_path / "sample.json", _unmarked(HIPPORAG_SAMPLE, None))
    (first, second), said = _loaded(path)
    assert said[0] == f"{path}: HippoRAG format, detected from its 2 records"
    assert said[1:] == [
        f"{path}: warning: no paragraph carries 'is_supporting', so every paragraph counts as "
        "gold (as HippoRAG's evaluation counts them) and Recall@k measures how many of a "
        "question's paragraphs are retrieved, not its supporting ones; mark those with "
        '"is_supporting": true'
    ]
    assert first.supporting_passages == (0, 1, 2) and second.supporting_passages == (0,)
    _, marked = _loaded(_write(tmp_path / "marked.json", HIPPORAG_SAMPLE))
    assert marked == [f"{tmp_path / 'marked.json'}: HippoRAG format, detected from its 2 records"]


def test_an_unread_paragraph_key_is_named_in_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path / "sample.jsonl", _unmarked(HIPPORAG_SAMPLE, "is_support"))
    _, said = _loaded(path)
    assert said[1] == (
        f"{path}: warning: paragraph key 'is_support' is not read (3 paragraphs, the first at "
        "line 1, paragraphs[0]); did you mean 'is_supporting'? (the keys read: title, text, "
        "paragraph_text, is_supporting, idx)"
    )
    assert "no paragraph carries 'is_supporting'" in said[2] and len(said) == 3
    first, second = _records("musique_dev.jsonl", 2)  # MuSiQue's ids: read as MuSiQue
    typo = _write(tmp_path / "typo.jsonl", [first, _unmarked([second], "is_gold")[0]])
    examples, said = _loaded(typo)
    assert said[0].endswith("MuSiQue format, detected from its 2 records") and len(said) == 2
    assert re.fullmatch(
        rf"{re.escape(str(typo))}: warning: paragraph key 'is_gold' is not read \(\d+ "
        r"paragraphs, the first at line 2, paragraphs\[0\]\) \(the keys read: idx, title, "
        r"paragraph_text, is_supporting\)",
        said[1],
    )
    assert examples[1].supporting_passages == ()


def test_a_hipporag_pair_is_answered_over_its_corpus_through_an_index(tmp_path: Path) -> None:
    """HippoRAG's question file with NAME_corpus.json beside it: the questions load as the
    named train set's do, and indexing the dataset indexes the corpus beside it."""
    from chainrag.index.build import IndexBuildError
    from chainrag.index.corpus.indexing import contexts_of

    questions = _write(tmp_path / "musique.json", _records("hipporag/musique_train.json", 2))
    corpus = _write(
        tmp_path / "musique_corpus.json", _records("hipporag/musique_train_corpus.json", 5)
    )
    examples, said = _loaded(questions)
    assert said == [
        f"{questions}: MuSiQue format, detected from its 2 records; HippoRAG's corpus is "
        f"beside it: --index DIR answers every question over it (chainrag index R "
        f"--corpus {corpus} --out-dir DIR), without --index each question is answered over its "
        "own passages"
    ]
    assert _same(examples, load_dataset("musique_train", 2))
    assert shared_corpus(str(questions)) == str(corpus)
    assert shared_corpus("musique_train") == "musique_train_corpus"
    assert shared_corpus("musique") is None
    assert contexts_of(str(questions), None) == [(str(corpus), tuple(load_corpus(str(corpus))))]
    flash = _write(tmp_path / "flash.jsonl", FLASHRAG)
    with pytest.raises(IndexBuildError, match=r"flash\.jsonl: its questions carry no passages"):
        contexts_of(str(flash), None)


def test_a_file_is_named_by_its_stem_and_its_path() -> None:
    assert dataset_slug("some/where/my_questions.jsonl") == "my_questions"
    assert dataset_slug("q.json") == "q" and dataset_slug("pooled:a/b.json") == "pooled-b"
    assert dataset_path("a/b.json") == (Path("a/b.json"), "detect")
    assert dataset_slug("musique") == "musique"


def test_a_file_can_be_pooled(tmp_path: Path) -> None:
    path = _write(tmp_path / "mine.jsonl", _records("hotpotqa_dev.jsonl", 3))
    pooled = load_dataset(f"pooled:{path}")
    assert len(pooled) == 3 and all(e.passages is pooled[0].passages for e in pooled)
    assert len(pooled[0].passages) == len({(p.title, p.text) for q in _loaded(path)[0]
                                           for p in q.passages})  # fmt: skip


# ------------------------------------------------------------------- malformed files


def test_a_mixed_file_names_the_first_record_in_another_format(tmp_path: Path) -> None:
    musique, hotpot = _records("musique_dev.jsonl", 2), _records("hotpotqa_dev.jsonl", 1)
    path = _write(tmp_path / "mixed.jsonl", [*musique, *hotpot, *musique])
    with pytest.raises(
        DatasetError,
        match=r"mixed\.jsonl: line 3 is in the HotpotQA/2Wiki format, line 1 in the MuSiQue "
        "format: a file holds questions of one format",
    ):
        load_dataset(str(path))
    path = _write(tmp_path / "mixed.json", [FLASHRAG[0], LONGBENCH])
    with pytest.raises(
        DatasetError, match=r"mixed\.json: record 2 is in the LongBench format, record 1 in the "
    ):
        load_dataset(str(path))


def test_an_unknown_file_names_the_record_and_what_each_format_misses(tmp_path: Path) -> None:
    path = _write(tmp_path / "odd.jsonl", [{"q": "Who?", "a": "Me"}, FLASHRAG[0]])
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    assert str(caught.value).splitlines() == [
        f"{path}: line 1 is in none of the dataset formats chainrag reads:",
        "  - not MuSiQue: field 'id': missing (expected a non-empty string or an integer) "
        "(and 3 more)",
        "  - not HotpotQA/2Wiki: field '_id': missing (expected a non-empty string or an "
        "integer) (and 3 more)",
        "  - not LongBench: field 'input': missing (expected a non-empty string) (and 2 more)",
        "  - not HippoRAG: field 'question': missing (expected a non-empty string) (and 2 more)",
        "  - not FlashRAG: field 'question': missing (expected a non-empty string) (and 1 more)",
    ]
    corpus = _write(tmp_path / "corpus.json", _records("hipporag/musique_train_corpus.json", 2))
    with pytest.raises(
        DatasetError, match=r"(?s)corpus\.json: record 1 is in none .*It is a passage"
    ):
        load_dataset(str(corpus))
    scalar = _write(tmp_path / "scalar.jsonl", [3])
    with pytest.raises(DatasetError, match=r"line 1 is in none.*\n  - not MuSiQue: expected a"):
        load_dataset(str(scalar))


def test_bad_records_of_the_detected_format_are_all_listed(tmp_path: Path) -> None:
    first, second, third = _records("musique_dev.jsonl", 3)
    path = _write(tmp_path / "bad.jsonl", [first, second | {"answer": None},
                                           third | {"answer_aliases": "x"}])  # fmt: skip
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    assert str(caught.value).splitlines() == [
        f"{path}: 2 records not in the MuSiQue format (2 problems):",
        "  - line 2, field 'answer': expected a non-empty string, got null",
        "  - line 3, field 'answer_aliases': expected a list of strings, got 'x'",
    ]


def test_a_musique_record_without_an_id_makes_the_file_hipporag(tmp_path: Path) -> None:
    """HippoRAG's layout is MuSiQue's with ids optional, so such a file is read as HippoRAG's
    (and says so): the same passages and answers, the record named by its place."""
    first, second = _records("musique_dev.jsonl", 2)
    del second["id"]
    path = _write(tmp_path / "noid.jsonl", [first, second])
    examples, said = _loaded(path)
    assert said == [f"{path}: HippoRAG format, detected from its 2 records"]
    named = load_dataset("musique", 2)
    assert [e.qid for e in examples] == [named[0].qid, "line-2"]
    assert [e.passages for e in examples] == [e.passages for e in named]
    assert examples[0].supporting_passages == named[0].supporting_passages


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", r"empty\.jsonl: no records \(an empty JSON file\)"),
        (b"\n  \n", r"empty\.jsonl: no records"),
        (b'{"question": "a"}\n{not json}\n',
         r"empty\.jsonl: 1 record not in the JSON format .*\n  - line 2: invalid JSON"),
        (b"[\n1,\n}", r"empty\.jsonl, line 3: invalid JSON: Expecting value"),
        (b'{\n  "Title": ["One.", "Two."]\n}\n',
         r"empty\.jsonl: expected questions as a JSON array or as JSON Lines \(one per line\), "
         r"got an object over 3 lines"),
        (b'"caf\xe9"\n', r"line 1: not UTF-8 \(byte 0xe9\)"),
    ],
)  # fmt: skip
def test_empty_and_unreadable_files(tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "empty.jsonl").write_bytes(content)
    with pytest.raises(DatasetError, match=expected):
        load_file(str(tmp_path / "empty.jsonl"))


def test_a_missing_file_and_an_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nope\.json: no such file"):
        load_dataset(str(tmp_path / "nope.json"))
    with pytest.raises(
        DatasetError, match=r"unknown dataset 'nq'; known: .*or a file's PATH \(with a / or"
    ):
        load_dataset("nq")


# ------------------------------------------------------------------- the command


def test_a_run_on_a_file_says_the_format_once_and_is_keyed_by_its_sha256(tmp_path: Path) -> None:
    from chainrag.standin.server import FakeOpenAI, serve

    from .test_runs import naive_recipe

    data = _write(tmp_path / "data" / "my_questions.json", _records("musique_dev.jsonl", 2))
    flash = _write(tmp_path / "data" / "flash.jsonl", FLASHRAG)
    fake = FakeOpenAI([], reply="Paris")
    cli = [sys.executable, "-c", "from chainrag.cli.main import app; app()"]
    env = os.environ | {"CHAINRAG_CACHE": str(tmp_path / "cache")}
    with serve(fake) as api_base:
        recipe, _ = naive_recipe(tmp_path, f"llm: {{kind: litellm, model: openai/fake-model, "
                                 f"api_base: '{api_base}', max_retries: 0}}\n")  # fmt: skip
        args = [*cli, "run", str(recipe), "--out", str(tmp_path / "runs"), "--no-report"]
        done = subprocess.run([*args, "--dataset", str(data)], env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        refused = subprocess.run([*args, "--dataset", str(flash)], env=env, capture_output=True,
                                 text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("MuSiQue format, detected from its 2 records") == 1
    assert "detected" not in done.stdout
    meta = json.loads((tmp_path / "runs" / "my_questions" / "naive" / "run.json").read_text())
    assert meta["dataset"] == str(data) and meta["dataset_file"] == str(data)
    assert meta["dataset_fingerprint"] == "sha256:" + hashlib.sha256(data.read_bytes()).hexdigest()
    assert meta["dataset_setting"] == "read as MuSiQue"
    assert len(fake.bodies) == 2
    assert refused.returncode == 1
    assert "FlashRAG format, detected from its 3 records" in refused.stderr
    assert "its questions carry no passages of their own" in refused.stderr
    assert not (tmp_path / "runs" / "flash").exists()
