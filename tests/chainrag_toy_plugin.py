"""A third-party plugin as tests see one: imported through a recipe's ``plugins:`` list."""

from __future__ import annotations

import attrs

from chainrag.registry import REWRITE_TRIGGERS


@REWRITE_TRIGGERS.register("toy_question_mark", example={"mark": "?"})
@attrs.frozen
class ToyQuestionMark:
    """Fires when the sub-question ends with ``mark`` (a toy).

    Recipe: ``{kind: toy_question_mark}``.
    """

    mark: str = "?"

    def __call__(self, sub_question: str) -> bool:
        return sub_question.rstrip().endswith(self.mark)
