"""``long:NAME``: the dev sets padded to LongBench's context length (chainrag.data.long)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainrag.core.types import GoldStep, Passage, QAExample
from chainrag.data import long
from chainrag.data.datasets import (
    DatasetError,
    dataset_path,
    dataset_setting,
    dataset_slug,
    load_dataset,
)
from chainrag.run.files import RunError
from chainrag.run.folder import RunDir
from tests.conftest import DATA_ROOT
from tests.test_runs import fake_llm_recipe, naive_recipe

DATA = DATA_ROOT


def example(qid: str, paragraphs: list[tuple[str, str]], gold: tuple[int, ...] = ()) -> QAExample:
    passages = tuple(Passage(str(i), t, x) for i, (t, x) in enumerate(paragraphs))
    steps = tuple(GoldStep(f"step {i}", "a", i) for i in gold)
    return QAExample(qid, "musique", f"q {qid}?", passages, ("a",), (), gold, steps)


def same_paragraph(a: Passage, b: Passage) -> bool:
    return (a.title, a.text) == (b.title, b.text)


paragraphs = st.lists(
    st.tuples(st.sampled_from("ABCDEFGH"), st.sampled_from(["one two", "three", "four five six"])),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(paragraphs, min_size=1, max_size=5), st.integers(0, 40), st.data())
def test_padding_keeps_own_and_gold_adds_only_new_paragraphs(
    contexts: list[list[tuple[str, str]]], target: int, data: st.DataObject
) -> None:
    examples = []
    for i, ctx in enumerate(contexts):
        gold = tuple(sorted(data.draw(st.sets(st.integers(0, len(ctx) - 1), max_size=2))))
        examples.append(example(str(i), ctx, gold))
    padded = long.pad(examples, target, examples)
    for before, after in zip(examples, padded, strict=True):
        own = [(p.title, p.text) for p in before.passages]
        now = [(p.title, p.text) for p in after.passages]
        assert sorted(k for k in now if k in set(own)) == sorted(own)
        added = [p for p in after.passages if (p.title, p.text) not in own]
        assert len(added) == len(now) - len(own)
        titles, texts = {t for t, _ in own}, {x for _, x in own}
        for p in added:  # never a paragraph the question has by title or by text, never twice
            assert p.title not in titles and p.text not in texts
            titles.add(p.title)
            texts.add(p.text)
        assert [p.pid for p in after.passages] == [str(i) for i in range(len(now))]
        for old, new in zip(before.supporting_passages, after.supporting_passages, strict=True):
            assert same_paragraph(before.passages[old], after.passages[new])
        for old, new in zip(before.decomposition, after.decomposition, strict=True):
            assert old.paragraph is not None and new.paragraph is not None
            assert same_paragraph(before.passages[old.paragraph], after.passages[new.paragraph])
        total = sum(long.words(p) for p in after.passages)
        if total < target:  # short only when nothing more could be added
            pool = {(p.title, p.text) for e in examples for p in e.passages}
            assert all(t in titles or x in texts for t, x in pool)


def test_padding_stops_at_the_first_paragraph_reaching_the_target() -> None:
    pool = [example(str(i), [(f"T{i}", f"w{i} " * 10)]) for i in range(10)]
    (padded,) = long.pad(pool[:1], 35, pool)
    assert sum(long.words(p) for p in padded.passages) == 44  # 4 paragraphs of 11 words


def test_padding_is_reproducible_and_does_not_depend_on_the_questions_asked() -> None:
    pool = [example(str(i), [(f"T{i}", f"text {i} " * 5), (f"U{i}", "u")]) for i in range(30)]
    once = long.pad(pool[:5], 60, pool)
    assert once == long.pad(pool[:5], 60, pool)
    assert once[:2] == long.pad(pool[:2], 60, pool)  # --limit does not change a context
    assert long.pad(pool[3:4], 60, pool)[0] == once[3]
    orders = {tuple(p.title for p in e.passages[:2]) for e in once}
    assert len(orders) > 1  # own paragraphs are not always first: the context is shuffled


@pytest.mark.parametrize("name", ["musique", "hotpotqa", "2wiki"])
def test_real_dev_sets_reach_longbench_length(name: str) -> None:
    short = load_dataset(name, 4)
    padded = load_dataset(f"long:{name}", 4)
    target = long.LONGBENCH_WORDS[name]
    for before, after in zip(short, padded, strict=True):
        assert after.dataset == f"long:{name}" and after.qid == before.qid
        assert sum(long.words(p) for p in after.passages) >= target
        assert {(p.title, p.text) for p in before.passages} <= {
            (p.title, p.text) for p in after.passages
        }
        assert before.supporting_sentences == after.supporting_sentences  # named by title
    assert dataset_slug(f"long:{name}") == f"long-{name}"
    assert dataset_path(f"long:{name}", DATA) == dataset_path(name, DATA)
    assert "LongBench" in (dataset_setting(f"long:{name}") or "")
    assert dataset_setting(name) is None


def test_only_dev_sets_can_be_padded() -> None:
    with pytest.raises(DatasetError, match=r"only the dev sets \(musique, hotpotqa, 2wiki\) or a"):
        load_dataset("long:musique_train", 1)
    with pytest.raises(DatasetError, match="only the dev sets can be pooled"):
        load_dataset("pooled:long:musique", 1)


def test_a_run_records_the_setting_and_refuses_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, recipe = naive_recipe(tmp_path)
    file, _ = dataset_path("musique", DATA)
    run = RunDir(tmp_path / "long-musique" / "naive")
    run.folder.mkdir(parents=True)
    meta = run.start(recipe, path, "long:musique", file)
    assert meta.dataset_setting == dataset_setting("long:musique")
    assert RunDir(run.folder).meta().dataset_setting == meta.dataset_setting
    monkeypatch.setattr(long, "VERSION", long.VERSION + 1)
    with pytest.raises(RunError, match=r"made as .long v1: .*this version makes it as .long v2"):
        RunDir(run.folder).start(recipe, path, "long:musique", file)
    plain = RunDir(tmp_path / "musique" / "naive")
    plain.folder.mkdir(parents=True)
    assert plain.start(recipe, path, "musique", file).dataset_setting is None
    assert "dataset_setting" not in (plain.folder / "run.json").read_text()
    assert attrs.fields_dict(type(meta))["dataset_setting"].default is None


def test_a_slice_holds_the_full_datasets_questions_and_contexts() -> None:
    """``long:2wiki[30:40]`` is a held-out slice: the questions 31–40 of ``long:2wiki``, each
    with the context it has there (the padding follows the question, not its place)."""
    whole = load_dataset("long:2wiki", 40, DATA)
    part = load_dataset("long:2wiki[30:40]", None, DATA)
    assert [q.qid for q in part] == [q.qid for q in whole[30:40]]
    assert [q.passages for q in part] == [q.passages for q in whole[30:40]]
    assert {q.dataset for q in part} == {"long:2wiki[30:40]"}
    assert [q.qid for q in load_dataset("musique[2:]", 3, DATA)] == [
        q.qid for q in load_dataset("musique", 5, DATA)[2:5]
    ]
    assert dataset_path("long:2wiki[30:40]", DATA) == dataset_path("2wiki", DATA)
    assert dataset_setting("long:2wiki[30:40]") == dataset_setting("long:2wiki")


@pytest.mark.parametrize(
    ("name", "slug"),
    [("long:2wiki[30:60]", "long-2wiki-30-60"), ("musique[:10]", "musique-0-10"),
     ("pooled:hotpotqa[5:]", "pooled-hotpotqa-5-end")],
)  # fmt: skip
def test_a_slice_has_its_own_run_folder(name: str, slug: str) -> None:
    assert dataset_slug(name) == slug


@pytest.mark.parametrize(
    ("name", "message"),
    [("musique[60:30]", r"the slice \[60:30\] holds no question"),
     ("musique[a:b]", r"a slice of questions is \[START:STOP\] with whole numbers"),
     ("musique[5000:]", r"the slice holds no question \(musique has fewer\)")],
)  # fmt: skip
def test_a_slice_without_questions_is_refused_by_name(name: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message) as caught:
        load_dataset(name, None, DATA)
    assert name in str(caught.value)


# ------------------------------------------------ a question file at LongBench length (issue 49)


def _copy(name: str, path: Path, count: int | None = None) -> Path:
    """The first ``count`` records of the dev file ``name`` as a file of one's own."""
    source, _ = dataset_path(name, DATA)
    lines = source.read_text(encoding="utf-8").splitlines()[:count]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["musique", "hotpotqa", "2wiki"])
def test_a_copy_of_a_dev_file_is_padded_as_the_dev_set_is(tmp_path: Path, name: str) -> None:
    """``long:NAME:PATH`` pads the file at PATH exactly as ``long:NAME`` pads NAME's dev file:
    the same questions give the same contexts, gold indexes included."""
    path = _copy(name, tmp_path / "mine.jsonl")
    padded = load_dataset(f"long:{name}:{path}", 5, DATA)
    assert [(e.qid, e.passages, e.supporting_passages, e.decomposition) for e in padded] == [
        (e.qid, e.passages, e.supporting_passages, e.decomposition)
        for e in load_dataset(f"long:{name}", 5, DATA)
    ]
    assert {e.dataset for e in padded} == {f"long:{name}:{path}"}
    if name == "musique":  # MuSiQue's format says its length: long:PATH is the same
        assert [e.passages for e in load_dataset(f"long:{path}", 5)] == [e.passages for e in padded]


def test_a_small_file_pads_from_its_own_questions_to_the_named_length(tmp_path: Path) -> None:
    path = _copy("2wiki", tmp_path / "held.jsonl", 12)
    said: list[str] = []
    padded = load_dataset(f"long:2wiki:{path}[4:8]", None, say=said.append)
    own = load_dataset(str(path), 12)
    assert said == [f"{path}: HotpotQA/2Wiki format, detected from its 12 records"]
    assert [e.qid for e in padded] == [e.qid for e in own[4:8]]
    pool = {(p.title, p.text) for e in own for p in e.passages}
    for before, after in zip(own[4:8], padded, strict=True):
        assert sum(long.words(p) for p in after.passages) >= long.LONGBENCH_WORDS["2wiki"]
        assert {(p.title, p.text) for p in after.passages} <= pool  # nothing from elsewhere
        assert before.supporting_sentences == after.supporting_sentences
    assert dataset_slug(f"long:2wiki:{path}[4:8]") == "long-2wiki-held-4-8"
    assert dataset_slug(f"long:{path}") == "long-held"
    assert dataset_path(f"long:hotpotqa:{path}") == (path, "detect")
    setting = dataset_setting(f"long:2wiki:{path}") or ""
    assert "the same file's other questions' paragraphs to >= 4,887 words" in setting
    assert "LongBench's 2wiki mean" in setting and setting.endswith("read as HotpotQA/2Wiki")
    assert setting != dataset_setting(f"long:hotpotqa:{path}")


def test_a_file_too_small_to_pad_says_so(tmp_path: Path) -> None:
    path = _copy("musique", tmp_path / "few.jsonl", 3)
    said: list[str] = []
    padded = load_dataset(f"long:{path}", None, say=said.append)
    assert all(sum(long.words(p) for p in e.passages) < 11_214 for e in padded)
    assert said[-1] == (
        f"long:{path}: 3 of 3 questions stay under 11,214 words: the file's other questions "
        "have too few paragraphs to pad them further"
    )
    said.clear()
    load_dataset("long:musique", 3, DATA, say=said.append)
    assert said == []


def test_a_file_that_cannot_be_padded_is_refused_with_what_to_write(tmp_path: Path) -> None:
    hotpot = _copy("hotpotqa", tmp_path / "hp.jsonl", 3)
    with pytest.raises(DatasetError) as caught:
        load_dataset(f"long:{hotpot}", 1)
    assert str(caught.value) == (
        f"{hotpot}: HotpotQA/2Wiki format does not say which LongBench length to pad to; name "
        f"it: long:musique:{hotpot} (11,214 words), long:hotpotqa:{hotpot} (9,151 words), "
        f"long:2wiki:{hotpot} (4,887 words)"
    )
    lb = tmp_path / "lb.jsonl"
    lb.write_text(json.dumps({"input": "Who?", "answers": ["A"], "context": "Passage 1:\nA\n"}))
    with pytest.raises(DatasetError, match=r"LongBench format: its questions are LongBench's"):
        load_dataset(f"long:musique:{lb}", 1)
    flash = tmp_path / "flash.jsonl"
    flash.write_text(json.dumps({"question": "Who?", "golden_answers": ["A"]}))
    with pytest.raises(DatasetError, match=r"FlashRAG format: its questions have no passages"):
        load_dataset(f"long:2wiki:{flash}", 1)
    with pytest.raises(DatasetError, match=r"'long:2wiki:' names no question file"):
        load_dataset("long:2wiki:", 1)


def test_a_run_on_a_padded_file_records_its_setting(tmp_path: Path) -> None:
    from chainrag.standin.server import FakeOpenAI, serve

    (tmp_path / "data").mkdir()
    data = _copy("2wiki", tmp_path / "data" / "held.jsonl", 4)
    fake = FakeOpenAI([], reply="Paris")
    cli = [sys.executable, "-c", "from chainrag.cli.main import app; app()"]
    env = os.environ | {"CHAINRAG_CACHE": str(tmp_path / "cache")}
    with serve(fake) as api_base:
        done = subprocess.run(
            [*cli, "run", str(fake_llm_recipe(tmp_path, api_base)), "--out-dir",
             str(tmp_path / "runs"), "--no-report", "--dataset", f"long:2wiki:{data}",
             "--limit", "2"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "runs" / "long-2wiki-held" / "naive" / "run.json").read_text())
    assert meta["dataset"] == f"long:2wiki:{data}" and meta["dataset_file"] == str(data)
    assert meta["dataset_setting"] == dataset_setting(f"long:2wiki:{data}")
    assert len(fake.bodies) == 2
