"""The EC layer's bounds (``max_sentences``, ``nearest``) and memory guard (``max_edges``).

The unbounded default must give the paper's edges bit for bit (checked against the layer as it
was built before the bounds existed, kept here as a reference); each bound is checked against a
definition written with plain loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from chainrag.components.index.edges import (
    EntityCooccurrence,
    LayerTooLargeError,
    cooccurrence_bounds,
    cooccurrence_edges,
    key_incidence,
    key_names,
    nearest_pair_count,
    nearest_pairs,
    row_blocks,
    sentence_counts,
)
from chainrag.core.errors import ChainragError
from chainrag.core.types import GraphInputs, ScoredEntity
from chainrag.recipes.recipe import parse_yaml, structure

from .test_graph_properties import graph_inputs, permuted, sentences_for

WEIGHTINGS = ("binary", "count", "score_sum")
NAMES = st.sampled_from(["paris", "france", "bergman", "1889", "x", "y", "z"])
SCORES = st.sampled_from([0.0, 0.25, 1.0, 2.5, -1.0])


@st.composite
def scored_keys(draw: st.DrawFn, max_n: int = 16) -> tuple[tuple[ScoredEntity, ...], ...]:
    """Key entities of up to ``max_n`` sentences, one score per name (as the scorer gives)."""
    rows = draw(st.lists(st.lists(NAMES, max_size=3, unique=True), max_size=max_n))
    score = {name: draw(SCORES) for name in sorted({e for row in rows for e in row})}
    return tuple(tuple(ScoredEntity(e, score[e]) for e in row) for row in rows)


def inputs_of(keys: tuple[tuple[ScoredEntity, ...], ...]) -> GraphInputs:
    return GraphInputs(sentences_for([0] * len(keys)), keys)


def reference_cooccurrence(
    incidence: sparse.csr_matrix, scores: np.ndarray, weighting: str
) -> sparse.csr_matrix:
    """``cooccurrence_edges`` as it was before the bounds (one product, no blocks)."""
    shared = sparse.csr_matrix(incidence @ incidence.T, dtype=np.float32)
    shared.data[np.repeat(np.arange(shared.shape[0]), np.diff(shared.indptr)) == shared.indices] = 0
    shared.eliminate_zeros()
    if weighting == "binary":
        shared.data[:] = 1.0
    elif weighting == "score_sum":
        weights = sparse.diags(np.maximum(scores, 0.0).astype(np.float32))
        summed = sparse.csr_matrix(incidence @ weights @ incidence.T, dtype=np.float32)
        pattern = shared.copy()
        pattern.data[:] = 1.0
        shared = sparse.csr_matrix(pattern.multiply(summed) + pattern * 1e-6, dtype=np.float32)
    shared.sort_indices()
    return shared


def assert_identical(a: sparse.csr_matrix, b: sparse.csr_matrix) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.array_equal(a.indptr, b.indptr)
    assert np.array_equal(a.indices, b.indices)
    assert a.data.tobytes() == b.data.tobytes()


def sentence_sets(keys: tuple[tuple[ScoredEntity, ...], ...]) -> dict[str, list[int]]:
    """Each key entity's sentences, in index order."""
    out: dict[str, list[int]] = {}
    for i, row in enumerate(keys):
        for name in dict.fromkeys(e.name for e in row):
            out.setdefault(name, []).append(i)
    return out


def assert_valid(m: sparse.csr_matrix, n: int) -> None:
    dense = m.toarray()
    assert m.shape == (n, n) and m.dtype == np.float32
    assert np.array_equal(dense, dense.T)
    assert np.all(np.diag(dense) == 0) and np.all(dense >= 0)


# --------------------------------------------------------------------------- unbounded


@given(scored_keys(), st.sampled_from(WEIGHTINGS), st.integers(1, 40))
def test_unbounded_layer_is_the_paper_layer_bit_for_bit(
    keys: tuple[tuple[ScoredEntity, ...], ...], weighting: str, block: int
) -> None:
    incidence, scores = key_incidence(keys, len(keys) + 2)
    want = reference_cooccurrence(incidence, scores, weighting)
    got = cooccurrence_edges(incidence, scores, weighting, block_products=block)  # type: ignore[arg-type]
    assert_identical(got, want)
    exact = cooccurrence_edges(incidence, scores, weighting, max_entries=want.nnz)  # type: ignore[arg-type]
    assert_identical(exact, want)  # written into arrays of exactly its size
    built = EntityCooccurrence(weighting)(inputs_of(keys))  # type: ignore[arg-type]
    assert_identical(built, reference_cooccurrence(*key_incidence(keys, len(keys)), weighting))


@given(scored_keys())
def test_bounds_hold_the_stored_entries(keys: tuple[tuple[ScoredEntity, ...], ...]) -> None:
    incidence, scores = key_incidence(keys, len(keys))
    lower, upper = cooccurrence_bounds(sentence_counts(incidence))
    assert lower <= cooccurrence_edges(incidence, scores, "binary").nnz <= upper


@given(st.lists(st.integers(0, 50), max_size=30), st.integers(1, 60))
def test_row_blocks_cover_the_rows_in_order(costs: list[int], budget: int) -> None:
    blocks = row_blocks(np.asarray(costs, dtype=np.int64), budget)
    assert [i for a, b in blocks for i in range(a, b)] == list(range(len(costs)))
    for a, b in blocks:
        assert b > a
        assert sum(costs[a + 1 : b]) < budget


# --------------------------------------------------------------------------- max_sentences


@given(scored_keys(), st.integers(1, 6), st.sampled_from(WEIGHTINGS))
def test_max_sentences_links_only_through_rarer_entities(
    keys: tuple[tuple[ScoredEntity, ...], ...], most: int, weighting: str
) -> None:
    n = len(keys)
    m = EntityCooccurrence(weighting, max_sentences=most)(inputs_of(keys))  # type: ignore[arg-type]
    assert_valid(m, n)
    allowed = {e for e, where in sentence_sets(keys).items() if len(where) <= most}
    sets = [{e.name for e in row} & allowed for row in keys]
    dense = m.toarray()
    for i in range(n):
        for j in range(n):
            assert bool(dense[i, j] > 0) == (i != j and bool(sets[i] & sets[j]))
    if weighting == "count":
        assert all(
            dense[i, j] == len(sets[i] & sets[j]) for i in range(n) for j in range(n) if i != j
        )


@given(graph_inputs(), st.integers(1, 4), st.randoms(use_true_random=False))
def test_max_sentences_is_permutation_equivariant(
    inputs: GraphInputs, most: int, rnd: object
) -> None:
    order = list(range(len(inputs.sentences)))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    builder = EntityCooccurrence(max_sentences=most)
    a = builder(inputs).toarray()
    assert np.array_equal(builder(permuted(inputs, order)).toarray(), a[np.ix_(order, order)])


@given(scored_keys())
def test_max_sentences_at_the_largest_count_changes_nothing(
    keys: tuple[tuple[ScoredEntity, ...], ...],
) -> None:
    largest = max([len(v) for v in sentence_sets(keys).values()], default=1)
    for weighting in WEIGHTINGS:
        bounded = EntityCooccurrence(weighting, max_sentences=largest)(inputs_of(keys))  # type: ignore[arg-type]
        assert_identical(bounded, EntityCooccurrence(weighting)(inputs_of(keys)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- nearest


def nearest_reference(keys: tuple[tuple[ScoredEntity, ...], ...], k: int) -> np.ndarray:
    """How many key entities link i and j under ``nearest: k``, by its definition."""
    n = len(keys)
    out = np.zeros((n, n))
    for where in sentence_sets(keys).values():
        for p, i in enumerate(where):
            for j in where[p + 1 : p + 1 + k]:
                out[i, j] += 1
                out[j, i] += 1
    return out


@given(scored_keys(), st.integers(1, 4))
def test_nearest_links_each_entity_s_neighbours_in_index_order(
    keys: tuple[tuple[ScoredEntity, ...], ...], k: int
) -> None:
    n = len(keys)
    want = nearest_reference(keys, k)
    count = EntityCooccurrence("count", nearest=k)(inputs_of(keys))
    binary = EntityCooccurrence("binary", nearest=k)(inputs_of(keys))
    assert_valid(count, n)
    assert_valid(binary, n)
    assert np.array_equal(count.toarray(), want)
    assert np.array_equal(binary.toarray(), (want > 0).astype(np.float32))
    unbounded = EntityCooccurrence("binary")(inputs_of(keys)).toarray()
    assert np.all(binary.toarray() <= unbounded)  # a subset of the paper's layer


@given(scored_keys(), st.integers(1, 3))
def test_nearest_bounds_each_entity_s_degree(
    keys: tuple[tuple[ScoredEntity, ...], ...], k: int
) -> None:
    incidence, _ = key_incidence(keys, len(keys))
    rows, cols, entity = nearest_pairs(incidence, k)
    assert len(rows) == nearest_pair_count(sentence_counts(incidence), k)
    assert np.all(rows < cols)
    for e in np.unique(entity):
        ends = np.concatenate([rows[entity == e], cols[entity == e]])
        assert np.bincount(ends).max() <= 2 * k


@given(scored_keys())
def test_nearest_keeps_what_ec_connects(keys: tuple[tuple[ScoredEntity, ...], ...]) -> None:
    """Each entity's sentences are chained, so EC's connected components do not change."""
    full = EntityCooccurrence()(inputs_of(keys))
    chained = EntityCooccurrence(nearest=1)(inputs_of(keys))
    a = connected_components(full, directed=False)[1]
    b = connected_components(chained, directed=False)[1]
    assert all((a[i] == a[j]) == (b[i] == b[j]) for i in range(len(a)) for j in range(len(a)))


@given(scored_keys(), st.sampled_from(WEIGHTINGS))
def test_nearest_past_the_largest_count_is_the_paper_layer(
    keys: tuple[tuple[ScoredEntity, ...], ...], weighting: str
) -> None:
    largest = max([len(v) for v in sentence_sets(keys).values()], default=1)
    bounded = EntityCooccurrence(weighting, nearest=largest)(inputs_of(keys)).toarray()  # type: ignore[arg-type]
    full = EntityCooccurrence(weighting)(inputs_of(keys)).toarray()  # type: ignore[arg-type]
    assert np.array_equal(bounded > 0, full > 0)
    assert np.allclose(bounded, full, rtol=1e-6, atol=1e-7)


@given(graph_inputs(), st.integers(1, 3))
def test_nearest_ignores_passage_labels(inputs: GraphInputs, k: int) -> None:
    relabelled = GraphInputs(
        tuple(sentences_for([s.passage + 5 for s in inputs.sentences])), inputs.key_entities
    )
    builder = EntityCooccurrence(nearest=k, max_sentences=3)
    assert_identical(builder(inputs), builder(relabelled))


# --------------------------------------------------------------------------- the guard


def hub_keys(n: int) -> tuple[tuple[ScoredEntity, ...], ...]:
    """n sentences: all mention 'american', every third 'first', each its own name."""
    rows = [["american", f"s{i}"] + (["first"] if i % 3 == 0 else []) for i in range(n)]
    return tuple(tuple(ScoredEntity(e, 1.0) for e in row) for row in rows)


def test_a_layer_over_max_edges_is_an_error_that_says_why() -> None:
    keys = hub_keys(60)  # 'american' alone: 60·59/2 = 1,770 edges
    with pytest.raises(LayerTooLargeError, match=r"would hold between 1,770 and 1,960 edges") as e:
        EntityCooccurrence(max_edges=1000)(inputs_of(keys))
    message = str(e.value)
    assert isinstance(e.value, ChainragError)
    assert "more than its max_edges, 1,000" in message
    assert "the largest: 'american' (60 sentences), 'first' (20)," in message
    assert "GiB" in message and "index.ner.labels" in message
    assert (
        "max_sentences: 20 or less (no EC edges from 1 key entity then), or nearest: 10 or less"
        in message
    )


def test_the_guard_stops_at_the_block_that_passes_the_limit() -> None:
    keys = tuple((ScoredEntity(f"pair{i // 2}", 1.0),) for i in range(400))  # 200 edges
    incidence, scores = key_incidence(keys, len(keys))
    found = r"between 101 and 200 edges \(at least 101 in its first 201 rows\)"
    with pytest.raises(LayerTooLargeError, match=found):
        cooccurrence_edges(incidence, scores, "binary", max_entries=200, block_products=2)
    assert cooccurrence_edges(incidence, scores, "binary", max_entries=400).nnz == 400


def test_the_suggested_bounds_fit() -> None:
    keys = hub_keys(60)
    EntityCooccurrence(max_edges=1000, max_sentences=20)(inputs_of(keys))
    EntityCooccurrence(max_edges=1000, nearest=10)(inputs_of(keys))
    with pytest.raises(LayerTooLargeError, match=r"nearest: 20\) would hold between 990 and 1,180"):
        EntityCooccurrence(max_edges=1000, nearest=20)(inputs_of(keys))


def test_max_edges_none_is_unlimited_and_names_line_up() -> None:
    keys = hub_keys(30)
    assert EntityCooccurrence(max_edges=None)(inputs_of(keys)).nnz == 30 * 29
    incidence, _ = key_incidence(keys, 30)
    counts = dict(zip(key_names(keys), sentence_counts(incidence).tolist(), strict=True))
    assert counts["american"] == 30 and counts["first"] == 10


# --------------------------------------------------------------------------- recipes


def recipe_with(ec: str) -> str:
    return f"name: r\nindex:\n  splitter: {{kind: spacy}}\n  edges:\n    ec: {ec}\n"


def test_recipe_parameters_are_checked() -> None:
    good = recipe_with("{kind: entity_cooccurrence, nearest: 10, max_sentences: 500}")
    edges = structure(parse_yaml(good, "r.yaml"), "r.yaml").index.edges  # type: ignore[union-attr]
    assert edges["ec"] == EntityCooccurrence(nearest=10, max_sentences=500)
    for bad, where in [("nearest: 0", "nearest"), ("max_edges: 2.5", "max_edges"),
                       ("max_sentences: no", "max_sentences")]:  # fmt: skip
        text = recipe_with(f"{{kind: entity_cooccurrence, {bad}}}")
        with pytest.raises(ChainragError, match=r"@ r\.yaml\.index\.edges\.ec") as e:
            structure(parse_yaml(text, "r.yaml"), "r.yaml")
        assert where in str(e.value)
