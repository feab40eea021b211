"""The vector-search stage: exact tiled top-k against brute force, FAISS, save and load."""

from __future__ import annotations

import itertools
import subprocess
import sys
import tracemalloc
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrag.components.retrieval.search import (
    BlockedIVF,
    ExactSearch,
    FaissHNSW,
    FaissIVF,
    exact_top_k,
    in_list_order,
    lists_file,
    neighbour_step,
    spans,
)
from chainrag.protocols import VectorIndex, VectorSearch

# --------------------------------------------------------------------------- strategies

# small integers: every inner product is exact in float32, so ties are real ties
ROW = st.lists(st.integers(-2, 2).map(float), min_size=3, max_size=3)
matrices = st.lists(ROW, max_size=25).map(lambda rows: np.array(rows, np.float32).reshape(-1, 3))


def brute_force(
    queries: np.ndarray, vectors: np.ndarray, k: int, exclude: list[int] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Each query's k best by (similarity descending, id ascending), padded with -1 / -inf."""
    ids = np.full((len(queries), k), -1, np.int64)
    sims = np.full((len(queries), k), -np.inf, np.float32)
    for i, q in enumerate(queries.astype(np.float64)):
        scored = [(-float(q @ v), j) for j, v in enumerate(vectors.astype(np.float64))]
        best = sorted(s for s in scored if exclude is None or s[1] != exclude[i])[:k]
        ids[i, : len(best)] = [j for _, j in best]
        sims[i, : len(best)] = [-s for s, _ in best]
    return ids, sims


def unit_rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# --------------------------------------------------------------------------- exact


@given(
    matrices,
    matrices,
    st.integers(0, 30),
    st.integers(1, 7),
    st.integers(1, 40),
    st.data(),
)
def test_exact_top_k_is_brute_force(
    vectors: np.ndarray,
    queries: np.ndarray,
    k: int,
    columns: int,
    elements: int,
    data: st.DataObject,
) -> None:
    ids_range = st.integers(-1, max(len(vectors), 1))
    exclude = data.draw(
        st.none() | st.lists(ids_range, min_size=len(queries), max_size=len(queries))
    )
    excluded = None if exclude is None else np.array(exclude, np.int64).reshape(-1)
    ids, sims = exact_top_k(queries, vectors, k, excluded, columns=columns, elements=elements)
    want_ids, want_sims = brute_force(queries, vectors, k, exclude)
    assert ids.dtype == np.int64
    assert sims.dtype == np.float32
    assert np.array_equal(ids, want_ids)
    assert np.array_equal(sims, want_sims)


@pytest.mark.parametrize("path", ["numpy", "torch"])
def test_exact_top_k_is_brute_force_with_numpy_and_with_torch(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same best k by either top-k (torch where it is loaded, numpy else), ties included:
    the vectors' coordinates are small integers, so many similarities are equal (and exact)."""
    if path == "torch":
        import torch  # noqa: F401 - loaded, so top_k uses it
    else:
        monkeypatch.setitem(sys.modules, "torch", None)  # as if it were not installed
    rng = np.random.default_rng(3)
    vectors = rng.integers(-2, 3, (60, 4)).astype(np.float32)
    queries = rng.integers(-2, 3, (25, 4)).astype(np.float32)
    for k in (1, 5, 20):
        ids, sims = exact_top_k(queries, vectors, k, columns=7, elements=100)
        want_ids, want_sims = brute_force(queries, vectors, k, None)
        assert np.array_equal(ids, want_ids)
        assert np.array_equal(sims, want_sims)


def test_a_small_top_k_does_not_import_torch() -> None:
    """A question's graph does not pay torch's import (1.5 s of a run's GIL) for its top-k; a
    corpus build's tile of at least TORCH_FROM similarities does."""
    code = (
        "import sys, numpy as np\n"
        "from chainrag.components.retrieval.search.topk import TORCH_FROM, top_k\n"
        "top_k(np.random.rand(300, 300).astype('f4'), 5)\n"
        "print('torch' in sys.modules)\n"
        "top_k(np.random.rand(1, TORCH_FROM).astype('f4'), 5)\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


@given(st.integers(0, 200), st.integers(1, 50))
def test_spans_cover_evenly(n: int, width: int) -> None:
    parts = spans(n, width)
    assert parts[0][0] == 0
    assert parts[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))
    lengths = [stop - start for start, stop in parts]
    assert max(lengths) <= width
    assert max(lengths) - min(lengths) <= 1


def test_exact_search_reads_a_float16_memmap_in_place(tmp_path: Path) -> None:
    x = unit_rows(500, 16).astype(np.float16)
    np.save(tmp_path / "e.npy", x)
    mapped = np.load(tmp_path / "e.npy", mmap_mode="r")  # read-only: a write would raise
    index = ExactSearch(tile_columns=64, tile_elements=1000)(mapped)
    queries = x[:40].astype(np.float32)
    ids, sims = index.search(queries, 7, np.arange(40))
    want_ids, want_sims = exact_top_k(queries, x.astype(np.float32), 7, np.arange(40))
    assert np.array_equal(ids, want_ids)
    assert np.allclose(sims, want_sims, atol=1e-6)


def test_exact_search_memory_stays_within_its_tiles() -> None:
    """1,000 queries × 20,000 vectors would be 80 MB of similarities at once."""
    vectors = unit_rows(20_000, 8)
    queries = vectors[:1000]
    exact_top_k(queries[:1], vectors[:2], 1)  # imports torch (if installed) outside the trace
    tracemalloc.start()
    try:
        exact_top_k(queries, vectors, 10, columns=4096, elements=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB"


def test_empty_and_oversized_requests_are_padded() -> None:
    x = unit_rows(3, 4)
    ids, sims = ExactSearch()(x).search(x, 5, np.arange(3))
    assert ids.shape == (3, 5)
    assert np.all(ids[:, 2:] == -1)
    assert np.all(np.isneginf(sims[:, 2:]))
    ids, sims = ExactSearch()(np.zeros((0, 4), np.float32)).search(x, 2)
    assert np.all(ids == -1)
    assert ExactSearch()(x).search(x, 0)[0].shape == (3, 0)


def test_components_satisfy_the_protocols() -> None:
    x = unit_rows(10, 4)
    for search in (ExactSearch(), BlockedIVF(nlist=2), FaissHNSW(m=4), FaissIVF(nlist=2)):
        assert isinstance(search, VectorSearch)
        if not isinstance(search, ExactSearch | BlockedIVF):
            pytest.importorskip("faiss")
        assert isinstance(search(x), VectorIndex)


# --------------------------------------------------------------------------- save and load


def _searches() -> list[VectorSearch]:
    return [
        ExactSearch(),
        BlockedIVF(nlist=6, nprobe=3),
        FaissHNSW(m=8, ef_search=300),
        FaissIVF(nlist=6, nprobe=6),
    ]


@pytest.mark.parametrize("search", _searches(), ids=lambda s: type(s).__name__)
def test_save_then_load_searches_the_same(search: VectorSearch, tmp_path: Path) -> None:
    if not isinstance(search, ExactSearch | BlockedIVF):
        pytest.importorskip("faiss")
    x = unit_rows(300, 16)
    np.save(tmp_path / "e.npy", x)
    mapped = np.load(tmp_path / "e.npy", mmap_mode="r")
    index = search(mapped)
    index.save(tmp_path / "index")
    loaded = search.load(tmp_path / "index", mapped)
    got, want = loaded.search(x[:50], 10, np.arange(50)), index.search(x[:50], 10, np.arange(50))
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(got[1], want[1])
    with pytest.raises(ValueError, match=r"indexes 300×16 vectors, but the embeddings are 299×16"):
        search.load(tmp_path / "index", mapped[:299])


def test_loading_another_kind_of_file_says_what_it_is(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    x = unit_rows(100, 8)
    ExactSearch()(x).save(tmp_path / "exact")
    FaissIVF(nlist=4)(x).save(tmp_path / "ivf")
    with pytest.raises(ValueError, match="not a FAISS index file"):
        FaissHNSW().load(tmp_path / "exact", x)
    with pytest.raises(ValueError, match="holds a IndexIVFFlat, not an inner-product hnsw"):
        FaissHNSW().load(tmp_path / "ivf", x)
    with pytest.raises(ValueError, match="is not an exact vector index file"):
        ExactSearch().load(tmp_path / "ivf", x)


# --------------------------------------------------------------------------- FAISS


@pytest.mark.parametrize(
    "search",
    [FaissIVF(nlist=12, nprobe=12), FaissHNSW(m=8, ef_construction=40, ef_search=400)],
    ids=["ivf_nprobe_nlist", "hnsw_ef_n"],
)
def test_exhaustive_approximate_search_is_exact(search: VectorSearch) -> None:
    """IVF probing every list and HNSW with efSearch ≥ n visit every vector."""
    pytest.importorskip("faiss")
    x = unit_rows(400, 24, seed=3)  # no ties: the top-k is unique
    index = search(x)
    for exclude in (None, np.arange(400)):
        ids, sims = index.search(x, 10, exclude)
        want_ids, want_sims = exact_top_k(x, x, 10, exclude)
        assert np.array_equal(ids, want_ids)
        assert np.allclose(sims, want_sims, atol=1e-5)


def test_faiss_pads_and_restores_its_thread_count() -> None:
    faiss = pytest.importorskip("faiss")
    before = faiss.omp_get_max_threads()
    x = unit_rows(5, 4)
    for search in (FaissHNSW(m=4), FaissIVF(nlist=2, nprobe=2)):
        ids, sims = search(x).search(x, 8, np.arange(5))
        assert np.all(ids[:, 4:] == -1)
        assert np.all(np.isneginf(sims[:, 4:]))
        assert not np.any(ids == np.arange(5)[:, None])
        assert faiss.omp_get_max_threads() == before


def test_ivf_training_is_seeded() -> None:
    pytest.importorskip("faiss")
    x = unit_rows(2000, 16)
    assert FaissIVF(seed=1)(x) == FaissIVF(seed=1)(x)
    assert FaissIVF(seed=1)(x) != FaissIVF(seed=2)(x)


def test_the_package_imports_and_searches_exactly_without_faiss() -> None:
    code = (
        "import sys; sys.modules['faiss'] = None\n"
        "import numpy as np, chainrag.components\n"
        "from chainrag.components.retrieval.search import ExactSearch, FaissIVF\n"
        "x = np.eye(4, dtype=np.float32)\n"
        "assert ExactSearch()(x).search(x, 1)[0].tolist() == [[0], [1], [2], [3]]\n"
        "try:\n"
        "    FaissIVF()(x)\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "need faiss-cpu" in out.stdout


# --------------------------------------------------------------------------- blocked IVF


def test_blocked_ivf_probing_every_list_is_exact() -> None:
    """nprobe = nlist scans every vector: the exact top-k, by search and by self-join, in
    query blocks of any size."""
    x = unit_rows(400, 24, seed=3)  # no ties: the top-k is unique
    for query_block in (1, 37, 4096):
        index = BlockedIVF(nlist=12, nprobe=12, query_block=query_block)(x)
        for exclude in (None, np.arange(400)):
            ids, sims = index.search(x, 10, exclude)
            want_ids, want_sims = exact_top_k(x, x, 10, exclude)
            assert np.array_equal(ids, want_ids)
            assert np.allclose(sims, want_sims, atol=1e-5)
        ids, sims = index.self_join(10, rows=50)
        want_ids, want_sims = exact_top_k(x, x, 10, np.arange(400))
        assert np.array_equal(ids, want_ids)
        assert np.allclose(sims, want_sims, atol=1e-5)


@given(matrices, st.integers(1, 5), st.integers(1, 5), st.integers(1, 30))
def test_blocked_ivf_exhaustive_is_brute_force_with_ties(
    x: np.ndarray, nlist: int, extra: int, k: int
) -> None:
    """Small-integer vectors (real ties, zero rows): probing every list gives brute force's
    ids, ties by lower id, padded with -1 / -inf, a query never finding itself."""
    index = BlockedIVF(nlist=nlist, nprobe=nlist + extra, iterations=3)(x)
    exclude = np.arange(len(x))
    ids, sims = index.search(x, k, exclude)
    want_ids, want_sims = brute_force(x, x, k, exclude.tolist())
    assert np.array_equal(ids, want_ids)
    assert np.array_equal(sims, want_sims)
    assert np.array_equal(index.self_join(k, rows=3)[0], want_ids)
    stored = attrs.evolve(index, in_lists=in_list_order(x, index.order))  # lists as slices
    assert all(map(np.array_equal, stored.search(x, k, exclude), (ids, sims)))


def same_results(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    """Equal ids and bit-identical similarities (no tolerance)."""
    return all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_blocked_ivf_loaded_with_its_lists_searches_exactly_as_built(
    dtype: type, tmp_path: Path
) -> None:
    """A saved index writes its vectors in list order beside its file; loaded, it reads each
    list as a slice of that file and finds what the index built in memory (which gathers each
    list's rows) finds: the same ids, the same similarities bit for bit, by search and
    self-join, for one query and for many, with few probes."""
    x = unit_rows(900, 24, seed=4)
    np.save(tmp_path / "e.npy", x.astype(dtype))
    mapped = np.load(tmp_path / "e.npy", mmap_mode="r")
    search = BlockedIVF(nlist=15, nprobe=4, query_block=64)
    built = search(mapped)
    built.save(tmp_path / "index")
    assert np.array_equal(
        np.load(lists_file(tmp_path / "index")), in_list_order(mapped, built.order)
    )
    loaded = search.load(tmp_path / "index", mapped)
    assert loaded.in_lists is not None and built.in_lists is None
    queries = np.asarray(mapped[:200], np.float32)
    for q, exclude in ((queries[:1], None), (queries, None), (queries, np.arange(200))):
        for k in (1, 10, 100):
            assert same_results(loaded.search(q, k, exclude), built.search(q, k, exclude))
    assert same_results(loaded.self_join(10, rows=300), built.self_join(10, rows=300))


def test_blocked_ivf_saved_without_its_lists_still_loads_and_gathers(tmp_path: Path) -> None:
    """An index file written before the lists were saved beside it (none there) loads and
    gathers each list's rows, with the same results."""
    x = unit_rows(500, 16, seed=6)
    search = BlockedIVF(nlist=10, nprobe=3)
    built = search(x)
    built.save(tmp_path / "index")
    lists_file(tmp_path / "index").unlink()
    old = search.load(tmp_path / "index", x)
    assert old.in_lists is None
    assert same_results(
        old.search(x[:50], 20, np.arange(50)), built.search(x[:50], 20, np.arange(50))
    )


def test_blocked_ivf_refuses_lists_that_are_not_its_vectors_in_its_order(tmp_path: Path) -> None:
    x = unit_rows(300, 8, seed=7)
    search = BlockedIVF(nlist=6, nprobe=2)
    search(x).save(tmp_path / "index")
    beside = lists_file(tmp_path / "index")
    for wrong in (x, x[:, :4], x.astype(np.float64), np.zeros((300, 8), np.float32)):
        np.save(beside, wrong)
        with pytest.raises(ValueError, match="does not hold these vectors in the index's list"):
            search.load(tmp_path / "index", x)
    beside.write_bytes(b"not an npy file")
    with pytest.raises(ValueError, match="is not a file of vectors in list order"):
        search.load(tmp_path / "index", x)


def test_blocked_ivf_is_seeded_and_recalls_most_with_few_probes() -> None:
    x = unit_rows(3000, 16, seed=5)
    assert BlockedIVF(seed=1)(x) == BlockedIVF(seed=1)(x)
    assert BlockedIVF(seed=1)(x) != BlockedIVF(seed=2)(x)
    index = BlockedIVF(nlist=20, nprobe=4)(x)
    ids, _ = index.self_join(10, rows=500)
    want, _ = exact_top_k(x, x, 10, np.arange(3000))
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, want, strict=True)])
    assert 0.3 < recall < 1.0  # approximate, yet no accident


@given(matrices, st.integers(1, 4), st.integers(0, 3))
def test_a_neighbour_step_keeps_the_best_of_neighbours_and_their_neighbours(
    x: np.ndarray, k: int, seed: int
) -> None:
    """Against brute force over each row's own candidates: the best k (ties by lower id) of
    its found neighbours, their neighbours and the k best rows that found it; never itself,
    each id once, never worse."""
    n = len(x)
    rng = np.random.default_rng(seed)
    ids = np.full((n, k), -1, np.int64)
    for i in range(n):  # a few neighbours per row, some rows short of k
        others = [j for j in range(n) if j != i]
        chosen = rng.permutation(others)[: rng.integers(0, k + 1)] if others else []
        ids[i, : len(chosen)] = chosen
    sims = np.where(ids >= 0, np.einsum("id,ijd->ij", x, x[np.maximum(ids, 0)]), -np.inf)
    ids, sims = best_first_rows(ids, sims.astype(np.float32))
    at = rng.permutation(n)  # vector i stored at row at[i]
    stored = np.empty_like(x)
    stored[at] = x
    got_ids, got_sims = neighbour_step(stored, at, ids, sims)
    for i in range(n):
        pool = {int(j) for j in ids[i] if j >= 0}
        pool |= {int(m) for j in ids[i] if j >= 0 for m in ids[j] if m >= 0}
        found_by = sorted(
            (-float(sims[j][list(ids[j]).index(i)]), j) for j in range(n) if i in ids[j]
        )
        pool |= {j for _, j in found_by[:k]}
        pool.discard(i)
        best = sorted((-float(x[i] @ x[j]), j) for j in pool)[:k]
        assert got_ids[i].tolist() == [j for _, j in best] + [-1] * (k - len(best))
        assert np.allclose(got_sims[i][: len(best)], [-s for s, _ in best], atol=1e-6)
        assert all(got_sims[i] >= sims[i] - 1e-6)


def best_first_rows(ids: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((ids, -sims), axis=1)
    return np.take_along_axis(ids, order, 1), np.take_along_axis(sims, order, 1)


def test_blocked_ivf_refinement_raises_recall_and_leaves_exhaustive_search_exact() -> None:
    x = unit_rows(3000, 16, seed=5)
    want, _ = exact_top_k(x, x, 10, np.arange(3000))

    def recall(refine: int, nprobe: int) -> float:
        ids, _ = BlockedIVF(nlist=20, nprobe=nprobe, refine=refine)(x).self_join(10, rows=500)
        return float(np.mean([len(set(a) & set(b)) for a, b in zip(ids, want, strict=True)]))

    assert recall(0, 4) < recall(1, 4) < 10
    assert recall(1, 20) == 10.0


def test_self_join_of_every_index_excludes_the_row_itself() -> None:
    pytest.importorskip("faiss")
    x = unit_rows(200, 8, seed=2)
    want, _ = exact_top_k(x, x, 5, np.arange(200))
    for search in (ExactSearch(), FaissIVF(nlist=4, nprobe=4), BlockedIVF(nlist=4, nprobe=4)):
        ids, _ = search(x).self_join(5, rows=64)
        assert np.array_equal(ids, want), type(search).__name__
