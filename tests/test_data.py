from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chainrag.data.datasets import DatasetError, load_context_file, load_corpus, load_dataset

from .conftest import DATA_ROOT


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
    with pytest.raises(DatasetError) as caught:
        load_dataset("musique", root=tmp_path)
    assert str(caught.value).splitlines() == [
        f"{tmp_path / 'musique_dev.jsonl'}: 2 records not in the MuSiQue format (4 problems):",
        "  - line 1, field 'question': missing (expected a non-empty string)",
        "  - line 1, field 'answer': missing (expected a non-empty string)",
        "  - line 1, field 'paragraphs': missing (expected a non-empty list of paragraphs)",
        "  - line 3: invalid JSON: Expecting property name enclosed in double quotes at column 2",
    ]
    good = (DATA_ROOT / "musique_dev.jsonl").read_text().splitlines()[0]
    (tmp_path / "musique_dev.jsonl").write_text(good + "\n\n{not json}\n")
    with pytest.raises(DatasetError, match=r"musique_dev\.jsonl: 1 record .*\n  - line 3: invalid"):
        load_dataset("musique", root=tmp_path)


def test_missing_and_unknown(tmp_path: Path) -> None:
    with pytest.raises(
        DatasetError, match=r"unknown dataset 'nq'; known: musique, hotpotqa, 2wiki"
    ):
        load_dataset("nq")
    with pytest.raises(DatasetError, match=r"no such file \(set \$CHAINRAG_DATA"):
        load_dataset("hotpotqa", root=tmp_path)
    (tmp_path / "c.json").write_text('[{"title": "x"}]')
    with pytest.raises(
        DatasetError,
        match=r"c\.json: 1 record .*\n  - record 1, field 'text': missing \(expected a non-empty",
    ):
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
        ({"context": "x", "answers": ["a"]}, ", field 'input': missing (expected a non-empty"),
        ({"input": "q", "context": 3, "answers": ["a"]}, ", field 'context': expected a non-empty"),
        ({"input": "q", "context": "x", "answers": "a"}, ", field 'answers': expected a non-empty"),
        ({"input": "q", "context": "x", "answers": []}, ", field 'answers': expected a non-empty"),
        (["not", "an", "object"], ": expected a JSON object, got a list"),
    ],
)
def test_malformed_longbench_names_file_and_line(
    tmp_path: Path, record: object, problem: str
) -> None:
    good = {"input": "q", "context": "x", "answers": ["a"]}
    path = _jsonl(tmp_path / "lb.jsonl", [good, record])
    expected = r"lb\.jsonl: 1 record not in the LongBench format .*\n  - line 2"
    with pytest.raises(DatasetError, match=expected + re.escape(problem)):
        load_dataset(f"longbench:{path}")


def test_longbench_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nope\.jsonl: no such file"):
        load_dataset(f"longbench:{tmp_path / 'nope.jsonl'}")


@pytest.mark.parametrize("name", ["musique", "hotpotqa", "2wiki"])
def test_pooled_setting_shares_one_context_and_keeps_the_gold(name: str) -> None:
    from chainrag.core.types import Chunk
    from chainrag.data.metrics import gold_items, retrieval_scores

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


# ------------------------------------------------ issue 19, items 3-4: every record is checked


def _first_record(file: str) -> dict[str, Any]:
    """The first record of a real file, or the LongBench record above for ``lb.jsonl``."""
    if file == "lb.jsonl":
        return {"input": "Who played the Skipper?", "context": LONGBENCH_CONTEXT,
                "answers": ["Alan Hale Jr."], "_id": "lb1"}  # fmt: skip
    text = (DATA_ROOT / file).read_text()
    first = json.loads(text.splitlines()[0]) if file.endswith(".jsonl") else json.loads(text)[0]
    return dict(first)


def _changed(record: Any, where: tuple[str | int, ...], value: Any) -> Any:
    """A deep copy of ``record`` with the value at ``where`` replaced."""
    copy = json.loads(json.dumps(record))
    target = copy
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    return copy


def _write(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        return _jsonl(path, records)
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


MUSIQUE, HOTPOT, TRAIN = "musique_dev.jsonl", "hotpotqa_dev.jsonl", "hipporag/musique_train.json"


@pytest.mark.parametrize(
    ("file", "where", "value", "problem"),
    [
        (MUSIQUE, ("question",), 42, "'question': expected a non-empty string, got 42"),
        (MUSIQUE, ("answer",), None, "'answer': expected a non-empty string, got null"),
        (
            MUSIQUE,
            ("paragraphs",),
            [],
            "'paragraphs': expected a non-empty list of paragraphs, got an empty list",
        ),
        (
            MUSIQUE,
            ("paragraphs", 3, "paragraph_text"),
            None,
            "'paragraphs[3].paragraph_text': expected a non-empty string, got null",
        ),
        (
            MUSIQUE,
            ("answer_aliases",),
            "Richland",
            "'answer_aliases': expected a list of strings, got 'Richland'",
        ),
        (
            MUSIQUE,
            ("paragraphs", 0, "is_supporting"),
            "no",
            "'paragraphs[0].is_supporting': expected true or false, got 'no'",
        ),
        (
            MUSIQUE,
            ("paragraphs", 2, "title"),
            ["Richland"],
            "'paragraphs[2].title': expected a string, got a list",
        ),
        (
            MUSIQUE,
            ("question_decomposition", 1, "answer"),
            7,
            "'question_decomposition[1].answer': expected a non-empty string, got 7",
        ),
        (
            HOTPOT,
            ("context", 2, 1),
            "One sentence. Another one.",
            "'context[2][1]': expected a list of sentences (strings, not all empty), "
            "got 'One sentence. Another one.'",
        ),
        (
            HOTPOT,
            ("context", 0, 0),
            ["Arthur", "Magazine"],
            "'context[0][0]': expected a string, got a list",
        ),
        (
            HOTPOT,
            ("context", 4),
            ["title only"],
            "'context[4]': expected [title, [sentences]], got a list",
        ),
        (
            HOTPOT,
            ("supporting_facts", 0, 1),
            "1",
            "'supporting_facts[0][1]': expected an integer >= 0, got '1'",
        ),
        (
            HOTPOT,
            ("supporting_facts", 1, 1),
            True,
            "'supporting_facts[1][1]': expected an integer >= 0, got true",
        ),
        (HOTPOT, ("_id",), "", "'_id': expected a non-empty string or an integer, got ''"),
        (
            "2wikimultihopqa_dev.jsonl",
            ("answer",),
            ["a"],
            "'answer': expected a non-empty string, got a list",
        ),
        (
            "lb.jsonl",
            ("context",),
            "",
            "'context': expected a non-empty string (no empty \"Passage N:\" block), got ''",
        ),
        ("lb.jsonl", ("context",), "Passage 1:\n", "'context': expected a non-empty string"),
        ("lb.jsonl", ("answers", 0), None, "'answers[0]': expected a non-empty string, got null"),
        (TRAIN, ("question",), " ", "'question': expected a non-empty string, got ' '"),
    ],
)
def test_a_bad_record_is_an_error_naming_file_line_and_field(
    tmp_path: Path, file: str, where: tuple[str | int, ...], value: Any, problem: str
) -> None:
    """Each was accepted or crashed a run: ``answer_aliases: "Richland"`` became the aliases
    R, i, c, h, …; ``is_supporting: "no"`` counted as gold; a sentence string became one
    sentence per character; ``question: 42`` raised inside the run."""
    good = _first_record(file)
    path = _write(tmp_path / file, [good, _changed(good, where, value)])
    name = {MUSIQUE: "musique", HOTPOT: "hotpotqa", TRAIN: "musique_train"}.get(file, "2wiki")
    name = f"longbench:{path}" if file == "lb.jsonl" else name
    place = "record 2" if file.endswith(".json") else "line 2"
    expected = rf"{re.escape(file)}: 1 record not in the .+ format \(1 problem\):\n  - {place}, "
    with pytest.raises(DatasetError, match=expected + "field " + re.escape(problem)):
        load_dataset(name, root=tmp_path)


def test_every_bad_record_is_reported_before_any_question_is_built(tmp_path: Path) -> None:
    good = _first_record(MUSIQUE)
    lines = [json.dumps(r) for r in (good, good | {"answer": None}, good)]
    lines += ['{"id": ', json.dumps(good | {"question": 42, "answer_aliases": "x"}), "[1, 2]"]
    path = tmp_path / MUSIQUE
    path.write_bytes("\n".join(lines).encode() + b'\n"caf\xe9"\n')
    with pytest.raises(DatasetError) as caught:
        load_dataset("musique", limit=1, root=tmp_path)  # the limit does not skip the check
    message = str(caught.value)
    assert message.startswith(f"{path}: 5 records not in the MuSiQue format (6 problems):\n")
    assert message.splitlines()[1:] == [
        "  - line 2, field 'answer': expected a non-empty string, got null",
        "  - line 4: invalid JSON: Expecting value at column 8",
        "  - line 5, field 'question': expected a non-empty string, got 42",
        "  - line 5, field 'answer_aliases': expected a list of strings, got 'x'",
        "  - line 6: expected a JSON object, got a list",
        "  - line 7: not UTF-8 (byte 0xe9) at column 5",
    ]
    assert [p.place for p in caught.value.problems] == [f"line {n}" for n in (2, 4, 5, 5, 6, 7)]


def test_a_long_listing_is_cut_after_twenty_problems(tmp_path: Path) -> None:
    bad = _first_record(MUSIQUE) | {"question": None}
    _jsonl(tmp_path / MUSIQUE, [bad] * 30)
    with pytest.raises(DatasetError) as caught:
        load_dataset("musique", root=tmp_path)
    lines = str(caught.value).splitlines()
    assert lines[0].endswith("30 records not in the MuSiQue format (30 problems):")
    assert len(lines) == 22 and lines[20].startswith("  - line 20, field 'question'")
    assert lines[21] == "  - ... and 10 more problems" and len(caught.value.problems) == 30


@pytest.mark.parametrize(
    ("file", "content", "expected"),
    [
        (MUSIQUE, b"", r"musique_dev\.jsonl: no records \(an empty MuSiQue file\)"),
        (MUSIQUE, b"\n \n\n", r"musique_dev\.jsonl: no records"),
        (TRAIN, b"[]", r"musique_train\.json: no records"),
        (TRAIN, b'{"id": "x"}', r"musique_train\.json: expected a JSON array of questions, got an"),
        (TRAIN, b'[\n{"question":\n "caf\xe9"}]', r"musique_train\.json, line 3: not UTF-8 \(b"),
        (TRAIN, b"[\n1,\n}", r"musique_train\.json, line 3: invalid JSON: Expecting value"),
        (TRAIN, b"[" * 100_000, r"musique_train\.json: invalid JSON: nested too deeply"),
        (MUSIQUE, b"9" * 5000, r"line 1: invalid JSON: Exceeds the limit \(4300 digits\)"),
        (MUSIQUE, b"\xef\xbb\xbf" + b'"a BOM is fine"', r"line 1: expected a JSON object, got 'a"),
    ],
)
def test_empty_and_unreadable_files_are_errors(
    tmp_path: Path, file: str, content: bytes, expected: str
) -> None:
    """An empty file ran "0 answered" and exited 0; the others were tracebacks."""
    (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / file).write_bytes(content)
    name = "musique" if file == MUSIQUE else "musique_train"
    with pytest.raises(DatasetError, match=expected):
        load_dataset(name, root=tmp_path)


def test_corpus_records_are_checked(tmp_path: Path) -> None:
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"A": ["One.", "Two."], "B": "One. Two.", "C": [], "D": [""]}))
    with pytest.raises(DatasetError) as caught:
        load_corpus(str(mapping))
    assert str(caught.value).splitlines()[1:] == [
        f"  - title {t!r}: expected a list of sentences (strings, not all empty), got {got}"
        for t, got in (("B", "'One. Two.'"), ("C", "an empty list"), ("D", "a list"))
    ]
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps([{"title": ["T"], "text": "x"}, {"title": "T", "text": ""}]))
    with pytest.raises(DatasetError, match=r"record 1, field 'title': expected a string, got a"):
        load_corpus(str(listing))
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(DatasetError, match=r"empty\.json: no records"):
        load_corpus(str(tmp_path / "empty.json"))


def test_context_file_records_are_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"title": "T", "text": "Text."}, ["U", ["One.", "Two."]]]))
    assert [(p.title, p.text) for p in load_context_file(good)] == [
        ("T", "Text."),
        ("U", "One. Two."),
    ]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"title": ["T"], "text": "x"}, ["U", "One."], 3, {"text": None}]))
    with pytest.raises(DatasetError) as caught:
        load_context_file(bad)
    assert str(caught.value).splitlines()[1:] == [
        "  - record 1, field 'title': expected a string, got a list",
        "  - record 2, field '[1]': expected a list of sentences (strings, not all empty), "
        "got 'One.'",
        "  - record 3: expected {title, text} or [title, [sentences]], got 3",
        "  - record 4, field 'text': expected a non-empty string, got null",
    ]
    (tmp_path / "text.txt").write_bytes(b"First paragraph.\n\nCaf\xe9.\n")
    with pytest.raises(DatasetError, match=r"text\.txt, line 3: not UTF-8 \(byte 0xe9\)"):
        load_context_file(tmp_path / "text.txt")
    (tmp_path / "empty.json").write_text("[]")
    with pytest.raises(DatasetError, match=r"empty\.json: no records"):
        load_context_file(tmp_path / "empty.json")


def test_real_data_quirks_are_accepted() -> None:
    """What the checks must let through: an empty sentence string among others (HotpotQA dev
    line 67, "Rockland, Maine"), empty ``answer_aliases`` (64 of 100 MuSiQue dev records),
    ``answer_id: null`` (2Wiki, a field chainrag does not read)."""
    rockland = load_dataset("hotpotqa")[66].passages[2]
    assert rockland.title == "Rockland, Maine" and len(rockland.sentence_spans) == 6
    assert sum(len(q.answers) == 1 for q in load_dataset("musique")) == 64
    assert load_dataset("2wiki", 3)[2].answers


def test_a_bad_dataset_stops_a_run_before_any_question(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chainrag.cli.main import app

    from .conftest import ROOT

    recipe = tmp_path / "naive.yaml"
    recipe.write_text(f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\n"
                      "index: {embedder: {kind: hashed_bow, dim: 64}}\n")  # fmt: skip
    good = _first_record("lb.jsonl")
    bad = _jsonl(tmp_path / "bad.jsonl", [good, good | {"answers": "Alan Hale Jr."}])
    empty = _jsonl(tmp_path / "empty.jsonl", [])
    out = ["--out", str(tmp_path / "runs")]
    for path, problem in ((bad, "line 2, field 'answers'"), (empty, "no records")):
        result = CliRunner().invoke(
            app, ["run", str(recipe), "--dataset", f"longbench:{path}", *out]
        )
        assert result.exit_code == 1 and problem in result.output, result.output
    assert not (tmp_path / "runs").exists()


def test_a_title_pooled_with_two_texts_names_the_file(tmp_path: Path) -> None:
    """Found by the fuzz test: this error named the dataset and question, not the file."""
    good = _first_record(HOTPOT)
    other = _changed(good, ("context", 0, 1, 0), "Another first sentence.") | {"_id": "b"}
    path = _write(tmp_path / HOTPOT, [good, other])
    with pytest.raises(
        DatasetError,
        match=rf"{re.escape(str(path))}: pooled:hotpotqa, question b: title 'Francis Mankiewicz' "
        "comes with two different texts",
    ):
        load_dataset("pooled:hotpotqa", root=tmp_path)


def test_the_named_data_ships_with_chainrag(monkeypatch: pytest.MonkeyPatch) -> None:
    """Named datasets resolve to the bundled files unless $CHAINRAG_DATA says otherwise."""
    from chainrag.core.paths import BUNDLED_DATA, data_root

    monkeypatch.delenv("CHAINRAG_DATA", raising=False)
    assert data_root() == BUNDLED_DATA and (BUNDLED_DATA / "musique_dev.jsonl").is_file()
    assert BUNDLED_DATA == DATA_ROOT
    monkeypatch.setenv("CHAINRAG_DATA", "/elsewhere")
    assert data_root() == Path("/elsewhere")


def test_every_name_has_its_count_source_and_licence() -> None:
    from chainrag.data.catalogue import ABOUT, catalogue, licence_text

    entries = {(e.name, e.kind): e for e in catalogue()}
    assert entries["musique", "questions"].count == 100
    assert entries["2wiki", "questions"].count == 82
    assert entries["2wiki_hipporag_corpus", "corpus"].count == 6119
    assert {name for name, _ in entries} == set(ABOUT)
    assert len({name for name, _ in entries}) == len(entries)  # no name is two things
    assert licence_text("musique").startswith("Attribution 4.0 International")
    assert "MIT" in licence_text("musique_train_corpus") or "Permission" in licence_text(
        "musique_train_corpus"
    )
    assert "CC BY-SA 4.0, https://creativecommons.org" in licence_text("hotpotqa")
    with pytest.raises(DatasetError, match="no named dataset or corpus 'nq'"):
        licence_text("nq")


def test_a_corpus_no_longer_shares_a_question_sets_name_old_names_warn() -> None:
    new = load_corpus("2wiki_hipporag_corpus")
    with pytest.warns(FutureWarning, match="'2wiki' is now named '2wiki_hipporag_corpus'"):
        old = load_corpus("2wiki")
    assert old == new and len(new) == 6119
    from chainrag.data.datasets import shared_corpus

    assert shared_corpus("musique_train") == "musique_train_corpus"
