"""One ``typing.Protocol`` per stage. Components implement them; recipes compose them.

Layer: the bottom, with :mod:`chainrag.core`; may import :mod:`chainrag.core.types` and
:mod:`chainrag.core.errors`, nothing else of chainrag.
"""

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
from chainrag.protocols.retrieval import (
    Expander,
    Graph,
    Reranker,
    Retrieval,
    Searchable,
    SeedRetriever,
    SufficiencyJudge,
)

__all__ = [
    "LLM",
    "NER",
    "Answerer",
    "CacheTrigger",
    "Chunker",
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
