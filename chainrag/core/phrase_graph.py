"""The values HippoRAG's stages pass (Gutiérrez et al. 2024): a passage's OpenIE, the phrase
graph built from a context's or a corpus's passages, a query's link into it.

* :class:`Extraction` — one passage's named entities and triples, and whether each of the two
  LLM replies could be read (a reply that is not JSON gives nothing, as the authors' code does,
  and is counted here instead of raising);
* :class:`PhraseGraph` — nodes are the cleaned head and tail phrases of the triples; the
  symmetric weighted adjacency the Personalized PageRank walks (triple edges and synonymy
  edges); the passage × phrase count matrix that turns phrase probabilities into passage
  scores; the phrases' vectors by the recipe's embedder (query entities link to them);
* :class:`Linking` — a query's entities, the phrase each linked to with its cosine, and the
  reset (personalisation) vector they make;
* :class:`~chainrag.core.types.PhraseGraphStats` (in the types a trace holds) — what a graph
  was built from.

Layer: core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from numpy.typing import NDArray

from chainrag.core.types import FloatArray, PhraseGraphStats

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix


@attrs.frozen
class Extraction:
    """The OpenIE of one passage (HippoRAG's offline indexing, §3.1).

    Attributes:
        entities: The named entities the NER step found, as the LLM wrote them, de-duplicated
            and sorted (the authors' code keeps ``np.unique`` of them).
        triples: The triples of the second step, each as the LLM wrote it (a triple that is
            not three strings is kept as it came and dropped when the graph is built).
        ner_read: False where the NER reply held no JSON object with ``named_entities``.
        triples_read: False where the triples reply held no JSON object with ``triples``.
    """

    entities: tuple[str, ...] = ()
    triples: tuple[tuple[str, ...], ...] = ()
    ner_read: bool = True
    triples_read: bool = True


def _sparse_eq(a: Any, b: Any) -> bool:
    return bool(a.shape == b.shape and (a != b).nnz == 0)


def _array_eq(a: Any, b: Any) -> bool:
    return bool(a.shape == b.shape and np.array_equal(a, b))


@attrs.frozen
class PhraseGraph:
    """HippoRAG's knowledge graph over a set of passages (§3.1).

    Attributes:
        phrases: Node ``i``'s phrase (cleaned: lower case, ASCII letters and digits).
        adjacency: (phrases × phrases) scipy CSR, symmetric, zero diagonal: the weight between
            two phrases as the authors' undirected igraph graph sums it (each directed key of
            their edge dict is one undirected edge: a triple adds 1 both ways, a synonymy
            pair sets its cosine).
        passage_phrases: (passages × phrases) scipy CSR: how many of a passage's distinct
            triples name the phrase (the code's ``docs_to_facts @ facts_to_phrases``).
        vectors: (phrases × d) L2-normalised phrase vectors by the recipe's embedder.
        stats: What the graph was built from.
    """

    phrases: tuple[str, ...]
    adjacency: csr_matrix = attrs.field(eq=attrs.cmp_using(eq=_sparse_eq))
    passage_phrases: csr_matrix = attrs.field(eq=attrs.cmp_using(eq=_sparse_eq))
    vectors: FloatArray = attrs.field(eq=attrs.cmp_using(eq=_array_eq))
    stats: PhraseGraphStats = attrs.field(factory=PhraseGraphStats)

    def passages_per_phrase(self) -> FloatArray:
        """How many passages name each phrase (node specificity's |P_i|)."""
        counts = (self.passage_phrases > 0).sum(axis=0)
        out: FloatArray = np.asarray(counts, dtype=np.float32).reshape(-1)
        return out


@attrs.frozen
class Linking:
    """A query's entities linked into a phrase graph (§3.2).

    Attributes:
        entities: The query's named entities, cleaned as phrases are.
        phrases: The phrase (node) each entity linked to, aligned with ``entities``.
        scores: Each link's cosine, aligned with ``entities``.
        reset: The Personalized PageRank's reset weights over all phrases (zeros where none
            linked): 1 / |P_i| with node specificity, 1 without.
    """

    entities: tuple[str, ...] = ()
    phrases: tuple[int, ...] = ()
    scores: tuple[float, ...] = ()
    reset: NDArray[np.float64] = attrs.field(
        factory=lambda: np.zeros(0), eq=attrs.cmp_using(eq=_array_eq)
    )
    read: bool = True
    """False where the query NER reply held no readable ``named_entities`` (no entities)."""
