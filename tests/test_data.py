from __future__ import annotations

import json
import re
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


LONGBENCH_CONTEXT = (
    "Passage 1:\nAlan Hale Jr.\nAlan Hale Jr. was an American actor.\n"
    "Passage 2:\nThe Skipper\nThe Skipper is a character played by Alan Hale Jr.\n\n"
)


def _jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_longbench_format(tmp_path: Path) -> None:
    record = {"input": "Who played the Skipper?", "context": LONGBENCH_CONTEXT,
              "answers": ["Alan Hale Jr.", "Alan Hale"], "_id": "lb1", "length": 20}  # fmt: skip
    path = _jsonl(tmp_path / "hotpotqa.jsonl", [record, record | {"_id": ""}])
    first, second = load_dataset(f"longbench:{path}")
    assert first.qid == "lb1" and second.qid == "line-2"
    assert first.question == "Who played the Skipper?"
    assert first.answers == ("Alan Hale Jr.", "Alan Hale")
    assert [(p.title, p.text) for p in first.passages] == [
        ("Alan Hale Jr.", "Alan Hale Jr. was an American actor."),
        ("The Skipper", "The Skipper is a character played by Alan Hale Jr."),
    ]
    assert not first.supporting_passages and not first.supporting_sentences
    plain = _jsonl(tmp_path / "plain.jsonl", [record | {"context": "One.\n\nTwo."}])
    assert [p.text for p in load_dataset(f"longbench:{plain}")[0].passages] == ["One.", "Two."]


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"context": "x", "answers": ["a"]}, "missing field 'input'"),
        ({"input": "q", "context": 3, "answers": ["a"]}, "field 'context' must be a str"),
        ({"input": "q", "context": "x", "answers": "a"}, "field 'answers' must be a list"),
        ({"input": "q", "context": "x", "answers": []}, "field 'answers' must be a non-empty list"),
        (["not", "an", "object"], "expected a JSON object"),
    ],
)
def test_malformed_longbench_names_file_and_line(
    tmp_path: Path, record: object, problem: str
) -> None:
    good = {"input": "q", "context": "x", "answers": ["a"]}
    path = _jsonl(tmp_path / "lb.jsonl", [good, record])
    expected = r"lb\.jsonl, line 2: not a longbench record: " + re.escape(problem)
    with pytest.raises(DatasetError, match=expected):
        load_dataset(f"longbench:{path}")


def test_longbench_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nope\.jsonl: no such file"):
        load_dataset(f"longbench:{tmp_path / 'nope.jsonl'}")


@pytest.mark.parametrize("name", ["musique", "hotpotqa", "2wiki"])
def test_pooled_setting_shares_one_context_and_keeps_the_gold(name: str) -> None:
    from chainrag.metrics import gold_items, retrieval_scores
    from chainrag.types import Chunk

    own = load_dataset(name)
    pooled = load_dataset(f"pooled:{name}", 30)
    assert len(pooled) == 30 and [e.qid for e in pooled] == [e.qid for e in own[:30]]
    shared = pooled[0].passages
    assert all(e.passages is shared for e in pooled) and all(e.dataset == f"pooled:{name}"
                                                              for e in pooled)  # fmt: skip
    assert len({(p.title, p.text) for p in shared}) == len(shared)  # each passage once
    assert len(shared) >= 30 * min(len(e.passages) for e in own[:30])  # not only the 30 asked
    assert load_dataset(f"pooled:{name}", 2)[0].passages == shared  # the pool ignores --limit
    for mine, theirs in zip(pooled, own, strict=False):
        for i, j in zip(mine.supporting_passages, theirs.supporting_passages, strict=True):
            assert (shared[i].title, shared[i].text) == (theirs.passages[j].title,
                                                         theirs.passages[j].text)  # fmt: skip
        # retrieving the gold passages themselves scores a strict hit in the pool, too
        _, gold = gold_items(mine)
        units = [Chunk(k, shared[p].text, p, shared[p].title, 0, 0, len(shared[p].text))
                 for k, p in enumerate(sorted({p for p, _ in gold}))]  # fmt: skip
        assert gold and retrieval_scores(mine, units, (len(units),)).hit[len(units)] == 1.0


def test_only_dev_sets_pool() -> None:
    with pytest.raises(DatasetError, match="only the dev sets can be pooled"):
        load_dataset("pooled:longbench:x.jsonl")
    with pytest.raises(DatasetError, match="unknown dataset 'nothing'"):
        load_dataset("pooled:nothing")
