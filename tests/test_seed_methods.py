"""Seed 002's guided and tree retrieval and seed 004's four modules, with a scripted LLM on a
real MuSiQue question (the hashed embedder keeps them fast; retrieval quality is not the
point here, the flows are)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrag.components.index.chunkers import WholePassages
from chainrag.components.knowledge.knowledge import LLMNLIFilter, QueryRewriterPlus, nli_label
from chainrag.core.context import Context
from chainrag.core.types import (
    KnowledgeItem,
    LLMRequest,
    Passage,
    QAExample,
    StepTrace,
)
from chainrag.data.datasets import load_dataset
from chainrag.index.reservoir import Reservoir
from chainrag.llm.fake import ScriptedLLM
from chainrag.methods.seeds import last_yes_no
from chainrag.recipes.recipe import Recipe, load_recipe
from chainrag.run.question import answer_question
from chainrag.run.record import read_legacy_step

from .conftest import ROOT


def seed_recipe(tmp_path: Path, name: str, extra: str = "") -> Recipe:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"base: {ROOT / 'recipes' / 'seeds' / f'{name}.yaml'}\n"
        "index: {embedder: {kind: hashed_bow, dim: 256}}\n" + extra
    )
    return load_recipe(path)


@pytest.fixture(scope="module")
def example() -> QAExample:
    return load_dataset("musique", 1)[0]


def prompts(llm: ScriptedLLM) -> list[str]:
    return [r.prompt_id for r in llm.requests]


def test_whole_passages_keep_titles_and_offsets() -> None:
    chunks = WholePassages()((Passage("a", "Paris", "Capital of France."), Passage("b", "", "x")))
    assert [c.text for c in chunks] == ["Paris: Capital of France.", "x"]
    assert [(c.passage, c.start, c.end) for c in chunks] == [(0, 0, 18), (1, 0, 1)]
    assert WholePassages(with_title=False)((Passage("a", "P", "t"),))[0].text == "t"


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("Yes", True), ("no.", False), ("The passages say so. Yes", True),
     ("Yes, they mention it, but no", False), ("Verdict: NO", False), ("unclear", None),
     ("Nobody knows; yesterday", None)],
)  # fmt: skip
def test_support_verdict_is_the_last_yes_or_no(reply: str, verdict: bool | None) -> None:
    assert last_yes_no(reply) is verdict


@given(st.text())
def test_last_yes_no_never_fails(text: str) -> None:
    assert last_yes_no(text) in (True, False, None)


def test_naive_iteration_answers_from_two_plus_two(tmp_path: Path, example: QAExample) -> None:
    recipe = seed_recipe(tmp_path, "naive_iteration")
    llm = ScriptedLLM({"follow_up": ["Who founded Pacific Electric?"], "cxtint": ["Henry"]})
    prediction = answer_question(recipe, example, llm)
    assert prompts(llm) == ["follow_up", "cxtint"]
    first, second = prediction.steps
    assert len(first.retrieved) == 2 and len(second.retrieved) == 2
    assert not set(first.retrieved) & set(second.retrieved)
    assert second.question == "Who founded Pacific Electric?"
    follow_up_prompt = llm.requests[0].messages[-1].content
    assert example.question in follow_up_prompt
    assert prediction.answer == "Henry" and prediction.usage.calls == 2


def test_guided_iteration_keeps_a_supported_answer(tmp_path: Path, example: QAExample) -> None:
    recipe = seed_recipe(tmp_path, "guided_iteration")
    llm = ScriptedLLM({"cxtint": ["Henry"], "supports": ["Yes."]})
    prediction = answer_question(recipe, example, llm)
    assert prompts(llm) == ["cxtint", "supports"]
    (step,) = prediction.steps
    assert len(step.retrieved) == 4 and prediction.answer == "Henry"
    check = llm.requests[1].messages[-1].content  # the top 2 passages only, as the seed's code
    assert "[2]" in check and "[3]" not in check and "Proposed answer: Henry" in check


def test_guided_iteration_without_a_verdict(tmp_path: Path, example: QAExample) -> None:
    """A reply with neither yes nor no keeps the answer (the authors' code did), unless the
    recipe says to iterate."""
    unsure = "The passages mention Henry Huntington."
    recipe = seed_recipe(tmp_path, "guided_iteration")
    llm = ScriptedLLM({"cxtint": ["Henry"], "supports": [unsure]})
    assert answer_question(recipe, example, llm).answer == "Henry"
    assert prompts(llm) == ["cxtint", "supports"]
    method = attrs.evolve(recipe.method, unreadable="iterate")
    llm = ScriptedLLM({"cxtint": ["Henry", "Edith"], "supports": [unsure], "follow_up": ["q"]})
    assert answer_question(attrs.evolve(recipe, method=method), example, llm).answer == "Edith"


def test_guided_iteration_iterates_when_unsupported(tmp_path: Path, example: QAExample) -> None:
    recipe = seed_recipe(tmp_path, "guided_iteration")
    llm = ScriptedLLM({
        "cxtint": ["Henry", "Edith"],
        "supports": ["Yes, Henry is named, but no passage says he founded it. No"],
        "follow_up": ["Who founded it?"],
    })  # fmt: skip
    prediction = answer_question(recipe, example, llm)
    assert prompts(llm) == ["cxtint", "supports", "follow_up", "cxtint"]
    first, second = prediction.steps
    assert first.answer is not None and not first.answer.answered
    assert first.answer.answer == "Henry" and prediction.answer == "Edith"
    assert len(first.retrieved) == 2 and len(second.retrieved) == 2


def test_tree_grows_three_branches(tmp_path: Path, example: QAExample) -> None:
    recipe = seed_recipe(tmp_path, "tree")
    llm = ScriptedLLM({"follow_up": ["q1", "q2", "q3"], "cxtint": ["Henry"]})
    prediction = answer_question(recipe, example, llm)
    assert prompts(llm) == ["follow_up"] * 3 + ["cxtint"]
    assert [s.question for s in prediction.steps] == ["q1", "q2", "q3"]
    assert all(len(s.retrieved) == 3 and len(set(s.retrieved)) == 3 for s in prediction.steps)
    roots = [s.retrieved[0] for s in prediction.steps]
    assert len(set(roots)) == 3
    context = llm.requests[-1].messages[-1].content
    assert context.count("[1]") == 1  # one numbered context, de-duplicated


def test_query_rewriter_plus_and_its_fallback() -> None:
    reply = '{"Rewritten Question": ["Q1?"], "Query": ["a", "b", "a"]}'
    good = ScriptedLLM({"query_plan": [reply]})
    plan = QueryRewriterPlus(max_queries=3)("Q?", Context(llm=good))
    assert plan.questions == ("Q1?",) and plan.queries == ("Q?", "a", "b")
    bad = ScriptedLLM({"query_plan": ["no json"], "query_plan/repair": ['{"Query": 3}']})
    fallback = QueryRewriterPlus()("Q?", Context(llm=bad))
    assert fallback.questions == ("Q?",) and fallback.queries == ("Q?",)


@pytest.mark.parametrize(
    ("reply", "label"),
    [("entailment", "entailment"), ("Label: Entails.", "entailment"), ("neural", "neutral"),
     ("CONTRADICTION", "contradiction"), ("I am not sure", "unreadable")],
)  # fmt: skip
def test_nli_labels(reply: str, label: str) -> None:
    assert nli_label(reply) == label


def test_llm_nli_keeps_only_entailment() -> None:
    llm = ScriptedLLM({"nli": ["entailment", "neutral", "contradiction", "???"]})
    items = tuple(KnowledgeItem(f"fact {i}") for i in range(4))
    assert LLMNLIFilter()("q", items, Context(llm=llm)) == (items[0],)


def test_llm_helps_keeps_only_yes_and_asks_once_per_item() -> None:
    from chainrag.components.knowledge.knowledge import LLMHelpsFilter

    llm = ScriptedLLM({"helps": ["Yes.", "no", "It does not, no.", "maybe", "yes, it helps"]})
    items = tuple(KnowledgeItem(f"fact {i}") for i in range(5))
    assert LLMHelpsFilter()("q", items, Context(llm=llm)) == (items[0], items[4])
    assert [r.prompt_id for r in llm.requests] == ["helps"] * 5
    assert all(f"Knowledge: fact {i}" in r.messages[-1].content for i, r in enumerate(llm.requests))


def four_module_llm(keep: str) -> ScriptedLLM:
    """Rewrites to two title-like queries; the NLI judge keeps items that mention ``keep``."""

    def nli(request: LLMRequest) -> str:
        knowledge = request.messages[-1].content.rsplit("Knowledge:", 1)[1]
        return "entailment" if keep in knowledge else "neutral"

    plan = '{"Rewritten Question": ["Which county borders it?"], "Query": ["Namangan", "Minsk Region"]}'  # noqa: E501
    return ScriptedLLM({"query_plan": lambda r: plan, "nli": nli, "cxtint": lambda r: "Henry"})


ONE_ENOUGH = "  trigger: {kind: popularity, threshold: 0.4, popularity: 1}\n"


def test_four_module_retrieves_filters_remembers(tmp_path: Path, example: QAExample) -> None:
    memory = tmp_path / "memory.sqlite"
    recipe = seed_recipe(
        tmp_path, "four_module", f"method:\n  reservoir: '{memory}'\n" + ONE_ENOUGH
    )
    llm = four_module_llm(keep="Namangan")
    first = answer_question(recipe, example, llm)
    assert [s.question for s in first.steps] == ["Namangan", "Minsk Region"]
    assert all(len(s.retrieved) == 5 for s in first.steps)  # 5 per query, as the paper's n = 5
    asked = prompts(llm)
    assert asked[0] == "query_plan" and asked[-1] == "cxtint"
    assert asked.count("nli") == len({u for s in first.steps for u in s.retrieved})
    reader = llm.requests[-1].messages[-1].content
    assert "Question: Which county borders it?" in reader  # the rewritten question is read
    assert first.read == "Which county borders it?"  # ... and the trace says so
    stored = Reservoir(memory)
    kept = stored.match(np.ones(256, np.float32), embedder=repr(recipe.index.embedder), limit=99)
    assert kept.items and all("Namangan" in i.text for i in kept.items)  # only what was kept
    assert reader.count("Namangan") >= len(kept.items)
    from chainrag.core.context import ModelStore
    from chainrag.run.question import searchable_index

    texts = searchable_index(recipe, example, ModelStore()).texts
    for step in first.steps:  # the trace says which retrieved units the filter kept
        assert step.kept is not None and set(step.kept) <= set(step.retrieved)
        assert all(("Namangan" in texts[u]) == (u in step.kept) for u in step.retrieved)
    assert sum(len(s.kept or ()) for s in first.steps) > 0
    from chainrag.core.trace import render

    assert "the filter kept" in render(first, texts) and " dropped " in render(first, texts)
    assert "read for: Which county borders it?" in render(first, texts)

    llm.requests.clear()
    again = answer_question(recipe, example, llm)  # the same question, query by query
    assert [(s.question, s.from_memory) for s in again.steps] == [
        ("Namangan", True),
        ("Minsk Region", False),
    ]
    assert "step 1: memory: Namangan\n" in render(again, texts)
    assert again.steps[0].retrieved == () and len(again.steps[1].retrieved) == 5
    assert prompts(llm).count("nli") == 5  # only the retrieved query's items are judged
    assert again.answer == "Henry"


def test_four_module_never_stores_unfiltered_items(tmp_path: Path, example: QAExample) -> None:
    memory = tmp_path / "memory.sqlite"
    extra = f"method:\n  reservoir: '{memory}'\n  fallback_unfiltered: true\n"
    recipe = seed_recipe(tmp_path, "four_module", extra)
    llm = four_module_llm(keep="no passage says this")
    answer_question(recipe, example, llm)
    assert "[1]" in llm.requests[-1].messages[-1].content  # the reader got the fallback
    assert len(Reservoir(memory)) == 0  # but nothing unfiltered was written back
    strict = seed_recipe(tmp_path, "four_module", f"method:\n  reservoir: '{memory}'\n")
    llm = four_module_llm(keep="no passage says this")
    answer_question(strict, example, llm)
    assert "[1]" not in llm.requests[-1].messages[-1].content  # by default: no knowledge


def test_four_module_without_memory_always_retrieves(tmp_path: Path, example: QAExample) -> None:
    recipe = seed_recipe(tmp_path, "four_module", "method: {reservoir: null}\n")
    llm = four_module_llm(keep="Namangan")
    for _ in range(2):
        prediction = answer_question(recipe, example, llm)
        assert not any(s.from_memory for s in prediction.steps)


def test_four_module_reads_the_original_question_when_asked(
    tmp_path: Path, example: QAExample
) -> None:
    recipe = seed_recipe(tmp_path, "four_module", "method: {reservoir: null, read: original}\n")
    llm = four_module_llm(keep="Namangan")
    prediction = answer_question(recipe, example, llm)
    assert prediction.read is None  # the dataset's own question was read
    assert f"Question: {example.question}" in llm.requests[-1].messages[-1].content


def recurring_llm(examples: list[QAExample]) -> ScriptedLLM:
    """Each question's search query: the title of one of its passages that names itself, so
    that this passage is retrieved for it and stored under that title."""
    title = {e.question: next(p.title for p in e.passages if p.title in p.text) for e in examples}

    def plan(request: LLMRequest) -> str:
        asked = request.messages[-1].content.rsplit("Question: ", 1)[1].split("\n")[0]
        return json.dumps({"Rewritten Question": ["q"],
                           "Query": [title[asked.removeprefix("Tell me: ")]]})  # fmt: skip

    return ScriptedLLM({
        "paraphrase": lambda r: "Tell me: " + r.messages[-1].content.split("Question: ")[1]
        .split("\n")[0],
        "query_plan": plan,
        "nli": lambda r: "entailment",
        "cxtint": lambda r: "Henry",
    })  # fmt: skip


def test_recurring_experiment_with_a_scripted_llm(tmp_path: Path) -> None:
    from chainrag.experiments import recurring as rec

    recipe = seed_recipe(tmp_path, "four_module", "method:\n" + ONE_ENOUGH)
    examples = load_dataset("musique", 2)
    llm = recurring_llm(examples)
    outcomes = rec.run(recipe, "musique", examples, llm, tmp_path / "experiment")
    by_phase: dict[str, list[rec.Outcome]] = {}
    for outcome in outcomes:
        by_phase.setdefault(outcome.phase, []).append(outcome)
    assert list(by_phase) == [p.name for p in rec.PHASES]
    assert all(len(v) == 2 for v in by_phase.values())
    assert not any(o.from_memory for o in by_phase["first ask (fills the reservoir)"])
    again = by_phase["asked again, with the reservoir"]
    assert all(o.from_memory and o.retrievals == 0 for o in again)
    assert all(o.retrievals == 5 and not o.from_memory
               for o in by_phase["asked again, no reservoir"])  # fmt: skip
    reworded = by_phase["paraphrased, with the reservoir"]
    assert all(o.question.startswith("Tell me: ") for o in reworded)
    assert all(o.from_memory for o in reworded)  # near-identical words: found in memory
    text = rec.table(outcomes, "musique")
    assert (
        "| asked again, with the reservoir |" in text and "external knowledge items saved" in text
    )
    assert "−" in text or "-" in text
    assert rec.run(recipe, "musique", examples, llm, tmp_path / "experiment") == outcomes
    (tmp_path / "other").mkdir()  # a reservoir this experiment did not fill
    Reservoir(tmp_path / "other" / rec.RESERVOIR).add(
        [KnowledgeItem("Henry", "Danube")], np.ones((1, 4)), embedder="hashed"
    )
    with pytest.raises(rec.RecurringError, match="starts from an empty reservoir"):
        rec.run(recipe, "musique", examples, llm, tmp_path / "other")
    with pytest.raises(rec.RecurringError, match="needs four_module"):
        rec.with_reservoir(seed_recipe(tmp_path, "tree"), None)


def test_recurring_experiment_with_a_relative_reservoir_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI passes OUT/recurring-DATASET, relative to the working directory: the method
    must write its reservoir.sqlite (not one under the cache folder), and each outcome must
    record its newest item id, which a resume rolls back to."""
    from chainrag.experiments import recurring as rec

    recipe = seed_recipe(tmp_path, "four_module", "method:\n" + ONE_ENOUGH)
    examples = load_dataset("musique", 1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    outcomes = rec.run(recipe, "musique", examples, recurring_llm(examples), Path("out"))
    assert (tmp_path / "out" / rec.RESERVOIR).is_file()
    assert not list((tmp_path / "cache").rglob(rec.RESERVOIR))
    assert outcomes[0].reservoir_last_id > 0


def test_recurring_experiment_resumes_after_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut off right after a question wrote to the reservoir but before its line was
    recorded, the experiment resumes on the same folder: the reservoir is rolled back, that
    question is asked again, and the outcomes equal those of an uninterrupted run."""
    from chainrag.experiments import recurring as rec
    from chainrag.run.files import LineWriter
    from chainrag.run.folder import RunDir

    recipe = seed_recipe(tmp_path, "four_module", "method:\n" + ONE_ENOUGH)
    examples = load_dataset("musique", 2)

    def essence(outcomes: list[rec.Outcome]) -> list[tuple[object, ...]]:
        return [(o.phase, o.qid, o.question, o.answer, o.f1, o.retrievals, o.from_memory,
                 o.calls) for o in outcomes]  # fmt: skip

    whole = tmp_path / "whole"
    assert rec.open_folder(whole, recipe, "musique", examples) == []
    llm = recurring_llm(examples)
    reference = rec.run(recipe, "musique", examples, llm, whole,
                        reworded=rec.folder_paraphrases(whole, examples, llm))  # fmt: skip

    class CrashError(BaseException):  # a kill: no handler sees it
        pass

    def crash_at(qid: str) -> None:
        append = LineWriter.append

        def crashing(writer: LineWriter, record: Mapping[str, Any]) -> None:
            if writer.path.name == "predictions.jsonl" and record["id"] == qid:
                raise CrashError  # after its reservoir writes, before its line is recorded
            append(writer, record)

        monkeypatch.setattr(LineWriter, "append", crashing)

    folder = tmp_path / "cut"
    rec.open_folder(folder, recipe, "musique", examples)
    first_llm = recurring_llm(examples)
    reworded = rec.folder_paraphrases(folder, examples, first_llm)
    crash_at(examples[1].qid)  # the first ask of the second question
    with pytest.raises(CrashError):
        rec.run(recipe, "musique", examples, first_llm, folder, reworded=reworded)
    monkeypatch.undo()
    # a crash mid-write leaves a torn last line: it is cut on resume
    first_phase = rec.phase_folder(folder, rec.PHASES[0])
    with (first_phase / "predictions.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "2hop__')
    done = rec.open_folder(folder, recipe, "musique", examples)
    assert [(o.phase, o.qid) for o in done] == [(rec.PHASES[0].name, examples[0].qid)]
    assert Reservoir(folder / rec.RESERVOIR).last_id() > done[0].reservoir_last_id
    again_llm = recurring_llm(examples)
    resumed = rec.run(recipe, "musique", examples, again_llm, folder,
                      reworded=rec.folder_paraphrases(folder, examples, again_llm))  # fmt: skip
    ended = RunDir(first_phase).meta().sessions[-1].end
    assert ended is not None and ended.torn_bytes_repaired == len(b'{"id": "2hop__')
    assert "paraphrase" not in prompts(again_llm)  # the stored paraphrases were used
    assert essence(resumed) == essence(reference)
    assert len(Reservoir(folder / rec.RESERVOIR)) == len(Reservoir(whole / rec.RESERVOIR))

    # cut off in the very first question: nothing recorded, but the reservoir has its items
    first = tmp_path / "first"
    rec.open_folder(first, recipe, "musique", examples)
    crash_at(examples[0].qid)
    with pytest.raises(CrashError):
        rec.run(recipe, "musique", examples, recurring_llm(examples), first, reworded=reworded)
    monkeypatch.undo()
    assert len(Reservoir(first / rec.RESERVOIR)) > 0
    assert rec.open_folder(first, recipe, "musique", examples) == []
    from_start = rec.run(recipe, "musique", examples, recurring_llm(examples), first,
                         reworded=reworded)  # fmt: skip
    assert essence(from_start) == essence(reference)

    with pytest.raises(rec.RecurringError, match="holds another recurring experiment"):
        rec.open_folder(folder, recipe, "musique", examples[:1])
    shutil.copytree(folder / rec.PHASES_DIR, tmp_path / "nowhere" / rec.PHASES_DIR)
    with pytest.raises(rec.RecurringError, match="is missing"):
        rec.run(recipe, "musique", examples, again_llm, tmp_path / "nowhere")


def test_a_recurring_experiment_folder_is_a_run_folder(tmp_path: Path) -> None:
    """The folder's description is the run folder's run.json (recipe, dataset file, the
    questions, one entry per session with its end), checked on a resume like a run's; the
    reservoir is the method's declared state, so a question that fails takes its writes with
    it; neither ``chainrag run`` nor ``chainrag report`` take the folder for a run."""
    from contextlib import nullcontext

    from chainrag.data.names import dataset_path
    from chainrag.experiments import recurring as rec
    from chainrag.report import find_runs
    from chainrag.run.files import RunError
    from chainrag.run.folder import RunDir

    recipe = seed_recipe(tmp_path, "four_module", "method:\n" + ONE_ENOUGH)
    examples = load_dataset("musique", 2)
    folder = tmp_path / "runs" / "recurring-musique"
    llm = recurring_llm(examples)
    outcomes = rec.in_folder(folder, recipe, "musique", examples, lambda: nullcontext(llm),
                             recipe_path=tmp_path / "four_module.yaml")  # fmt: skip
    assert len(outcomes) == 2 * len(rec.PHASES)
    meta = RunDir(folder).meta()
    assert meta.experiment == "recurring" and meta.method == "FourModule"
    assert meta.questions == tuple(e.qid for e in examples)
    assert meta.recipe_file == str(tmp_path / "four_module.yaml")
    assert len(meta.sessions) == 1 and meta.sessions[0].end is not None
    assert meta.sessions[0].end.answered == 10 and meta.sessions[0].end.resumed_from == 0
    rec.in_folder(folder, recipe, "musique", examples, lambda: nullcontext(llm))
    assert RunDir(folder).meta().sessions == meta.sessions  # nothing to do: as a run, no entry

    with pytest.raises(rec.RecurringError, match=r"holds another recurring experiment.*other "
                       r"questions \(2 questions, not the 1"):  # fmt: skip
        rec.open_folder(folder, recipe, "musique", examples[:1])
    with pytest.raises(RunError, match="holds the recurring experiment, not a run"):
        RunDir(folder).check(recipe, "musique", dataset_path("musique")[0])
    with pytest.raises(RunError, match="experiment's folder, not a run"):
        find_runs([folder])
    assert find_runs([tmp_path / "runs"]) == []

    # a question that fails mid-way leaves nothing in the reservoir
    failing = ScriptedLLM({**llm.script, "cxtint": lambda r: str(1 / 0)})
    cut = tmp_path / "cut"
    with pytest.raises(rec.RecurringError, match=r"first ask .*2 question\(s\) failed"):
        rec.in_folder(cut, recipe, "musique", examples, lambda: nullcontext(failing))
    assert Reservoir(cut / rec.RESERVOIR).last_id() == 0
    ended = RunDir(cut).meta().sessions[-1].end  # the phase's session, as its run ended it
    assert ended is not None and (ended.failed, ended.stopped, ended.interrupted) == (2, None, None)
    failed = RunDir(rec.phase_folder(cut, rec.PHASES[0])).errors()
    assert [e.error for e in failed] == ["ZeroDivisionError"] * 2


def test_a_recurring_experiment_stopped_by_ctrl_c_resumes_where_it_stopped(tmp_path: Path) -> None:
    """Ctrl-C in a phase ends that phase's run as it ends any run (the question in flight
    finishes and is kept, its session recorded as interrupted), then the experiment's session
    (recorded too); the same call again finishes it over the reservoir the first phase filled."""
    import signal
    import threading
    import time
    from contextlib import nullcontext

    from chainrag.experiments import recurring as rec
    from chainrag.run.folder import RunDir

    recipe = seed_recipe(tmp_path, "four_module", "method:\n" + ONE_ENOUGH)
    examples = load_dataset("musique", 2)
    llm = recurring_llm(examples)
    integrated: list[str] = []

    def answer_then_stop(request: LLMRequest) -> str:
        integrated.append(request.prompt_id)
        if len(integrated) == 3:  # the second phase's first question: Ctrl-C in flight
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            time.sleep(0.2)
        return "Henry"

    stopping = ScriptedLLM({**llm.script, "cxtint": answer_then_stop})
    folder = tmp_path / "recurring-musique"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal
    try:
        with pytest.raises(KeyboardInterrupt):
            rec.in_folder(folder, recipe, "musique", examples, lambda: nullcontext(stopping))
    finally:
        signal.signal(signal.SIGINT, previous)
    ended = RunDir(folder).meta().sessions[-1].end
    assert ended is not None and (ended.interrupted, ended.answered) == ("SIGINT", 3)
    second = RunDir(rec.phase_folder(folder, rec.PHASES[1])).meta().sessions[-1].end
    assert second is not None and (second.interrupted, second.answered) == ("SIGINT", 1)
    outcomes = rec.in_folder(folder, recipe, "musique", examples, lambda: nullcontext(llm))
    assert len(outcomes) == 2 * len(rec.PHASES)
    assert all(o.from_memory for o in outcomes if o.phase == rec.PHASES[1].name)


def test_an_experiment_folder_of_an_earlier_version_reads_back_but_is_not_resumed() -> None:
    from chainrag.experiments import recurring as rec

    folder = ROOT / "docs" / "runs" / "recurring-musique"
    recipe = load_recipe(folder / "recipe.yaml")
    with pytest.raises(rec.RecurringError, match=r"earlier chainrag \(experiment.json\)"):
        rec.open_folder(folder, recipe, "musique", load_dataset("musique", 10))


def test_recurring_command_resumes_and_refuses_another_experiment(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chainrag.cli.main import app
    from chainrag.experiments import recurring as rec
    from chainrag.standin.server import FakeOpenAI, serve

    with serve(FakeOpenAI([], reply="Paris")) as api_base:
        recipe = seed_recipe(tmp_path, "four_module")  # checks the recipe loads
        path = tmp_path / "four_module.yaml"
        path.write_text(
            path.read_text() + f"llm: {{kind: litellm, model: openai/fake-model, "
            f"api_base: '{api_base}', max_retries: 0}}\n"
        )
        assert recipe.method is not None
        runner = CliRunner()
        args = ["experiment", "recurring", "--recipe", str(path), "--limit", "1",
                "--out", str(tmp_path / "runs"), "--cache-mode", "bypass"]  # fmt: skip
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        folder = tmp_path / "runs" / "recurring-musique"
        assert len(rec.phase_outcomes(folder)) == 5
        assert "| asked again, with the reservoir |" in (folder / "table.md").read_text()
        again = runner.invoke(app, args)
        assert again.exit_code == 0, again.output
        assert "resuming, 5 of 5 question-phases already done" in again.output
        assert len(rec.phase_outcomes(folder)) == 5
        other = runner.invoke(app, [*args[:5], "2", *args[6:]])
        assert other.exit_code == 1
        assert "holds another recurring experiment" in other.output


def test_a_memory_step_of_an_old_trace_reads_as_one() -> None:
    old = {"question": "memory: Namangan", "retrieved": []}
    assert read_legacy_step(old) == {"question": "Namangan", "retrieved": [], "from_memory": True}
    assert read_legacy_step({"question": "Minsk Region"}) == {"question": "Minsk Region"}
    new = {"question": "memory: x", "from_memory": False}  # today's data is taken as it is
    assert read_legacy_step(new) == new
    step = StepTrace("Namangan", from_memory=True)
    assert read_legacy_step({"question": "memory: Namangan"}) == {
        "question": step.question,
        "from_memory": step.from_memory,
    }


def test_a_missing_nli_model_is_an_error_when_it_loads() -> None:
    from chainrag.components.knowledge.knowledge import NLICrossEncoderFilter
    from chainrag.core.context import Context, ModelPathError

    nli = NLICrossEncoderFilter(model_path="/nowhere/nli")  # no check at construction
    with pytest.raises(ModelPathError, match=r"^nli_cross_encoder: 'model_path' '/nowhere/nli'"):
        nli("q", [KnowledgeItem("a")], Context())
