"""Hypothesis property tests of every edge builder and of SentenceGraph (ChainRAG §3.1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import sparse

from chainrag.components.index.edges import (
    EntityCooccurrence,
    SimilarityTopK,
    StructuralAdjacency,
    topk_similarity_edges,
)
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.core.types import GraphInputs, Passage, ScoredEntity, Sentence
from chainrag.index.graph import SentenceGraph

# --------------------------------------------------------------------------- strategies

ENTITY_NAMES = st.sampled_from(["paris", "france", "bergman", "1889", "x", "y"])
key_sets = st.lists(st.lists(ENTITY_NAMES, max_size=3, unique=True), max_size=12)


def sentences_for(passages: list[int]) -> tuple[Sentence, ...]:
    return tuple(
        Sentence(i, f"s{i}", p, f"T{p}", passages[:i].count(p), 0, 1)
        for i, p in enumerate(passages)
    )


@st.composite
def graph_inputs(draw: st.DrawFn, max_n: int = 12) -> GraphInputs:
    n = draw(st.integers(0, max_n))
    passages = sorted(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    keys = draw(st.lists(st.lists(ENTITY_NAMES, max_size=3, unique=True), min_size=n, max_size=n))
    vectors = draw(
        hnp.arrays(np.float32, (n, 4), elements=st.floats(-1, 1, width=32, allow_subnormal=False))
    )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.where(norms > 1e-3, vectors / np.maximum(norms, 1e-3), 0).astype(np.float32)
    scored = tuple(tuple(ScoredEntity(e, 1.0) for e in row) for row in keys)
    return GraphInputs(sentences_for(passages), scored, vectors)


BUILDERS = st.one_of(
    st.builds(EntityCooccurrence, weighting=st.sampled_from(["binary", "count", "score_sum"])),
    st.builds(
        SimilarityTopK,
        m=st.integers(1, 5),
        mutual=st.booleans(),
        weighting=st.sampled_from(["binary", "similarity"]),
        block=st.integers(1, 5),
    ),
    st.builds(
        StructuralAdjacency,
        window=st.integers(0, 4),
        weighting=st.sampled_from(["inverse_distance", "binary"]),
        cross_passages=st.booleans(),
    ),
)


def permuted(inputs: GraphInputs, order: list[int]) -> GraphInputs:
    sentences = tuple(
        Sentence(new, inputs.sentences[old].text, inputs.sentences[old].passage, "t", 0, 0, 1)
        for new, old in enumerate(order)
    )
    keys = tuple(inputs.key_entities[i] for i in order)
    assert inputs.embeddings is not None
    return GraphInputs(sentences, keys, inputs.embeddings[order])


# --------------------------------------------------------------------------- invariants


@given(BUILDERS, graph_inputs())
def test_every_builder_gives_a_valid_adjacency(builder: object, inputs: GraphInputs) -> None:
    m = builder(inputs)  # type: ignore[operator]
    n = len(inputs.sentences)
    assert sparse.isspmatrix_csr(m)
    assert m.shape == (n, n)
    assert m.dtype == np.float32
    dense = m.toarray()
    assert np.array_equal(dense, dense.T)
    assert np.all(np.diag(dense) == 0)
    assert np.all(np.isfinite(dense))
    assert np.all(dense >= 0)


@given(st.one_of(
    st.builds(EntityCooccurrence, weighting=st.sampled_from(["binary", "count", "score_sum"])),
    st.builds(SimilarityTopK, m=st.integers(1, 5), mutual=st.booleans()),
), graph_inputs(), st.randoms(use_true_random=False))  # fmt: skip
def test_permuting_sentences_permutes_the_matrix(
    builder: object, inputs: GraphInputs, rnd: object
) -> None:
    n = len(inputs.sentences)
    assert inputs.embeddings is not None
    sims = inputs.embeddings @ inputs.embeddings.T
    for i in range(n):  # top-m is only permutation-equivariant without ties
        others = np.delete(sims[i], i)
        assume(len(np.unique(others)) == len(others))
    order = list(range(n))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    a = builder(inputs).toarray()  # type: ignore[operator]
    b = builder(permuted(inputs, order)).toarray()  # type: ignore[operator]
    assert np.allclose(b, a[np.ix_(order, order)])


@given(graph_inputs())
def test_sa_is_permutation_equivariant_within_passage_order(inputs: GraphInputs) -> None:
    # SA depends on sentence order by definition; relabelling passages must not change it.
    a = StructuralAdjacency()(inputs).toarray()
    relabelled = GraphInputs(
        tuple(Sentence(s.sid, s.text, s.passage + 7, "t", 0, 0, 1) for s in inputs.sentences)
    )
    assert np.array_equal(a, StructuralAdjacency()(relabelled).toarray())


@given(graph_inputs())
def test_ec_is_nonzero_exactly_when_key_sets_meet(inputs: GraphInputs) -> None:
    for weighting in ("binary", "count", "score_sum"):
        dense = EntityCooccurrence(weighting=weighting)(inputs).toarray()  # type: ignore[arg-type]
        sets = [{e.name for e in row} for row in inputs.key_entities]
        for i in range(len(sets)):
            for j in range(len(sets)):
                assert bool(dense[i, j] > 0) == (i != j and bool(sets[i] & sets[j]))


def assert_top_m(x: np.ndarray, m: int, chosen: list[set[int]]) -> None:
    """Each row's choice is its m most similar others. BLAS may round one dot product
    differently from an equal one (by column position or block size), so values within 1e-6
    count as ties; without a near-tie at the boundary the choice must equal the reference."""
    sims = (x.astype(np.float64) @ x.T.astype(np.float64)).tolist()
    for i, picked in enumerate(chosen):
        others = sorted((j for j in range(len(x)) if j != i), key=lambda j: (-sims[i][j], j))
        rest = [sims[i][j] for j in others if j not in picked]
        if picked and rest:
            assert min(sims[i][j] for j in picked) >= max(rest) - 1e-6
        boundary = [sims[i][j] for j in others[m - 1 : m + 1]]
        if len(boundary) < 2 or boundary[0] - boundary[1] > 1e-6:
            assert picked == set(others[:m])


@given(graph_inputs(), st.integers(1, 6), st.integers(1, 4))
def test_ss_picks_at_most_m_and_follows_union_and_mutual(
    inputs: GraphInputs, m: int, block: int
) -> None:
    x = inputs.embeddings
    assert x is not None
    n = len(x)
    rows, cols, _ = topk_similarity_edges(x, m, block=block)
    chosen = [set(cols[rows == i].tolist()) for i in range(n)]
    assert all(len(c) == min(m, n - 1) for c in chosen)
    assert_top_m(x, m, chosen)
    union = SimilarityTopK(m=m, block=block)(inputs).toarray()
    mutual = SimilarityTopK(m=m, mutual=True, block=block)(inputs).toarray()
    for i in range(n):
        for j in range(n):
            assert bool(union[i, j]) == (j in chosen[i] or i in chosen[j])
            assert bool(mutual[i, j]) == (j in chosen[i] and i in chosen[j])


@pytest.mark.parametrize("torch_present", [True, False])
@given(st.lists(st.integers(0, 2), min_size=2, max_size=40), st.integers(1, 6))
def test_ss_ties_go_to_the_lower_indexes(torch_present: bool, kinds: list[int], m: int) -> None:
    """Exactly equal similarities (0/1 vectors: the products are exact) are broken by index."""
    import sys
    from unittest import mock

    x = np.eye(3, dtype=np.float32)[kinds]
    with mock.patch.dict(sys.modules, {} if torch_present else {"torch": None}):
        rows, cols, _ = topk_similarity_edges(x, m)
    for i in range(len(kinds)):
        same = [j for j in range(len(kinds)) if j != i and kinds[j] == kinds[i]]
        other = [j for j in range(len(kinds)) if kinds[j] != kinds[i]]
        assert cols[rows == i].tolist() == (same + other)[:m]


def test_tiny_graphs() -> None:
    for n in (0, 1):
        inputs = GraphInputs(sentences_for([0] * n), ((),) * n, np.ones((n, 3), np.float32))
        for builder in (EntityCooccurrence(), SimilarityTopK(), StructuralAdjacency()):
            m = builder(inputs)
            assert m.shape == (n, n)
            assert m.nnz == 0


# --------------------------------------------------------------------------- SentenceGraph


def make_graph(inputs: GraphInputs) -> SentenceGraph:
    n = len(inputs.sentences)
    passages = tuple(Passage(str(p), f"T{p}", "text") for p in range(4))
    vectors = inputs.embeddings if inputs.embeddings is not None else np.zeros((n, 4), np.float32)
    return SentenceGraph(
        passages=passages,
        sentences=inputs.sentences,
        embeddings=vectors,
        embedder=HashedBagOfWords(dim=4),
        entities=("a", "b"),
        incidence=sparse.csr_matrix(np.ones((n, 2), dtype=np.float32)),
        key_entities=inputs.key_entities,
        layers={
            "ec": EntityCooccurrence()(inputs),
            "ss": SimilarityTopK(m=2)(inputs),
            "sa": StructuralAdjacency()(inputs),
        },
    )


@given(graph_inputs(), st.floats(0, 3), st.floats(0, 3), st.floats(0, 3))
def test_adjacency_is_the_weighted_sum(inputs: GraphInputs, a: float, b: float, c: float) -> None:
    graph = make_graph(inputs)
    got = graph.adjacency({"ec": a, "ss": b, "sa": c}).toarray()
    want = (
        a * graph.layers["ec"].toarray()
        + b * graph.layers["ss"].toarray()
        + c * graph.layers["sa"].toarray()
    )
    assert np.allclose(got, want, atol=1e-5)


@given(graph_inputs(), st.integers(0, 3), st.data())
def test_neighbours_are_the_hop_ball(inputs: GraphInputs, hops: int, data: st.DataObject) -> None:
    graph = make_graph(inputs)
    n = len(graph)
    assume(n > 0)
    seeds = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
    found = graph.neighbours(seeds, hops=hops, layers=["ec", "sa"])
    adj = (graph.layers["ec"] + graph.layers["sa"]).toarray() > 0
    distance = dict.fromkeys(seeds, 0)
    frontier = set(seeds)
    for step in range(1, hops + 1):
        frontier = {j for i in frontier for j in np.nonzero(adj[i])[0] if j not in distance}
        distance.update(dict.fromkeys(frontier, step))
    assert set(found) == {j for j, d in distance.items() if d > 0}
    assert [distance[j] for j in found] == sorted(distance[j] for j in found)
    assert len(found) == len(set(found))


@given(graph_inputs())
def test_save_load_round_trip(tmp_path_factory: object, inputs: GraphInputs) -> None:
    folder = Path(tmp_path_factory.mktemp("g")) / "index"  # type: ignore[attr-defined]
    graph = make_graph(inputs)
    graph.save(folder)
    assert SentenceGraph.load(folder, graph.embedder) == graph


@given(graph_inputs(), st.integers(1, 5))
def test_ss_without_torch_gives_the_same_edges(inputs: GraphInputs, m: int) -> None:
    import sys
    from unittest import mock

    with_torch = SimilarityTopK(m=m)(inputs).toarray()
    with mock.patch.dict(sys.modules, {"torch": None}):  # import torch now raises ImportError
        without = SimilarityTopK(m=m)(inputs).toarray()
    assert np.array_equal(with_torch, without)


def test_ss_top_k_leaves_torch_thread_count_as_it_found_it() -> None:
    """The top-k runs on one torch thread (see ``_top_k``) and restores the caller's count."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
        topk_similarity_edges(x, 5)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
