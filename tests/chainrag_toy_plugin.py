"""A third-party plugin as tests see one: imported through a recipe's ``plugins:`` list."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from chainrag.core.types import Passage, Sentence
from chainrag.protocols.resources import Resources
from chainrag.recipes.registry import REWRITE_TRIGGERS, SENTENCE_SPLITTERS


@REWRITE_TRIGGERS.register("toy_question_mark", example={"mark": "?"})
@attrs.frozen
class ToyQuestionMark:
    """Fires when the sub-question ends with ``mark`` (a toy).

    Recipe: ``{kind: toy_question_mark}``.
    """

    mark: str = "?"

    def __call__(self, sub_question: str) -> bool:
        return sub_question.rstrip().endswith(self.mark)


@SENTENCE_SPLITTERS.register("toy_period_splitter")
@attrs.frozen
class ToyPeriodSplitter:
    """Splits passages at ". " (a toy). Recipe: ``{kind: toy_period_splitter}``."""

    def __call__(self, passages: Sequence[Passage], ctx: Resources) -> tuple[Sentence, ...]:
        out: list[Sentence] = []
        for p_index, passage in enumerate(passages):
            start = 0
            for position, text in enumerate(passage.text.split(". ")):
                out.append(
                    Sentence(
                        len(out), text, p_index, passage.title, position, start, start + len(text)
                    )
                )
                start += len(text) + 2
        return tuple(out)
