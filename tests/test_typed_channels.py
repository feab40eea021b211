"""Typed channels between components: a judge that answers while it judges hands its sub-answer
over in ``Verdict.answer`` (not in its raw text), and a record keeps it only where there is one."""

from __future__ import annotations

from chainrag.core.types import Expansion, Verdict
from chainrag.methods.paper import ChainRAG
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
