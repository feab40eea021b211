"""The context a run gives its stages: :class:`StageContext` (the LLM, the model store, the
index and the recipe's retrieval bound to it, the usage ledger), which implements the
Protocols a stage names (:mod:`chainrag.protocols.resources`, :mod:`chainrag.protocols.context`),
and :class:`Retriever`, a recipe's retrieval stages bound to one index.

    ctx = StageContext(llm=ScriptedLLM({...}), index=graph.view(), retrieval=recipe.retrieval)
    expansion = ctx.retrieve("Where was Alice born?")

Layer: above :mod:`chainrag.protocols`; may import :mod:`chainrag.core` and
:mod:`chainrag.protocols`, nothing else of chainrag.
"""

from chainrag.context.retriever import RetrievalError, Retriever
from chainrag.context.stage import StageContext

__all__ = ["RetrievalError", "Retriever", "StageContext"]
