"""One probe of a sufficiency judge at one step of a question's walk (``chainrag experiment
judge-steps``): what :mod:`~chainrag.experiments.judge_steps` makes and
:mod:`~chainrag.experiments.judge_combination` and :mod:`~chainrag.experiments.judge_steps_table`
measure, below all three so that none imports another in a loop."""

from __future__ import annotations

import attrs


@attrs.frozen
class StepProbe:
    """One probe: a sub-question, two paragraphs, whether they hold its gold paragraph, and
    what each judge said (``combined`` is computed from the others when the table is made)."""

    split: str
    qid: str
    step: int
    sub_question: str
    sufficient: bool
    paragraphs: tuple[int, ...]
    words: int
    said_yes: bool
    p_yes: float
    similarity: float
    overlap: float
    raw: str

    def score(self, judge: str) -> float:
        """The probe's score by ``judge`` (one of
        :data:`~chainrag.experiments.judge_steps_table.JUDGES` but ``combined``)."""
        return {
            "llm_yes_no": float(self.said_yes),
            "P(yes)": self.p_yes,
            "similarity": self.similarity,
            "overlap": self.overlap,
        }[judge]
