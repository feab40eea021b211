"""Typed channels between components: a judge that answers while it judges hands its sub-answer
over in ``Verdict.answer`` (not in its raw text), and a record keeps it only where there is one;
an integrator runs once a question for every integrator that builds on it."""

from __future__ import annotations

import attrs

from chainrag.components.reasoning.choosers import Choose, FormChecked
from chainrag.components.reasoning.integrators import integrated
from chainrag.context import StageContext
from chainrag.core.types import Answer, Expansion, IntegrationInput, Verdict
from chainrag.methods.paper import ChainRAG
from chainrag.protocols.context import Context
from chainrag.run.record import CONVERTER, plain, structured


def expansion(*verdicts: Verdict) -> Expansion:
    return Expansion(units=(0, 1), seeds=(0,), hops=1, verdicts=verdicts)


def test_the_sub_answer_is_taken_from_the_verdicts_answer_not_its_text() -> None:
    method = ChainRAG(answer_from_judge=True)
    answered = expansion(Verdict(False, "unanswerable"), Verdict(True, "Fårö", answer="Fårö"))
    taken = method.judged_answer("Where did he die?", answered, None)
    assert taken is not None
    assert (taken.question, taken.answer, taken.answered) == ("Where did he die?", "Fårö", True)
    yes_no = expansion(Verdict(True, "Yes, the sentences suffice."))  # a yes/no judge's "yes"
    assert method.judged_answer("Where did he die?", yes_no, None) is None
    assert method.judged_answer("Where did he die?", answered, "a carried summary") is None
    assert ChainRAG().judged_answer("Where did he die?", answered, None) is None


def test_a_record_keeps_a_verdicts_answer_only_where_there_is_one() -> None:
    yes_no, answering = Verdict(True, "yes"), Verdict(True, "Fårö", answer="Fårö")
    assert plain(yes_no) == {"ok": True, "raw": "yes"}  # as written before answers were typed
    assert plain(answering) == {"ok": True, "raw": "Fårö", "answer": "Fårö"}
    for verdict in (yes_no, answering, Verdict(False)):
        assert structured(plain(verdict), Verdict, "verdict", CONVERTER) == verdict


CALLS: list[str] = []


@attrs.frozen
class Counted:
    """An integrator that answers ``text`` and counts its runs in CALLS."""

    text: str
    name: str | None = None

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        CALLS.append(self.text)
        return Answer(self.text, f"said {self.text}")


def test_an_integrator_runs_once_a_question_for_all_that_build_on_it() -> None:
    """Without a response cache (cache_mode bypass), a recipe that lists CxtInt and AnsInt and
    a form_checked and a choose over them used to run AnsInt and CxtInt three times each."""
    CALLS.clear()
    first, second = Counted("Yes"), Counted("Fårö")
    integrators = (first, second, FormChecked(first, second), Choose(first, second),
                   Counted("Fårö", name="again"))  # fmt: skip
    inputs, ctx = IntegrationInput("Where did Ingmar Bergman die?"), StageContext()
    answers = [integrated(i, inputs, ctx) for i in integrators]
    assert [a.text for a in answers] == ["Yes", "Fårö", "Fårö", "Fårö", "Fårö"]
    assert CALLS == ["Yes", "Fårö"]
    again = IntegrationInput("Where did Ingmar Bergman die?")  # another question: run again
    assert integrated(first, again, ctx).text == "Yes"
    assert CALLS == ["Yes", "Fårö", "Yes"]


def test_evidence_is_one_entry_a_unit_and_a_reader_sees_each_text_once() -> None:
    """Issue 47, item 3: ChainRAG's evidence is kept by unit (two units with one text are two
    entries); what a reader is shown has each text once, at the first unit that gave it, so
    the requests are those of the text-keyed evidence before."""
    from chainrag.components.reasoning.integrators import CxtInt
    from chainrag.llm.fake import ScriptedLLM

    inputs = IntegrationInput(
        "Where did Ingmar Bergman die?",
        evidence=("He died on Fårö.", "Bergman was Swedish.", "He died on Fårö."),
        evidence_units=(7, 2, 11),
    )
    assert inputs.readable() == [("He died on Fårö.", 7), ("Bergman was Swedish.", 2)]
    unknown = IntegrationInput("q", evidence=("a", "b", "a"))
    assert unknown.readable() == [("a", None), ("b", None)]
    llm = ScriptedLLM({"cxtint": ["Fårö"]})
    assert CxtInt()(inputs, StageContext(llm=llm)).text == "Fårö"
    shown = llm.requests[0].messages[-1].content
    assert shown.count("He died on Fårö.") == 1 and "[2] Bergman was Swedish." in shown
