"""The method protocol: one question in, a prediction with its trace out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from chainrag.core.types import Prediction, QAExample

if TYPE_CHECKING:
    from chainrag.protocols.context import Context


@runtime_checkable
class Method(Protocol):
    """A whole QA method (ChainRAG, NaiveRAG, Iter-RetGen...) as one readable flow.

    The method receives the example (its own passages in the per-question setting) and the
    context, which holds the LLM and the index built for it.
    """

    def __call__(self, example: QAExample, ctx: Context) -> Prediction: ...
