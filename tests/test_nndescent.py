"""The ``nndescent`` search (chainrag/components/retrieval/search/nndescent.py): the SS layer's
k-NN graph by
pynndescent, read best first without the row itself; exact search for queries; saved and
loaded; the same layer as exact search on a corpus small enough to join exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chainrag.components.index.edges import SimilarityTopK
from chainrag.components.retrieval.search import ExactSearch
from chainrag.components.retrieval.search.nndescent import NNDescentSearch
from chainrag.core.types import GraphInputs, Sentence


def clustered(n: int, d: int = 32, seed: int = 0) -> np.ndarray:
    """n L2-normalised vectors around n // 20 centres: a structure NN-descent can find."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n // 20), d))
    x = centres[rng.integers(0, len(centres), n)] + 0.3 * rng.standard_normal((n, d))
    out: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return out


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    hits = sum(len(set(f) & set(t)) for f, t in zip(found.tolist(), truth.tolist(), strict=True))
    return hits / truth.size


@pytest.mark.slow
def test_the_self_join_finds_the_exact_neighbours_best_first_without_itself() -> None:
    x = clustered(3000)
    ids, sims = NNDescentSearch(n_neighbors=16)(x).self_join(10, 1024)
    truth, truth_sims = ExactSearch()(x).self_join(10, 1024)
    assert ids.shape == sims.shape == (3000, 10)
    assert not (ids == np.arange(3000)[:, None]).any()
    assert (np.diff(sims, axis=1) <= 0).all()  # best first
    assert np.allclose(sims, np.einsum("rd,rkd->rk", x, x[ids]), atol=1e-5)
    assert recall(ids, truth) > 0.95
    assert (sims[:, 0] <= truth_sims[:, 0] + 1e-6).all()  # never better than exact


def test_a_small_corpus_is_joined_exactly_and_padded() -> None:
    x = clustered(6)
    index = NNDescentSearch(n_neighbors=8)(x)
    ids, sims = index.self_join(10, 4)
    truth, truth_sims = ExactSearch()(x).self_join(10, 4)
    assert np.array_equal(ids, truth)
    assert np.allclose(sims, truth_sims, atol=1e-6)
    assert (ids[:, 5:] == -1).all()
    assert np.isneginf(sims[:, 5:]).all()


def test_queries_are_searched_exactly() -> None:
    x = clustered(200)
    index = NNDescentSearch(n_neighbors=4)(x)
    q = clustered(5, seed=1)
    found = index.search(q, 7)
    expected = ExactSearch()(x).search(q, 7)
    assert np.array_equal(found[0], expected[0])
    assert np.allclose(found[1], expected[1])


@pytest.mark.slow
def test_saved_and_loaded_it_is_the_same_graph(tmp_path: Path) -> None:
    x = clustered(500)
    search = NNDescentSearch(n_neighbors=8)
    index = search(x)
    index.save(tmp_path / "ss.index")
    again = search.load(tmp_path / "ss.index", x)
    assert again == index
    assert search(x) == index  # built again with the same seed: the same graph
    with pytest.raises(ValueError, match="indexes 500"):
        search.load(tmp_path / "ss.index", x[:400])
    (tmp_path / "bad.index").write_text("not an index\n")
    with pytest.raises(ValueError, match="not an nndescent index file"):
        search.load(tmp_path / "bad.index", x)


def test_the_ss_layer_through_it_is_the_exact_layer_on_a_small_corpus() -> None:
    x = clustered(30)
    sentences = tuple(Sentence(i, f"s{i}", i // 5, "", i % 5, 0, 2) for i in range(30))
    graph = GraphInputs(sentences, (), x)
    exact = SimilarityTopK(m=5)(graph)
    ours = SimilarityTopK(m=5, search=NNDescentSearch(n_neighbors=32))(graph)
    assert (exact != ours).nnz == 0
