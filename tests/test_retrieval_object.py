"""Retrieval as its own object and per-index data apart from the model store (issue 47,
item 5): a Retriever that refuses an expander over an index without a graph; IndexData that
keeps an index's derived data while the index lives, for at most ``size`` indexes; a model
store whose slow load does not hold up another model."""

from __future__ import annotations

import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import attrs
import pytest

from chainrag.components.index.chunkers import WordChunks
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.retrieval.expanders import IterativeHops
from chainrag.components.retrieval.judges import NoCheck
from chainrag.components.retrieval.retrievers import DenseRerank
from chainrag.context import RetrievalError, Retriever, StageContext
from chainrag.core.context import ModelStore
from chainrag.core.retrieval import IndexData
from chainrag.core.types import Passage
from chainrag.index.build import build_chunk_index
from chainrag.recipes.recipe import IndexSpec, RetrievalSpec


class Index:
    """Something derived data can be kept for (weakly referable)."""


def test_index_data_is_kept_per_index_while_it_lives_and_bounded() -> None:
    data = IndexData(size=2)
    built: list[str] = []

    def build(name: str) -> str:
        built.append(name)
        return name

    a, b, c = Index(), Index(), Index()
    assert data.get(a, "bm25", lambda: build("a")) == "a"
    assert data.get(a, "bm25", lambda: build("again")) == "a"  # built once
    data.get(b, "bm25", lambda: build("b"))
    data.get(c, "bm25", lambda: build("c"))  # a is the least recently used: dropped
    assert len(data) == 2
    assert data.get(a, "bm25", lambda: build("a2")) == "a2"
    assert built == ["a", "b", "c", "a2"]
    del b
    gc.collect()
    assert len(data) == 2  # c and a
    del a, c
    gc.collect()
    assert len(data) == 0  # an index that died takes its data with it
    with pytest.raises(ValueError, match="at least 1"):
        IndexData(size=0)


def test_index_data_holds_an_index_it_cannot_reference_weakly() -> None:
    data = IndexData(size=1)
    key = ("not", "weakly", "referable")
    assert data.get(key, "x", lambda: 1) == 1 and data.get(key, "x", lambda: 2) == 1


def test_a_slow_model_load_does_not_hold_up_another_model() -> None:
    store = ModelStore()
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "slow"

    loader = threading.Thread(target=lambda: store.get("slow", slow))
    loader.start()
    assert started.wait(10)
    t0 = time.perf_counter()
    assert store.get("fast", lambda: "fast") == "fast"  # not behind the slow load's lock
    waited = time.perf_counter() - t0
    release.set()
    loader.join(10)
    assert store.get("slow", lambda: "again") == "slow" and len(store) == 2
    assert waited < 5  # generous: it waits for nothing; the old store waited for release


def test_threads_sharing_an_empty_store_load_a_model_once() -> None:
    store, loads, gate = ModelStore(), [], threading.Barrier(8)

    def load() -> object:
        loads.append(1)
        time.sleep(0.05)  # the others arrive while this load runs
        return object()

    def ask() -> object:
        gate.wait(10)
        return store.get("minilm", load)

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: ask(), range(8)))
    assert len(loads) == 1 and all(g is got[0] for g in got)
    assert ModelStore()  # an empty store is still a store: never falsy


def test_a_retriever_refuses_an_expander_over_an_index_without_a_graph() -> None:
    embedder = HashedBagOfWords(dim=32)
    passages = (Passage("0", "Paris", "Paris is the capital of France."),)
    spec_index = IndexSpec(embedder=embedder, chunker=WordChunks(size=20))
    chunks, _ = build_chunk_index(passages, spec_index, StageContext(), None)
    spec = RetrievalSpec(DenseRerank(k=1), expander=IterativeHops(judge=NoCheck()))
    with pytest.raises(RetrievalError, match=r"expander \(IterativeHops\).* ChunkIndex"):
        Retriever(spec, chunks)("Where is Paris?", StageContext())
    plain = Retriever(attrs.evolve(spec, expander=None), chunks)("Where is Paris?", StageContext())
    assert plain.units == (0,) and plain.words == len(chunks.texts[0].split())
    ctx = StageContext(index=chunks, retrieval=attrs.evolve(spec, expander=None))
    assert ctx.retrieve("Where is Paris?") == plain
