"""One ``typing.Protocol`` per stage. Components implement them; recipes compose them.

Beside the stages' (:mod:`~chainrag.protocols.index`, :mod:`~chainrag.protocols.retrieval`,
:mod:`~chainrag.protocols.reasoning`, :mod:`~chainrag.protocols.knowledge`,
:mod:`~chainrag.protocols.method`, HippoRAG's :mod:`~chainrag.protocols.phrases`): what an
index is to a query (:mod:`~chainrag.protocols.units`; where its units come from,
:mod:`~chainrag.protocols.passages`), the LLM (:mod:`~chainrag.protocols.llm`), what a stage
may reach beyond its inputs (:mod:`~chainrag.protocols.resources` for index-time stages,
:mod:`~chainrag.protocols.context` for the others and the methods) and the optional parts of
components (:mod:`~chainrag.protocols.parts`). Inside the layer each module imports only the
ones before it in this order: llm, resources, index, units, context, then the stages' and parts.

Layer: above :mod:`chainrag.core`; may import :mod:`chainrag.core.types`,
:mod:`chainrag.core.notes`, :mod:`chainrag.core.phrase_graph` and :mod:`chainrag.core.errors`
(the values and errors), :mod:`chainrag.core.context` and :mod:`chainrag.core.retrieval` (the
model store, the encoders' ledger and the index data a context holds), nothing else of
chainrag, not even under ``TYPE_CHECKING``.
"""

from chainrag.protocols.context import Context
from chainrag.protocols.index import (
    NER,
    Chunker,
    EdgeBuilder,
    Embedder,
    EmbedRole,
    KeyEntityScorer,
    SentenceSplitter,
    VectorIndex,
    VectorSearch,
)
from chainrag.protocols.knowledge import CacheTrigger, KnowledgeFilter, QueryRewriter
from chainrag.protocols.llm import LLM
from chainrag.protocols.method import Method
from chainrag.protocols.reasoning import (
    Answerer,
    Decomposer,
    FollowUpWriter,
    Integrator,
    MultiHopJudge,
    RewriteConfirmer,
    Rewriter,
    RewriteTrigger,
    Summarizer,
)
from chainrag.protocols.resources import Resources
from chainrag.protocols.retrieval import (
    Expander,
    Reranker,
    Retrieval,
    SeedRetriever,
    SufficiencyJudge,
)
from chainrag.protocols.units import Graph, Searchable

__all__ = [
    "LLM",
    "NER",
    "Answerer",
    "CacheTrigger",
    "Chunker",
    "Context",
    "Decomposer",
    "EdgeBuilder",
    "EmbedRole",
    "Embedder",
    "Expander",
    "FollowUpWriter",
    "Graph",
    "Integrator",
    "KeyEntityScorer",
    "KnowledgeFilter",
    "Method",
    "MultiHopJudge",
    "QueryRewriter",
    "Reranker",
    "Resources",
    "Retrieval",
    "RewriteConfirmer",
    "RewriteTrigger",
    "Rewriter",
    "Searchable",
    "SeedRetriever",
    "SentenceSplitter",
    "SufficiencyJudge",
    "Summarizer",
    "VectorIndex",
    "VectorSearch",
]
