"""Cross-question state as a run resource (issue 47, item 7): a method that carries state from
one question to the next (seed 004's knowledge reservoir) answers one question at a time; each
line records the state's marker; a failed question's writes are rolled back; a resumed run
rolls the state back to what its recorded questions left, so a killed run resumes over the
same state as one that was never stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import attrs
import pytest

from chainrag.context import StageContext
from chainrag.core.types import Answer, NamedAnswer, Prediction, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.index.reservoir import Reservoir
from chainrag.llm.fake import ScriptedLLM
from chainrag.methods.seeds import FourModule, ReservoirState
from chainrag.protocols.context import Context
from chainrag.protocols.parts import RunState, Stateful
from chainrag.run.files import RunError
from chainrag.run.session import STATE_FILE, run_recipe

from .test_runs import naive_recipe, start


@attrs.define
class Log:
    """A cross-question state: the questions seen, in order."""

    name: ClassVar[str] = "log"
    seen: list[str] = attrs.field(factory=list)

    def marker(self) -> int:
        return len(self.seen)

    def rollback(self, marker: int) -> None:
        del self.seen[marker:]


@attrs.frozen
class Remembering:
    """A method whose answer is how many questions it saw before (its state), failing on one."""

    log: Log
    fail_on: str = ""

    def run_state(self, ctx: Context) -> Log:
        return self.log

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        before = len(self.log.seen)
        self.log.seen.append(example.qid)
        if example.qid == self.fail_on:
            raise ValueError("failed after writing")
        return Prediction((NamedAnswer("count", Answer(str(before))),), ())


def test_a_stateful_run_records_markers_rolls_back_failures_and_resumes(tmp_path: Path) -> None:
    path, naive = naive_recipe(tmp_path)
    examples = load_dataset("musique", 5)
    log = Log()
    assert isinstance(Remembering(log), Stateful) and isinstance(log, RunState)
    recipe = attrs.evolve(naive, method=Remembering(log, fail_on=examples[1].qid))
    run = start(tmp_path, path, recipe)
    result = run_recipe(recipe, examples[:3], run, ScriptedLLM({}), concurrency=4)
    assert (result.answered, result.failed) == (2, 1)
    assert json.loads((run.folder / STATE_FILE).read_text()) == {"log": 0}
    records, _ = run.records()
    # the failed question's write was rolled back: the third saw one question before it
    assert [(r.answers["count"].text, r.state) for r in records] == [
        ("0", {"log": 1}), ("1", {"log": 2}),
    ]  # fmt: skip
    assert json.loads(run.predictions_path.read_text().splitlines()[0])["state"] == {"log": 1}
    # a question cut off part way (a kill) left a write behind; the resume removes it
    log.seen.append("cut off")
    fixed = attrs.evolve(recipe, method=Remembering(log))
    result = run_recipe(fixed, examples, run, ScriptedLLM({}))
    records, _ = run.records()
    answers = {r.id: r.answers["count"].text for r in records}
    assert [answers[e.qid] for e in examples] == ["0", "2", "1", "3", "4"]
    assert log.seen == [examples[i].qid for i in (0, 2, 1, 3, 4)]


def test_a_run_cut_before_its_first_record_goes_back_to_its_start(tmp_path: Path) -> None:
    path, naive = naive_recipe(tmp_path)
    examples = load_dataset("musique", 2)
    log = Log(["from an earlier run"])
    recipe = attrs.evolve(naive, method=Remembering(log, fail_on=examples[0].qid))
    run = start(tmp_path, path, recipe)
    run_recipe(recipe, examples[:1], run, ScriptedLLM({}))  # fails: nothing recorded
    log.seen.append("cut off")
    run_recipe(attrs.evolve(recipe, method=Remembering(log)), examples, run, ScriptedLLM({}))
    records, _ = run.records()
    assert [r.answers["count"].text for r in records] == ["1", "2"]  # the earlier run's item kept


def test_seed_004s_reservoir_is_its_run_state(tmp_path: Path) -> None:
    method = FourModule(reservoir=str(tmp_path / "r.sqlite"))
    state = method.run_state(StageContext())
    assert isinstance(state, ReservoirState) and isinstance(state, RunState)
    assert state.name == "reservoir" and state.marker() == 0
    assert FourModule(reservoir=None).run_state(StageContext()) is None
    assert isinstance(state.reservoir, Reservoir)
    state.rollback(0)


def test_a_broken_start_file_is_a_clear_error(tmp_path: Path) -> None:
    path, naive = naive_recipe(tmp_path)
    recipe = attrs.evolve(naive, method=Remembering(Log()))
    run = start(tmp_path, path, recipe)
    (run.folder / STATE_FILE).write_text("{}")
    with pytest.raises(RunError, match=r"state\.json: not this run's state at its start"):
        run_recipe(recipe, load_dataset("musique", 1), run, ScriptedLLM({}))
