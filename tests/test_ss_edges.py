"""SS edges through the vector-search stage: today's exact edges to the bit, at any n."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import sparse

from chainrag.components.index.edges import (
    BLOCK_ELEMENTS,
    SimilarityTopK,
    nearest_others,
    query_rows,
    similarity_edges,
    topk_similarity_edges,
)
from chainrag.components.retrieval.search import ExactSearch, FaissHNSW, FaissIVF
from chainrag.core.types import GraphInputs, Sentence


def clustered(n: int, d: int, seed: int) -> np.ndarray:
    """Real-ish embeddings: unit vectors around a few topics, with exact duplicates."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((max(1, n // 50), d))
    x = topics[rng.integers(0, len(topics), n)] + 0.3 * rng.standard_normal((n, d))
    x[rng.integers(0, n, n // 20)] = x[rng.integers(0, n, n // 20)]  # duplicate sentences
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def inputs_for(x: np.ndarray) -> GraphInputs:
    sentences = tuple(Sentence(i, f"s{i}", 0, "T", i, 0, 1) for i in range(len(x)))
    return GraphInputs(sentences, (), x)


def same_arrays(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(
    ("n", "d", "block"),
    [
        (1, 8, 4096),
        (2, 8, 4096),
        (97, 8, 5),
        (1024, 32, 4096),
        (1500, 384, 4096),
        (4097, 64, 4096),  # the old rule's last block holds one row
        (8192, 16, 4096),  # WHOLE_ROWS: the last n with the reference's blocks
    ],
)
def test_exact_search_gives_todays_edges_to_the_bit(n: int, d: int, block: int) -> None:
    ties = np.eye(d, dtype=np.float32)[np.arange(n) % d]  # exact ties everywhere
    for x in (clustered(n, d, seed=n), ties) if n <= 4097 else (clustered(n, d, seed=n),):
        want = topk_similarity_edges(x, 10, block=block)
        assert same_arrays(nearest_others(x, 10, ExactSearch(), block=block), want)


def test_past_whole_rows_exact_search_gives_todays_edges_to_float32_rounding() -> None:
    """Past WHOLE_ROWS the search tiles its products over columns, and a BLAS may round a
    dot product differently by the width of the matrix it is part of (numpy's OpenBLAS on an
    AMD EPYC does; on an Intel Xeon it did not): the edges are then today's up to float32
    rounding, neighbours swapped only among similarities equal to that rounding."""
    x = clustered(12_000, 16, seed=12_000)
    rows, cols, sims = nearest_others(x, 10, ExactSearch(), block=4096)
    want_rows, want_cols, want_sims = topk_similarity_edges(x, 10, block=4096)
    assert np.array_equal(rows, want_rows) and cols.dtype == want_cols.dtype
    assert sims.dtype == want_sims.dtype == np.float32
    rounding = 1e-6  # a few float32 ulps of a similarity of 16 products near 1
    assert np.allclose(sims, want_sims, rtol=0, atol=rounding)
    x64 = x.astype(np.float64)
    true = np.einsum("ij,ij->i", x64[rows], x64[cols])  # each edge's exact similarity
    assert np.allclose(true, sims, rtol=0, atol=rounding) and not np.any(cols == rows)
    assert all(len(set(row)) == 10 for row in cols.reshape(-1, 10))  # no neighbour twice
    swapped = cols != want_cols
    # where a neighbour differs, the reference's choice is as similar to rounding
    ref_true = np.einsum("ij,ij->i", x64[rows[swapped]], x64[want_cols[swapped]])
    assert np.allclose(true[swapped], ref_true, rtol=0, atol=2 * rounding)


@pytest.mark.parametrize("weighting", ["binary", "similarity"])
def test_similarity_topk_keeps_todays_layer(weighting: str) -> None:
    x = clustered(3000, 48, seed=7)
    got = SimilarityTopK(m=10, weighting=weighting)(inputs_for(x))  # type: ignore[arg-type]
    want = similarity_edges(
        *topk_similarity_edges(x, 10),
        3000,
        mutual=False,
        weighting=weighting,  # type: ignore[arg-type]
    )
    assert got.dtype == want.dtype
    assert (got != want).nnz == 0


ROW = st.lists(st.integers(-2, 2).map(float), min_size=3, max_size=3)


@given(
    st.lists(ROW, max_size=30),
    st.integers(1, 6),
    st.integers(1, 9),
    st.integers(1, 6),
    st.integers(1, 60),
)
def test_exact_tiles_of_any_shape_pick_the_same_edges(
    rows: list[list[float]], m: int, block: int, columns: int, elements: int
) -> None:
    """Integer vectors: every product exact, so any tiling must give the same result."""
    x = np.array(rows, np.float32).reshape(-1, 3)
    search = ExactSearch(tile_columns=columns, tile_elements=elements)
    assert same_arrays(nearest_others(x, m, search, block=block), topk_similarity_edges(x, m))


def test_query_blocks_stay_large_at_any_n() -> None:
    assert query_rows(1000, 4096) == 4096
    assert query_rows(8192, 4096) == BLOCK_ELEMENTS // 8192  # whole rows, as before
    assert query_rows(1_000_000, 4096) == 4096  # the old rule: 4 rows
    assert query_rows(1_000_000, 300) == 300


def test_a_float16_memmap_is_read_in_blocks(tmp_path: Path) -> None:
    x = np.random.default_rng(1).standard_normal((3000, 32))  # no ties
    np.save(tmp_path / "e.npy", (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16))
    mapped = np.load(tmp_path / "e.npy", mmap_mode="r")  # read-only
    rows, cols, sims = nearest_others(mapped, 5, ExactSearch(tile_columns=1000), block=700)
    want = topk_similarity_edges(np.asarray(mapped, np.float32), 5)
    assert np.array_equal(rows, want[0])
    assert np.array_equal(cols, want[1])
    assert np.allclose(sims, want[2], atol=1e-6)


@pytest.mark.parametrize(
    "search",
    [FaissIVF(nlist=10, nprobe=10), FaissHNSW(m=8, ef_construction=40, ef_search=500)],
    ids=["ivf_nprobe_nlist", "hnsw_ef_n"],
)
def test_exhaustive_approximate_search_gives_the_exact_edges(search: object) -> None:
    pytest.importorskip("faiss")
    x = np.random.default_rng(5).standard_normal((500, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)  # no ties: the top-m is unique
    exact = SimilarityTopK(m=10)(inputs_for(x))
    approx = SimilarityTopK(m=10, search=search)(inputs_for(x))  # type: ignore[arg-type]
    assert (approx.astype(bool) != exact.astype(bool)).nnz == 0
    fine = SimilarityTopK(m=10, weighting="similarity")
    coarse = SimilarityTopK(m=10, weighting="similarity", search=search)  # type: ignore[arg-type]
    assert abs(fine(inputs_for(x)) - coarse(inputs_for(x))).max() < 1e-5


def test_approximate_layers_are_valid_adjacencies() -> None:
    pytest.importorskip("faiss")
    x = np.random.default_rng(6).standard_normal((300, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    for search in (FaissIVF(nlist=16, nprobe=1), FaissHNSW(m=4, ef_search=4)):
        layer = SimilarityTopK(m=10, search=search)(inputs_for(x))
        assert sparse.isspmatrix_csr(layer)
        assert (layer != layer.T).nnz == 0
        assert layer.diagonal().sum() == 0
        assert (layer.sum(axis=1) >= 1).all()
