"""HippoRAG's phrase graph (Gutiérrez et al. 2024, §3.1), as the authors' ``src/create_graph.py``
and ``HippoRAG.build_graph`` make it, in small functions over arrays:

* :func:`clean_phrase` — ``processing_phrases``: lower case, every character but ASCII letters,
  digits and spaces made a space, stripped;
* :func:`clean_triples` — a passage's well-formed triples cleaned (a triple of more than one but
  not three elements is malformed and dropped, one of at most one element dropped silently);
* :func:`passage_phrase_counts` — passage × phrase: how many of the passage's distinct triples
  name the phrase (the code's ``docs_to_facts @ facts_to_phrases``, both binary);
* :func:`triple_weights` — each triple, as often as the passages state it, adds 1 to its
  (head, tail) and (tail, head) keys;
* :func:`synonymy_pairs` — for each phrase with more than two letters or digits, the phrases of
  cosine ≥ ``threshold``, most similar first, at most ``limit`` (the code stops past 100 found:
  101);
* :func:`undirected_weights` — the directed key weights (a synonymy pair's cosine replacing
  the key's triple count, as the code's dict assignment does) summed both ways without the
  diagonal: the weight the authors' undirected igraph graph gives each pair, one edge per key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs
import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from chainrag.core.phrase_graph import Extraction, PhraseGraph
from chainrag.core.types import FloatArray, PhraseGraphStats
from chainrag.protocols.context import Context
from chainrag.protocols.index import Embedder
from chainrag.recipes.registry import PHRASE_GRAPH_BUILDERS

Triple = tuple[str, str, str]
Pairs = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]
"""(rows, columns, weights) of directed pairs."""

_BLOCK = 1024
"""Phrases whose similarities to all others are computed at once (bounds memory at n × 1024)."""


def clean_phrase(phrase: str) -> str:
    """A phrase as the graph's node names it (the authors' ``processing_phrases``)."""
    return re.sub("[^A-Za-z0-9 ]", " ", phrase.lower()).strip()


def clean_triples(extraction: Extraction) -> tuple[list[Triple], int]:
    """The passage's triples of three elements, cleaned, in order (repeats kept), and how many
    were malformed (more than one element, not three)."""
    clean: list[Triple] = []
    malformed = 0
    for triple in extraction.triples:
        if len(triple) == 3:
            head, relation, tail = (clean_phrase(str(s)) for s in triple)
            clean.append((head, relation, tail))
        elif len(triple) > 1:
            malformed += 1
    return clean, malformed


def phrase_index(passages: Sequence[Sequence[Triple]]) -> tuple[str, ...]:
    """The graph's nodes: every head and tail, once, sorted (the code's ``np.unique``)."""
    return tuple(sorted({p for rows in passages for h, _, t in rows for p in (h, t)}))


def passage_phrase_counts(
    passages: Sequence[Sequence[Triple]], index: dict[str, int]
) -> sparse.csr_matrix:
    """(passages × phrases): how many of a passage's distinct triples name the phrase as head
    or tail (once for a triple whose head is its tail)."""
    rows: list[int] = []
    cols: list[int] = []
    for p, triples in enumerate(passages):
        for head, _, tail in dict.fromkeys(triples):
            for phrase in dict.fromkeys((head, tail)):
                rows.append(p)
                cols.append(index[phrase])
    data = np.ones(len(rows), dtype=np.float64)
    shape = (len(passages), len(index))
    return sparse.csr_matrix((data, (rows, cols)), shape=shape)


def triple_weights(passages: Sequence[Sequence[Triple]], index: dict[str, int]) -> Pairs:
    """Directed (head, tail) and (tail, head) keys of every triple occurrence, weight 1 each
    (summed where repeated)."""
    heads = [index[h] for rows in passages for h, _, _ in rows]
    tails = [index[t] for rows in passages for _, _, t in rows]
    rows = np.asarray(heads + tails, dtype=np.int64)
    cols = np.asarray(tails + heads, dtype=np.int64)
    return rows, cols, np.ones(len(rows), dtype=np.float64)


def synonym_sources(phrases: Sequence[str]) -> NDArray[np.bool_]:
    """The phrases that look for synonyms: more than two ASCII letters or digits."""
    return np.array([len(re.sub("[^A-Za-z0-9]", "", p)) > 2 for p in phrases], dtype=bool)


def synonymy_pairs(
    vectors: FloatArray, sources: NDArray[np.bool_], threshold: float, limit: int
) -> Pairs:
    """(phrase, other phrase, cosine) for each source phrase's others of cosine ≥
    ``threshold``, most similar first (equal cosines by index), at most ``limit`` each."""
    found_rows: list[int] = []
    found_cols: list[int] = []
    found_sims: list[float] = []
    todo = np.flatnonzero(sources)
    for start in range(0, len(todo), _BLOCK):
        block = todo[start : start + _BLOCK]
        sims = np.asarray(vectors[block] @ vectors.T, dtype=np.float64)
        for row, phrase in zip(sims, block, strict=True):
            near = np.flatnonzero(row >= threshold)
            near = near[near != phrase]
            near = near[np.lexsort((near, -row[near]))][:limit]
            found_rows += [int(phrase)] * len(near)
            found_cols += near.tolist()
            found_sims += row[near].tolist()
    return (
        np.asarray(found_rows, dtype=np.int64),
        np.asarray(found_cols, dtype=np.int64),
        np.asarray(found_sims, dtype=np.float64),
    )


def undirected_weights(n: int, triples: Pairs, synonyms: Pairs) -> sparse.csr_matrix:
    """(n × n) symmetric, zero diagonal: each directed key's weight (its triple count, or its
    synonymy cosine where it has one, which replaces the count) plus its reverse key's."""
    counts = sparse.csr_matrix((triples[2], (triples[0], triples[1])), shape=(n, n))
    replaced = sparse.csr_matrix(
        (np.ones(len(synonyms[0])), (synonyms[0], synonyms[1])), shape=(n, n)
    )
    cosines = sparse.csr_matrix((synonyms[2], (synonyms[0], synonyms[1])), shape=(n, n))
    directed = sparse.csr_matrix(counts - counts.multiply(replaced) + cosines)
    both = sparse.coo_matrix(directed + directed.T)
    keep = (both.row != both.col) & (both.data != 0)
    return sparse.csr_matrix((both.data[keep], (both.row[keep], both.col[keep])), shape=(n, n))


@PHRASE_GRAPH_BUILDERS.register("hipporag")
@attrs.frozen
class HippoRAGGraph:
    """HippoRAG's phrase graph (§3.1): triple edges, synonymy edges, passage × phrase counts.

    Phrases come from the OpenIE triples, an edge from each triple, synonymy edges join
    phrases whose vectors by the recipe's embedder are close.
    Recipe: ``{kind: hipporag, threshold: 0.8}``.
    """

    synonymy: bool = True
    """Add synonymy edges (false: the paper's "w/o synonymy edges" ablation)."""
    threshold: float = 0.8
    """The least cosine of two phrases a synonymy edge joins (the code's ``--sim_threshold``)."""
    max_synonyms: int = attrs.field(default=101, validator=attrs.validators.ge(0))
    """Synonymy edges a phrase makes at most, most similar first (the code stops past 100)."""

    def __call__(
        self, extractions: Sequence[Extraction], embedder: Embedder, ctx: Context
    ) -> PhraseGraph:
        cleaned = [clean_triples(e) for e in extractions]
        passages = [rows for rows, _ in cleaned]
        phrases = phrase_index(passages)
        index = {p: i for i, p in enumerate(phrases)}
        vectors = (
            embedder(list(phrases), ctx, "passage")
            if phrases
            else np.zeros((0, 0), dtype=np.float32)
        )
        n = len(phrases)
        synonyms = (
            synonymy_pairs(vectors, synonym_sources(phrases), self.threshold, self.max_synonyms)
            if self.synonymy and n
            else _no_pairs()
        )
        stats = PhraseGraphStats(
            passages=len(extractions),
            phrases=n,
            triples=len({t for rows in passages for t in rows}),
            malformed_triples=sum(m for _, m in cleaned),
            synonymy_edges=len(synonyms[0]),
            unread_ner=sum(not e.ner_read for e in extractions),
            unread_triples=sum(not e.triples_read for e in extractions),
        )
        adjacency = undirected_weights(n, triple_weights(passages, index), synonyms)
        counts = passage_phrase_counts(passages, index)
        return PhraseGraph(phrases, adjacency, counts, vectors, stats)


def _no_pairs() -> Pairs:
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty.copy(), np.zeros(0, dtype=np.float64)
