from __future__ import annotations

from pathlib import Path

import pytest

from chainrag.data import DatasetError, load_corpus, load_dataset

from .conftest import SHARED


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("musique", 100),
        ("hotpotqa", 100),
        ("2wiki", 82),
        ("musique_train", 100),
        ("hotpotqa_train", 100),
    ],
)
def test_real_files_load(name: str, count: int) -> None:
    examples = load_dataset(name)
    assert len(examples) == count
    for q in examples:
        assert q.question and q.answers and q.passages
        assert q.supporting_passages, f"{q.qid} has no gold passage"
        assert all(0 <= i < len(q.passages) for i in q.supporting_passages)


def test_musique_fields() -> None:
    q = load_dataset("musique", limit=1)[0]
    assert q.qid == "4hop1__37608_32392_823060_610794"
    assert q.answers == ("Richland County", "Richland County, South Carolina")
    assert len(q.decomposition) == 4
    step = q.decomposition[0]
    assert step.question == "Where was Representative Thomas Tucker from?"
    assert step.paragraph is not None and q.passages[step.paragraph].pid == "1"
    assert q.question_type == "4hop1"


def test_hotpot_sentences_keep_their_spans() -> None:
    for name in ("hotpotqa", "2wiki"):
        for q in load_dataset(name, limit=20):
            for p in q.passages:
                for a, b in p.sentence_spans:
                    assert p.text[a:b] == p.text[a:b].strip() and b > a
            for fact in q.supporting_sentences:
                assert any(p.title == fact.title for p in q.passages)


def test_2wiki_sentences_are_joined_with_spaces() -> None:
    q = load_dataset("2wiki", limit=1)[0]
    p = next(p for p in q.passages if p.title == "The Serpent's Egg (film)")
    a, b = p.sentence_spans[1]
    assert (
        p.text[a:b] == "The story is set in 1920s Berlin and features English and German dialogue."
    )
    assert ". The story" in p.text


@pytest.mark.parametrize(
    ("name", "count"), [("musique_train", 1890), ("hotpotqa_train", 994), ("2wiki", 6119)]
)
def test_corpora_load(name: str, count: int) -> None:
    passages = load_corpus(name)
    assert len(passages) == count
    assert all(p.text for p in passages)


def test_malformed_jsonl_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "musique_dev.jsonl").write_text('{"id": "a"}\n\n{not json}\n')
    with pytest.raises(
        DatasetError,
        match=r"musique_dev\.jsonl, line 1: not a musique record: missing field 'question'",
    ):
        load_dataset("musique", root=tmp_path)
    good = (SHARED / "data" / "musique_dev.jsonl").read_text().splitlines()[0]
    (tmp_path / "musique_dev.jsonl").write_text(good + "\n\n{not json}\n")
    with pytest.raises(DatasetError, match=r"musique_dev\.jsonl, line 3: invalid JSON"):
        load_dataset("musique", root=tmp_path)


def test_missing_and_unknown(tmp_path: Path) -> None:
    with pytest.raises(
        DatasetError, match=r"unknown dataset 'nq'; known: musique, hotpotqa, 2wiki"
    ):
        load_dataset("nq")
    with pytest.raises(DatasetError, match=r"no such file \(set \$CHAINRAG_DATA"):
        load_dataset("hotpotqa", root=tmp_path)
    (tmp_path / "c.json").write_text('[{"title": "x"}]')
    with pytest.raises(DatasetError, match=r"c\.json, record 1: expected \{title, text\}"):
        load_corpus(str(tmp_path / "c.json"))
