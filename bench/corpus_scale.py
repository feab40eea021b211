"""Corpus scale: the sentence graph's graph part at 20k, 100k and 1M sentences, stage by stage.

    .venv/bin/python bench/corpus_scale.py [--sizes 20000 100000 1000000] [--out FILE]
        [--index runs/corpus/2wiki-graph] [--noise 0.01] [--seed 0] [--sample 1000]
        [--queries 50] [--search-budget 900] [--reference-max 25000]
        [--cache /tmp/corpus_scale] [--resume] [--stages STAGE ...]

Real data: the corpus index of HippoRAG's 2Wiki corpus + the 2Wiki dev paragraphs (``--index``,
opened read-only): 23,308 spaCy-split sentences, their passages and positions, their spaCy
entity mentions, their all-MiniLM-L6-v2 vectors. At n ≤ 23,308 the real sentences cut to n.
Past them, copies of the real corpus, copy c (c ≥ 1) made so that the real structure stays:

- passages and positions: the real ones, passage ids shifted per copy (SA sees real passages);
- entities: each sentence keeps its real entity list, but in copy c an entity of real
  document frequency df is renamed (to a name of that copy only) with chance k/(df + k), k set
  per copy so that the expected new names equal Heaps' law fitted on the real corpus
  (V ∝ n^β over prefixes of the sentences in a random passage order): rare entities mostly
  become new rare entities, hubs ("american", "first") keep their share of the sentences;
- vectors: the real MiniLM vectors under a fixed random orthogonal matrix per copy that keeps
  the corpus's mean direction (so every copy shares the real vectors' common component) plus
  Gaussian noise of ``--noise`` per coordinate, re-normalised; never i.i.d. random vectors.

Stages, each in a fresh process whose peak RSS is read from /proc/self/status (VmHWM, reset
before the stage through /proc/self/clear_refs): the stage's baseline (RSS with its inputs
loaded) and its peak. Key entities (BM25, α = 60); EC (the paper's, with its 150M-edge guard,
and ``nearest: 10``); SS top-10 by exact search, ``faiss_hnsw``, ``faiss_ivf`` and
``blocked_ivf`` at their defaults (index build, then all n rows searched), with recall@10 (of
the layer's neighbours where the layer is built, else of the sample's search) of
the exact top-10 on ``--sample`` rows. The search of those rows, timed, tells how long a FAISS
layer's search of all n rows takes: where more than ``--search-budget`` seconds, the layer is
estimated from it (the index is still built and timed) and marked ≈. ``blocked_ivf`` is
always run whole: it searches all rows list by list, so a sample's time does not scale.
SA (window 3); the entity index (``entity_vocabulary``); the authors'-code-style reference of
bench/graph_build.py up to ``--reference-max`` (it holds an n×n similarity matrix). Seed
retrieval per sub-question: MiniLM query embedding (torch on one thread) + top-100 search,
over ``--queries`` 2Wiki dev questions, after 5 others (their searches: "cold") and, for FAISS
indexes (opened memory-mapped from the file the SS stage wrote, as a corpus index opens them),
1,000 searches of stored vectors; also one forward pass of the same network, i.e. the query
embedding without FlagModel's per-call overhead. The encoder floor: spaCy NER and MiniLM on
2,000 real sentences. Measurements are saved under ``--cache``; ``--resume`` reuses those
made with the same parameters and ``--stages`` measures only some stages, so that a long run
can be cut into windows; the tables show every measurement made, with the dates they span.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import cattrs
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chainrag.components.index.edges import (  # noqa: E402
    EntityCooccurrence,
    LayerTooLargeError,
    SimilarityTopK,
    StructuralAdjacency,
    key_incidence,
    key_names,
    sentence_counts,
)
from chainrag.components.index.key_entities import BM25KeyEntities, entity_vocabulary  # noqa: E402
from chainrag.components.retrieval.search import (  # noqa: E402
    BlockedIVF,
    ExactSearch,
    FaissHNSW,
    FaissIVF,
    exact_top_k,
)
from chainrag.core.types import GraphInputs, Sentence  # noqa: E402
from chainrag.index.build import digest  # noqa: E402
from chainrag.recipes.structure import unstructure  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from helpers import (  # noqa: E402
    note,
    perturbed_copy,
    recall,
    sample_rows,
    timed,
    write_copies,
)

M = 10
CANDIDATES = 100
WARM_UP = 5
STEADY = 1000
ENCODER_SENTENCES = 2000
SEARCHES: dict[str, Any] = {
    "exact": ExactSearch(),
    "hnsw": FaissHNSW(),
    "ivf": FaissIVF(),
    "blocked_ivf": BlockedIVF(),
}
GRAPH_STAGES = [
    "key_entities",
    "ec_paper",
    "ec_nearest",
    "ss_exact",
    "ss_hnsw",
    "ss_ivf",
    "ss_blocked_ivf",
    "sa",
    "entity_index",
]
CONFIGS = {
    "paper: EC unbounded, SS exact": ("ec_paper", "ss_exact"),
    "corpus: EC nearest 10, SS faiss_ivf": ("ec_nearest", "ss_ivf"),
    "corpus: EC nearest 10, SS faiss_hnsw": ("ec_nearest", "ss_hnsw"),
    "corpus: EC nearest 10, SS blocked_ivf": ("ec_nearest", "ss_blocked_ivf"),
}
COMMON = ("key_entities", "sa", "entity_index")


# --------------------------------------------------------------------------- typed records


@attrs.frozen
class Config:
    """What every stage is measured with: the real index, the copies' noise and seed, the
    SS sample and budget, the seed-retrieval queries, where vectors and results are cached,
    the real corpus's size and its Heaps β."""

    index: str
    noise: float
    seed: int
    sample: int
    queries: int
    search_budget: float
    cache: str
    resume: bool
    real: int
    reference_max: int
    beta: float

    def parameters(self, stage: str) -> dict[str, Any]:
        """What a measurement depends on: reused by --resume only when these are equal."""
        keys = ["index", "noise", "seed", "beta", "sample", "queries", "search_budget"]
        return {k: getattr(self, k) for k in keys} | {"searches": repr(SEARCHES), "stage": stage}

    def json(self) -> str:
        return json.dumps(attrs.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Config:
        return cls(**json.loads(text))


@attrs.frozen
class Percentiles:
    median: float
    p95: float

    def __add__(self, other: Percentiles) -> Percentiles:
        return Percentiles(self.median + other.median, self.p95 + other.p95)


@attrs.frozen
class Measurement:
    """One stage at one n, as its worker measured it (only the fields the stage has are set).

    The run itself (:func:`helpers.timed`): ``seconds``, ``baseline_mib``, ``peak_mib``,
    ``load``; ``failed`` (the worker's exit status) or ``refused`` (the EC guard's message);
    ``estimated``: ``seconds`` scaled up from a sample's search. A layer: its ``edges``; an SS
    layer: the sample's search (``sample_s`` over ``rows``), ``recall`` of the layer's
    neighbours (``search_recall``: the sample search's), its index's ``build_s`` and, where the
    search is estimated, ``build_peak_mib``. Key entities: ``entities``, ``mentions``,
    ``key_entities``, ``top_key``, ``singletons``. The reference: its ``stages``' seconds.
    Seed retrieval: ``embed``, ``forward``, ``search`` and ``call`` in ms, ``overlap`` with
    exact top-100, ``cold`` (ms) and ``forward_gap``. Encoders: ``sentences``, ``ner_per_s``,
    ``embed_per_s``. ``date``: when it was measured.
    """

    seconds: float | None = None
    baseline_mib: float | None = None
    peak_mib: float | None = None
    load: float = 0.0
    failed: str | None = None
    refused: str | None = None
    estimated: bool = False
    edges: int | None = None
    sample_s: float | None = None
    rows: int | None = None
    recall: float | None = None
    search_recall: float | None = None
    build_s: float | None = None
    build_peak_mib: float | None = None
    entities: int | None = None
    mentions: int | None = None
    key_entities: int | None = None
    top_key: str | None = None
    singletons: float | None = None
    stages: dict[str, float] | None = None
    embed: Percentiles | None = None
    forward: Percentiles | None = None
    search: Percentiles | None = None
    call: Percentiles | None = None
    overlap: float | None = None
    cold: float | None = None
    forward_gap: float | None = None
    sentences: int | None = None
    ner_per_s: float | None = None
    embed_per_s: float | None = None
    date: str = ""

    @classmethod
    def timed(cls, run: dict[str, float], **more: Any) -> Measurement:
        """A stage's run as :func:`helpers.timed` gives it, with the stage's own fields."""
        return cls(seconds=run["seconds"], baseline_mib=run["baseline_mib"],
                   peak_mib=run["peak_mib"], load=run["load"], **more)  # fmt: skip

    def data(self) -> dict[str, Any]:
        """The set fields, as the worker prints them and the results files keep them."""
        return {k: v for k, v in CONVERTER.unstructure(self).items() if v is not None}

    @classmethod
    def read(cls, data: dict[str, Any]) -> Measurement:
        return CONVERTER.structure(data, cls)


CONVERTER = cattrs.Converter(forbid_extra_keys=True)
Results = dict[tuple[str, int], Measurement]
"""Every measurement made, by (stage, n); ``encoders`` at n = 0."""
Stage = Callable[["Inputs", Config], Measurement]
"""A stage: measures itself over the scaled inputs."""


# --------------------------------------------------------------------------- real data


@attrs.frozen(eq=False)
class Real:
    """The real corpus index: per sentence its passage, position and entity names; the
    (memory-mapped) vectors."""

    passage: np.ndarray
    position: np.ndarray
    entities: list[list[str]]
    vectors: np.ndarray


def connect(folder: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{folder / 'corpus.sqlite'}?mode=ro", uri=True)


def read_real(folder: Path) -> Real:
    with contextlib.closing(connect(folder)) as db:
        rows = db.execute("SELECT passage, position FROM sentences ORDER BY sid").fetchall()
        table = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        entities: list[list[str]] = [[] for _ in range(len(table))]
        for sid, name in db.execute("SELECT sid, name FROM mentions ORDER BY sid, rowid"):
            entities[sid].append(name)
    vectors = np.load(folder / "embeddings.npy", mmap_mode="r")
    return Real(table[:, 0] - table[:, 0].min(), table[:, 1], entities, vectors)


def heaps_beta(real: Real, seed: int) -> float:
    """β of Heaps' law V(n) ∝ n^β for the entity vocabulary, fitted over 8 prefixes (n/4 to n)
    of the real sentences taken passage by passage in a random order."""
    rank = np.random.default_rng(seed).permutation(int(real.passage.max()) + 1)
    order = np.lexsort((real.position, rank[real.passage]))
    n = len(order)
    marks = sorted({int(m) for m in np.geomspace(n / 4, n, 8)})
    seen: set[str] = set()
    sizes = []
    for count, i in enumerate(order.tolist(), 1):
        seen.update(real.entities[i])
        if count in marks:
            sizes.append(len(seen))
    return float(np.polyfit(np.log(marks), np.log(sizes), 1)[0])


# --------------------------------------------------------------------------- synthetic copies


def rename_chance(df: np.ndarray, new_names: float) -> np.ndarray:
    """Per entity the chance k/(df + k) of a new name in a copy, k such that the expected new
    names Σ k/(df + k) equal ``new_names`` (bisection on log k)."""
    lo, hi = -20.0, 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        k = np.exp(mid)
        lo, hi = (mid, hi) if (k / (df + k)).sum() < new_names else (lo, mid)
    k = np.exp((lo + hi) / 2)
    out: np.ndarray = k / (df + k)
    return out


def copy_vocabulary(
    vocab: list[str], df: np.ndarray, beta: float, copy: int, seed: int
) -> list[str]:
    """The names of the real entities in copy ``copy`` (≥ 1): renamed ones get ``name#copy``."""
    target = len(vocab) * ((copy + 1) ** beta - copy**beta)
    renamed = np.random.default_rng([seed, copy]).random(len(vocab)) < rename_chance(df, target)
    return [f"{v}#{copy}" if r else v for v, r in zip(vocab, renamed.tolist(), strict=True)]


def scaled_entities(real: Real, n: int, beta: float, seed: int) -> list[list[str]]:
    """Entity names of n sentences: the real ones, then copies with Heaps-law renaming."""
    vocab = sorted({e for row in real.entities for e in row})
    column = {e: j for j, e in enumerate(vocab)}
    ids = [[column[e] for e in row] for row in real.entities]
    df = np.bincount([j for row in ids for j in set(row)], minlength=len(vocab))
    out: list[list[str]] = []
    for copy, start in enumerate(range(0, n, len(ids))):
        names = vocab if copy == 0 else copy_vocabulary(vocab, df, beta, copy, seed)
        out.extend([names[j] for j in row] for row in ids[: n - start])
    return out


def vectors_file(cache: Path, rows: int, noise: float, seed: int) -> Path:
    return cache / f"vectors_seed{seed}_noise{noise:g}_{rows}.npy"


def scaled_vectors(real: Real, n: int, noise: float, seed: int, cache: Path) -> np.ndarray:
    """n vectors, memory-mapped read-only: the real ones, then perturbed copies (written once
    under ``cache``; a file for more rows serves any smaller n, as copies come in order)."""
    if n <= len(real.vectors):
        return real.vectors[:n]
    found = sorted(
        cache.glob(f"vectors_seed{seed}_noise{noise:g}_*.npy"),
        key=lambda p: int(p.stem.rsplit("_", 1)[1]),
    )
    for path in found:
        if int(path.stem.rsplit("_", 1)[1]) >= n:
            stored: np.ndarray = np.load(path, mmap_mode="r")
            return stored[:n]
    path = vectors_file(cache, n, noise, seed)
    note(f"writing {n:,} vectors to {path}")
    write_copies(real.vectors, n, path, lambda base, c: perturbed_copy(base, c, noise, seed))
    written: np.ndarray = np.load(path, mmap_mode="r")
    return written


@attrs.frozen(eq=False)
class Inputs:
    """The n sentences' passages and positions, entity names (when asked) and vectors."""

    n: int
    passage: np.ndarray
    position: np.ndarray
    entities: list[list[str]]
    vectors: np.ndarray

    def sentences(self) -> tuple[Sentence, ...]:
        """Sentence records without texts, as the corpus build gives the edge builders."""
        return tuple(
            Sentence(i, "", p, "", q, 0, 0)
            for i, (p, q) in enumerate(
                zip(self.passage.tolist(), self.position.tolist(), strict=True)
            )
        )


def scaled_inputs(real: Real, n: int, config: Config, entities: bool) -> Inputs:
    copies = -(-n // len(real.passage))
    passages = int(real.passage.max()) + 1
    passage = np.concatenate([real.passage + c * passages for c in range(copies)])[:n]
    position = np.tile(real.position, copies)[:n]
    names = scaled_entities(real, n, config.beta, config.seed) if entities else []
    vectors = scaled_vectors(real, n, config.noise, config.seed, Path(config.cache))
    return Inputs(n, passage, position, names, vectors)


# --------------------------------------------------------------------------- measuring


def refusing(build: Callable[[], Any]) -> Callable[[], Any]:
    """``build``, whose LayerTooLargeError is returned instead of raised."""

    def run() -> Any:
        try:
            return build()
        except LayerTooLargeError as exc:
            return exc

    return run


@attrs.frozen(eq=False)
class Prebuilt:
    """A vector search whose index is built already: what SimilarityTopK then searches."""

    index: Any

    def __call__(self, vectors: np.ndarray) -> Any:
        return self.index


@attrs.define
class Recorded:
    """A vector index whose self-join keeps the neighbours it found (for the layer's recall)."""

    index: Any
    found: np.ndarray | None = None

    def self_join(self, k: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        ids, sims = self.index.self_join(k, rows)
        self.found = ids
        return ids, sims

    def rows(self, which: np.ndarray) -> np.ndarray:
        assert self.found is not None, "the layer was not built"
        rows: np.ndarray = self.found[which]
        return rows


def truth_file(config: Config, n: int) -> Path:
    name = f"truth_seed{config.seed}_noise{config.noise:g}_{n}_{config.sample}.npz"
    return Path(config.cache) / name


def ground_truth(inp: Inputs, config: Config) -> tuple[np.ndarray, np.ndarray, float]:
    """Sampled rows, their exact top-10 (self excluded) and the seconds that took (computed
    afresh, written under the cache for the FAISS stages)."""
    rows = sample_rows(inp.n, config.sample, config.seed)
    queries = np.ascontiguousarray(inp.vectors[rows], np.float32)
    exact_top_k(queries[:8], inp.vectors, M, rows[:8])  # imports torch, maps the vectors
    start = time.perf_counter()
    ids, _ = exact_top_k(queries, inp.vectors, M, rows)
    seconds = time.perf_counter() - start
    np.savez(truth_file(config, inp.n), rows=rows, ids=ids)
    return rows, ids, seconds


def index_file(config: Config, n: int, search: Any) -> Path:
    key = digest(unstructure(search))[:16]
    name = f"{type(search).__name__}_seed{config.seed}_noise{config.noise:g}_{n}_{key}"
    return Path(config.cache) / "search" / f"{name}.index"


# --------------------------------------------------------------------------- stages


def key_entities(inp: Inputs, _: Config) -> Measurement:
    keys, run = timed(lambda: BM25KeyEntities(alpha=60)(inp.entities))
    counts = sentence_counts(key_incidence(keys, inp.n)[0])
    top = int(np.argmax(counts))
    df = np.bincount(entity_vocabulary(inp.entities)[1].indices)
    return Measurement.timed(
        run,
        entities=int(df.size),
        mentions=sum(map(len, inp.entities)),
        key_entities=int(counts.size),
        top_key=f"{key_names(keys)[top]} in {counts[top] / inp.n:.1%}",
        singletons=float((df == 1).mean()),
    )


def ec(builder: EntityCooccurrence) -> Stage:
    def stage(inp: Inputs, _: Config) -> Measurement:
        graph = GraphInputs(inp.sentences(), BM25KeyEntities(alpha=60)(inp.entities))
        layer, run = timed(refusing(lambda: builder(graph)))
        if isinstance(layer, LayerTooLargeError):
            return Measurement.timed(run, refused=str(layer))
        return Measurement.timed(run, edges=layer.nnz // 2)

    return stage


def sample_truth(inp: Inputs, config: Config) -> tuple[np.ndarray, np.ndarray]:
    path = truth_file(config, inp.n)
    if not path.is_file():
        return ground_truth(inp, config)[:2]
    saved = np.load(path)
    return saved["rows"], saved["ids"]


def ss_exact(inp: Inputs, config: Config) -> Measurement:
    graph = GraphInputs(inp.sentences(), (), inp.vectors)
    rows, _, sample_s = ground_truth(inp, config)
    estimate = sample_s * inp.n / len(rows)
    if estimate > config.search_budget:
        return Measurement(seconds=estimate, estimated=True, sample_s=sample_s, rows=len(rows),
                           load=os.getloadavg()[0])  # fmt: skip
    layer, run = timed(lambda: SimilarityTopK(m=M)(graph))
    return Measurement.timed(run, sample_s=sample_s, rows=len(rows), edges=layer.nnz // 2)


def ss_faiss(kind: str) -> Stage:
    def stage(inp: Inputs, config: Config) -> Measurement:
        search, graph = SEARCHES[kind], GraphInputs(inp.sentences(), (), inp.vectors)
        index, built = timed(lambda: search(inp.vectors))
        note(f"  index built in {built['seconds']:.1f} s")
        rows, truth = sample_truth(inp, config)
        start = time.perf_counter()
        found, _ = index.search(np.ascontiguousarray(inp.vectors[rows]), M, rows)
        sample_s = time.perf_counter() - start
        estimate = sample_s * inp.n / len(rows)
        path = index_file(config, inp.n, search)
        path.parent.mkdir(parents=True, exist_ok=True)
        index.save(path)  # for the seed retrieval stage, as a corpus index keeps it
        out = Measurement.timed(built, build_s=built["seconds"], sample_s=sample_s,
                                rows=len(rows), recall=recall(found, truth))  # fmt: skip
        if estimate > config.search_budget and kind != "blocked_ivf":
            return attrs.evolve(out, seconds=built["seconds"] + estimate, estimated=True,
                                peak_mib=None, build_peak_mib=built["peak_mib"])  # fmt: skip
        note(f"  searching {inp.n:,} rows (about {estimate:.0f} s)")
        joined = Recorded(index)
        prebuilt = Prebuilt(joined)  # a search whose index exists: only __call__ is used
        layer, run = timed(lambda: SimilarityTopK(m=M, search=prebuilt)(graph))  # type: ignore[arg-type]
        # recall of the layer's own neighbours (blocked_ivf refines its self-join past a search)
        layer_recall = recall(joined.rows(rows), truth)
        return attrs.evolve(out, seconds=built["seconds"] + run["seconds"],
                            edges=layer.nnz // 2,
                            peak_mib=max(built["peak_mib"], run["peak_mib"]),
                            search_recall=out.recall, recall=layer_recall)  # fmt: skip

    return stage


def sa(inp: Inputs, _: Config) -> Measurement:
    graph = GraphInputs(inp.sentences())
    layer, run = timed(lambda: StructuralAdjacency(window=3)(graph))
    return Measurement.timed(run, edges=layer.nnz // 2)


def entity_index(inp: Inputs, _: Config) -> Measurement:
    (names, _), run = timed(lambda: entity_vocabulary(inp.entities))
    return Measurement.timed(run, entities=len(names))


def reference(inp: Inputs, _: Config) -> Measurement:
    spec = importlib.util.spec_from_file_location("graph_build", ROOT / "bench" / "graph_build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sentences, vectors = inp.sentences(), np.asarray(inp.vectors, dtype=np.float32)
    stages, run = timed(lambda: module.reference(sentences, inp.entities, vectors))
    return Measurement.timed(run, stages={k: float(v) for k, v in stages.items()})


@attrs.frozen(eq=False)
class Searchable:
    """What DenseRerank reads of a corpus index: texts (the real sentence of row i mod the real
    count, from SQLite, one query each as CorpusIndex reads them), embeddings, embedder, and
    the vector index of a search (built by the SS stage and loaded memory-mapped)."""

    db: sqlite3.Connection
    real: int
    embeddings: np.ndarray
    embedder: Any
    indexes: dict[Any, Any]

    @property
    def texts(self) -> Sequence[str]:
        return _Texts(self.db, self.real, len(self.embeddings))

    def vector_index(self, search: Any) -> Any:
        return self.indexes[search]


@attrs.frozen(eq=False)
class _Texts(Sequence[str]):
    db: sqlite3.Connection
    real: int
    n: int

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        query = "SELECT text FROM sentences WHERE sid = ?"
        return str(self.db.execute(query, (int(i) % self.real,)).fetchone()[0])


def seeds(kind: str) -> Stage:
    def stage(inp: Inputs, config: Config) -> Measurement:
        import torch

        from chainrag.components.index.embedders import FlagModelEmbedder
        from chainrag.components.retrieval.retrievers import DenseRerank
        from chainrag.context import StageContext
        from chainrag.data.datasets import load_dataset

        torch.set_num_threads(1)
        ctx, search, embedder = StageContext(), SEARCHES[kind], FlagModelEmbedder()
        index = vector_index(inp, config, search)
        db = connect(Path(config.index))
        real = db.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
        corpus = Searchable(db, real, inp.vectors, embedder, {search: index})
        retriever = DenseRerank(k=3, candidates=CANDIDATES, search=search)
        questions = [e.question for e in load_dataset("2wiki")]
        asked = questions[: config.queries]
        cold = []
        for q in questions[len(asked) : len(asked) + WARM_UP] or asked[:WARM_UP]:
            v = embedder([q], ctx, "query")
            start = time.perf_counter()
            index.search(v, CANDIDATES)
            cold.append((time.perf_counter() - start) * 1e3)
            retriever(q, corpus, ctx)
        if not isinstance(search, ExactSearch):
            warm_up(index, inp.vectors, config.seed)
        model = embedder._model(ctx)  # the Encoder: its tokenizer and network, for one pass
        times: dict[str, list[float]] = {k: [] for k in ("embed", "forward", "search", "call")}
        queries, found, gap = [], [], 0.0
        for q in asked:
            t0 = time.perf_counter()
            v = embedder([q], ctx, "query")
            t1 = time.perf_counter()
            w = one_forward(model, q, embedder.max_length)
            t2 = time.perf_counter()
            ids, _ = index.search(v, CANDIDATES)
            t3 = time.perf_counter()
            retriever(q, corpus, ctx)
            t4 = time.perf_counter()
            for key, seconds in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                times[key].append(seconds * 1e3)
            queries.append(v[0])
            found.append(ids[0])
            gap = max(gap, float(np.abs(v - w).max()))
        exact = ExactSearch()(inp.vectors).search(np.stack(queries), CANDIDATES)[0]
        return Measurement(
            embed=percentiles(times["embed"]),
            forward=percentiles(times["forward"]),
            search=percentiles(times["search"]),
            call=percentiles(times["call"]),
            overlap=recall(np.stack(found), exact),
            cold=float(np.median(cold)),
            forward_gap=gap,
            load=os.getloadavg()[0],
        )

    return stage


def warm_up(index: Any, vectors: np.ndarray, seed: int) -> None:
    """:data:`STEADY` single searches of stored vectors: a FAISS index opened memory-mapped
    (as a corpus index opens it) answers its first queries from pages not yet mapped (at 1M,
    HNSW took ~65 ms a query for the first 50, ~1 ms after 1,000); a serving process is past
    that after its first minutes."""
    for i in np.random.default_rng(seed).choice(len(vectors), STEADY, replace=False).tolist():
        index.search(np.ascontiguousarray(vectors[i : i + 1], np.float32), CANDIDATES)


def one_forward(model: Any, text: str, max_length: int) -> np.ndarray:
    """The query's vector by one forward pass of the encoder's tokenizer and network (mean
    pooling, L2-normalised): the embedding's cost without what FlagModel does on every call
    (``model.float()``, ``.to(device)``, and a first forward pass that probes the batch size)."""
    import torch

    with torch.inference_mode():
        batch = model.tokenizer([text], truncation=True, max_length=max_length,
                                return_tensors="pt")  # fmt: skip
        hidden = model.model(**batch, return_dict=True).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        out: np.ndarray = torch.nn.functional.normalize(pooled, dim=-1).numpy()
    return out


def vector_index(inp: Inputs, config: Config, search: Any) -> Any:
    """The search's index over the vectors: exact as is; FAISS loaded from the file the SS
    stage wrote (built and written here when it is missing)."""
    if isinstance(search, ExactSearch):
        return search(inp.vectors)
    path = index_file(config, inp.n, search)
    if not path.is_file():
        note(f"  {path.name} missing: building it")
        path.parent.mkdir(parents=True, exist_ok=True)
        search(inp.vectors).save(path)
    return search.load(path, inp.vectors)


def percentiles(values: list[float]) -> Percentiles:
    return Percentiles(float(np.median(values)), float(np.percentile(values, 95)))


def encoders(_: Inputs | None, config: Config) -> Measurement:
    """Sentences/s of spaCy NER and of MiniLM (default threads) on evenly spaced real
    sentences."""
    from chainrag.components.index.embedders import FlagModelEmbedder
    from chainrag.components.index.spacy_nlp import SpacyNER
    from chainrag.context import StageContext

    with contextlib.closing(connect(Path(config.index))) as db:
        texts = [t for (t,) in db.execute("SELECT text FROM sentences ORDER BY sid")]
    texts = texts[:: max(1, len(texts) // ENCODER_SENTENCES)][:ENCODER_SENTENCES]
    ctx, ner, embed = StageContext(), SpacyNER(), FlagModelEmbedder()
    ner(texts[:32], ctx)
    embed(texts[:32], ctx)
    _, ner_run = timed(lambda: ner(texts, ctx))
    _, embed_run = timed(lambda: embed(texts, ctx))
    return Measurement(
        sentences=len(texts),
        ner_per_s=len(texts) / ner_run["seconds"],
        embed_per_s=len(texts) / embed_run["seconds"],
        load=ner_run["load"],
    )


STAGES: dict[str, Callable[[Any, Config], Measurement]] = {
    "key_entities": key_entities,
    "ec_paper": ec(EntityCooccurrence()),
    "ec_nearest": ec(EntityCooccurrence(nearest=10)),
    "ss_exact": ss_exact,
    "ss_hnsw": ss_faiss("hnsw"),
    "ss_ivf": ss_faiss("ivf"),
    "ss_blocked_ivf": ss_faiss("blocked_ivf"),
    "sa": sa,
    "entity_index": entity_index,
    "reference": reference,
    "seeds_exact": seeds("exact"),
    "seeds_hnsw": seeds("hnsw"),
    "seeds_ivf": seeds("ivf"),
    "seeds_blocked_ivf": seeds("blocked_ivf"),
    "encoders": encoders,
}
NEEDS_ENTITIES = {"key_entities", "ec_paper", "ec_nearest", "entity_index", "reference"}


def worker(stage: str, n: int, config: Config) -> Measurement:
    if stage == "encoders":
        return encoders(None, config)
    real = read_real(Path(config.index))
    inp = scaled_inputs(real, n, config, stage in NEEDS_ENTITIES)
    del real
    return STAGES[stage](inp, config)


# --------------------------------------------------------------------------- the driver


def jobs(sizes: Sequence[int], reference_max: int) -> Iterator[tuple[str, int]]:
    yield "encoders", 0
    for n in sizes:
        yield from ((stage, n) for stage in GRAPH_STAGES)
        yield from ((f"seeds_{kind}", n) for kind in SEARCHES)
        if n <= reference_max:
            yield "reference", n


def run_job(stage: str, n: int, config: Config) -> Measurement:
    results = Path(config.cache) / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{n}_{stage}.json"
    params = config.parameters(stage)
    if config.resume and path.is_file():
        saved = json.loads(path.read_text())
        if saved["parameters"] == params:
            note(f"n={n:,} {stage}: measured before ({saved['date']}), reused")
            return attrs.evolve(Measurement.read(saved["result"]), date=saved["date"])
    note(f"n={n:,} {stage} ...")
    command = [sys.executable, __file__, "--worker", stage, str(n), config.json()]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        result = Measurement(failed=f"exit status {done.returncode}")
    else:
        result = Measurement.read(json.loads(done.stdout.splitlines()[-1]))
    date = datetime.datetime.now().isoformat(timespec="seconds")
    path.write_text(json.dumps({"parameters": params, "date": date, "result": result.data()}))
    note(f"n={n:,} {stage}: {summary(result)}")
    return attrs.evolve(result, date=date)


def summary(r: Measurement) -> str:
    if r.failed is not None:
        return r.failed
    if r.seconds is not None:
        peak = f", peak {r.peak_mib:,.0f} MiB" if r.peak_mib is not None else " (estimated)"
        return f"{r.seconds:.2f} s{peak}"
    if r.embed is not None and r.forward is not None and r.search is not None:
        shown = (("embed", r.embed), ("forward", r.forward), ("search", r.search))
        return ", ".join(f"{k} {p.median:.1f} ms" for k, p in shown)
    return json.dumps(r.data())[:200]


# --------------------------------------------------------------------------- tables


def fmt_s(r: Measurement | None) -> str:
    if r is None:
        return "not run"
    if r.failed is not None:
        return r.failed
    seconds = r.seconds or 0.0
    if r.refused is not None:
        return f"refused in {seconds:.1f}"
    return f"≈{seconds:,.0f}" if r.estimated else f"{seconds:,.2f}"


def stage_table(results: Results, sizes: Sequence[int], _: Config) -> str:
    lines = [
        "| n | stage | seconds | µs/sentence | baseline MiB | peak MiB | edges | notes | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        for stage in GRAPH_STAGES:
            r = results.get((stage, n))
            if r is None:
                lines.append(f"| {n:,} | {stage} | not run | | | | | | |")
                continue
            per = f"{r.seconds / n * 1e6:.1f}" if r.seconds is not None else ""
            mem = [f"{v:,.0f}" if v is not None else "" for v in (r.baseline_mib, r.peak_mib)]
            edges = f"{r.edges:,}" if r.edges is not None else ""
            lines.append(
                f"| {n:,} | {stage} | {fmt_s(r)} | {per} | {mem[0]} | {mem[1]} | "
                f"{edges} | {stage_notes(stage, r)} | {r.load:.1f} |"
            )
    return "\n".join(lines)


def stage_notes(stage: str, r: Measurement) -> str:
    if r.refused is not None:
        return "guard: " + r.refused.split(". ")[0].replace("|", "/")
    if stage == "key_entities":
        return (
            f"{r.entities or 0:,} entities ({r.singletons or 0:.0%} in 1 sentence), "
            f"{r.mentions or 0:,} mentions, {r.key_entities or 0:,} key; top key: "
            f"{r.top_key}"
        )
    if r.sample_s is None or r.rows is None:
        return ""
    estimate = f"{r.sample_s:.2f} s for {r.rows:,} rows × n/{r.rows:,}"
    if stage == "ss_exact":
        return f"{'estimated' if r.estimated else 'estimate'}: {estimate}"
    if r.recall is not None:
        how = f"; search estimated: {estimate}" if r.estimated else ""
        build = f" (peak {r.build_peak_mib:,.0f} MiB)" if r.build_peak_mib is not None else ""
        return f"recall@10 {r.recall:.3f}; build {r.build_s or 0:.1f} s{build}{how}"
    return ""


def config_total(
    results: Results, n: int, stages: Sequence[str]
) -> tuple[float | None, float | None, str]:
    """(seconds, peak MiB, remark) of a configuration's graph part at n."""
    total, peak, remarks = 0.0, 0.0, []
    for stage in (*COMMON, *stages):
        r = results.get((stage, n))
        if r is None or r.failed is not None or r.seconds is None:
            return None, None, f"{stage} not measured"
        if r.refused is not None:
            return None, None, f"{stage}: the guard refuses"
        total += r.seconds
        if r.build_peak_mib is not None:  # estimated search: the peak of its index build
            remarks.append(f"{stage} estimated (its peak: the index build's)")
            peak = max(peak, r.build_peak_mib)
        elif r.estimated:
            remarks.append(f"{stage} estimated")
        else:
            peak = max(peak, r.peak_mib or 0.0)
    return total, peak or None, ", ".join(remarks)


def encoder_seconds(results: Results, n: int) -> float | None:
    r = results.get(("encoders", 0))
    if r is None or r.ner_per_s is None or r.embed_per_s is None:
        return None
    return float(n / r.ner_per_s + n / r.embed_per_s)


def share(results: Results, n: int, stages: Sequence[str]) -> float | None:
    """The graph part's seconds as a share of the encoders' at n."""
    seconds, encoding = config_total(results, n, stages)[0], encoder_seconds(results, n)
    return None if seconds is None or not encoding else seconds / encoding


def totals_table(results: Results, sizes: Sequence[int], _: Config) -> str:
    lines = [
        "| n | graph part | seconds | µs/sentence | growth of s (exp.) | peak MiB | "
        "growth of peak (exp.) | % of encoders' time | remarks |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, stages in CONFIGS.items():
        before: tuple[int, float, float | None] | None = None
        for n in sizes:
            seconds, peak, remark = config_total(results, n, stages)
            if seconds is None:
                lines.append(f"| {n:,} | {label} | – | | | | | | {remark} |")
                before = None
                continue
            grow = ["", ""]
            if before is not None:
                span = np.log(n / before[0])
                grow[0] = f"{np.log(seconds / before[1]) / span:.2f}"
                if peak and before[2]:
                    grow[1] = f"{np.log(peak / before[2]) / span:.2f}"
            fraction = share(results, n, stages)
            part = "" if fraction is None else f"{fraction:.2%}"
            mem = f"{peak:,.0f}" if peak else ""
            lines.append(
                f"| {n:,} | {label} | {seconds:,.2f} | {seconds / n * 1e6:.1f} | "
                f"{grow[0]} | {mem} | {grow[1]} | {part} | {remark} |"
            )
            before = (n, seconds, peak)
    return "\n".join(lines)


def reference_table(results: Results, sizes: Sequence[int], config: Config) -> str:
    lines = [
        "| n | build | key entities | EC | SS | SA | entity index | total s | peak MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        r = results.get(("reference", n))
        if r is None or r.stages is None:
            reason = (r.failed if r is not None else None) or "not measured"
            if n > config.reference_max:
                reason = f"not run: its n×n float32 similarity matrix is {n * n / 2**28:,.1f} GiB"
            lines.append(f"| {n:,} | reference | {reason} | | | | | | |")
            continue
        s = r.stages
        cells = " | ".join(
            f"{s[k]:.2f}" for k in ("key_entities", "ec", "ss", "sa", "entity_index")
        )
        lines.append(
            f"| {n:,} | reference (authors' code style) | {cells} | "
            f"{r.seconds or 0:.1f} | {r.peak_mib or 0:,.0f} |"
        )
        ours = [
            results.get((k, n))
            for k in ("key_entities", "ec_paper", "ss_exact", "sa", "entity_index")
        ]
        if all(o is not None and o.seconds is not None for o in ours):
            total, peak, _ = config_total(results, n, CONFIGS["paper: EC unbounded, SS exact"])
            cells = " | ".join(fmt_s(o) for o in ours)
            lines.append(
                f"| {n:,} | chainrag (paper's layers) | {cells} | {total or 0:.2f} | "
                f"{peak or 0:,.0f} |"
            )
    return "\n".join(lines)


def seeds_table(results: Results, sizes: Sequence[int], _: Config) -> str:
    lines = [
        "| n | search | embed query (FlagModel) | one forward pass | top-100 search | embed + "
        "search | DenseRerank call | cold search (first 5) | top-100 = exact's | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        for kind in SEARCHES:
            r = results.get((f"seeds_{kind}", n))
            if r is None or r.embed is None or r.search is None:
                failed = (r.failed if r is not None else None) or "not run"
                lines.append(f"| {n:,} | {kind} | {failed} ||||||||")
                continue
            shown = (r.embed, r.forward, r.search, r.embed + r.search, r.call)
            cells = " | ".join(
                f"{p.median:.1f} / {p.p95:.1f}" if p is not None else "" for p in shown
            )
            lines.append(
                f"| {n:,} | {kind} | {cells} | {r.cold or 0:.1f} | {r.overlap or 0:.3f} | "
                f"{r.load:.1f} |"
            )
    gaps = [r.forward_gap for r in results.values() if r.forward_gap is not None]
    if gaps:
        lines += ["", f"One forward pass gives FlagModel's query vector to within {max(gaps):.1e}."]
    return "\n".join(lines)


def encoder_table(results: Results, sizes: Sequence[int], _: Config) -> str:
    r = results.get(("encoders", 0))
    if r is None or r.ner_per_s is None or r.embed_per_s is None:
        return "encoders: not measured"
    lines = [
        f"On {r.sentences or 0:,} real sentences (load {r.load:.1f}):",
        "",
        "| encoder | sentences/s | " + " | ".join(f"hours at {n:,}" for n in sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for label, rate in (
        ("spaCy NER (en_core_web_sm)", r.ner_per_s),
        ("MiniLM embeddings (all-MiniLM-L6-v2)", r.embed_per_s),
    ):
        hours = " | ".join(f"{n / rate / 3600:.2f}" for n in sizes)
        lines.append(f"| {label} | {rate:,.0f} | {hours} |")
    both = " | ".join(f"{(encoder_seconds(results, n) or 0) / 3600:.2f}" for n in sizes)
    lines.append(f"| both (the floor; sentence splitting not included) | | {both} |")
    return "\n".join(lines)


def goals_table(results: Results, sizes: Sequence[int], _: Config) -> str:
    lines = ["| goal | measured | met |", "|---|---|---|"]
    small, large = min(sizes), max(sizes)
    paper = config_total(results, small, CONFIGS["paper: EC unbounded, SS exact"])
    if paper[0] is not None:
        lines.append(
            f"| graph part at {small:,} ≤ 2 s (paper's layers) | {paper[0]:.2f} s | "
            f"{'yes' if paper[0] <= 2 else 'no'} |"
        )
    for label, stages in list(CONFIGS.items())[1:]:
        seconds, peak, _remark = config_total(results, large, stages)
        if seconds is None or peak is None:
            continue
        met = seconds <= 600 and peak <= 8 * 1024
        measured = results.get((stages[-1], large))
        found = measured.recall if measured is not None else None
        also = f" (SS recall@10 {found:.3f})" if found is not None else ""
        lines.append(
            f"| {large:,}: ≤ 10 min, peak ≤ 8 GiB ({label}) | {seconds / 60:.1f} min, "
            f"{peak / 1024:.2f} GiB{also} | {'yes' if met else 'no'} |"
        )
    for kind in SEARCHES:
        r = results.get((f"seeds_{kind}", large))
        if r is not None and r.embed is not None and r.search is not None:
            ms = r.embed.median + r.search.median
            lines.append(
                f"| seed retrieval ≤ 20 ms at {large:,} ({kind}, median) | {ms:.1f} ms "
                f"| {'yes' if ms <= 20 else 'no'} |"
            )
    for label, stages in CONFIGS.items():
        shares = [share(results, n, stages) for n in sizes]
        if any(v is not None for v in shares):
            shown = ", ".join("–" if v is None else f"{v:.1%}" for v in shares)
            ok = all(v < 0.05 for v in shares if v is not None)
            lines.append(f"| graph part < 5% of the encoders' time ({label}) | {shown} | "
                         f"{'yes' if ok else 'no'} |")  # fmt: skip
    for kind in ("hnsw", "ivf", "blocked_ivf"):
        got = [m.recall if (m := results.get((f"ss_{kind}", n))) else None for n in sizes]
        recalls = [f"{v:.3f}" for v in got if v is not None]
        if recalls:
            ok = all(v >= 0.95 for v in got if v is not None)
            lines.append(
                f"| SS recall@10 ≥ 0.95 ({kind}) | {', '.join(recalls)} | {'yes' if ok else 'no'} |"
            )
    return "\n".join(lines)


def report(results: Results, config: Config, sizes: Sequence[int], command: str) -> str:
    dates = sorted(r.date for r in results.values()) or ["–"]
    head = [
        f"`{command}`",
        "",
        f"measured {dates[0]} to {dates[-1]}; {os.cpu_count()} cores; inputs: "
        f"{config.index} (real up to "
        f"{config.real:,} sentences), Heaps β = {config.beta:.3f}, vector noise "
        f"{config.noise:g}, seed {config.seed}; searches: {SEARCHES!r}; 'load' is the "
        "1-minute load average when the stage started.",
    ]
    sections = [
        ("Graph part, stage by stage", stage_table),
        ("Graph part per configuration", totals_table),
        ("Authors'-code-style reference", reference_table),
        (
            "Seed retrieval per sub-question, ms median / p95 (torch on 1 thread, no reranker)",
            seeds_table,
        ),
        ("Encoder floor", encoder_table),
        ("Goals", goals_table),
    ]
    parts = ["\n".join(head)]
    parts += [f"### {title}\n\n{table(results, sizes, config)}" for title, table in sections]
    return "\n\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000, 1_000_000])
    parser.add_argument(
        "--index",
        default=str(ROOT / "runs" / "corpus" / "2wiki-graph"),
        help="the real corpus index folder (read only)",
    )
    parser.add_argument("--noise", type=float, default=0.01, help="per coordinate, copies only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=1000, help="rows for SS recall")
    parser.add_argument("--queries", type=int, default=50, help="2Wiki dev questions")
    parser.add_argument(
        "--search-budget",
        type=float,
        default=900,
        help="SS layers whose search of all n rows would take longer (judged from the "
        "sample's) are estimated, not run (seconds; default 900)",
    )
    parser.add_argument("--reference-max", type=int, default=25_000)
    parser.add_argument("--cache", default="/tmp/corpus_scale", help="vectors and results")
    parser.add_argument("--resume", action="store_true", help="reuse results of equal params")
    parser.add_argument(
        "--stages",
        nargs="+",
        choices=list(STAGES),
        default=list(STAGES),
        metavar="STAGE",
        help=f"measure only these (default all: {', '.join(STAGES)})",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the tables here")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        stage, n, given = args.worker
        print(json.dumps(worker(stage, int(n), Config.from_json(given)).data()))
        return 0
    command = shlex.join(["python", "bench/corpus_scale.py", *sys.argv[1:]])
    real = read_real(Path(args.index))
    config = Config(
        index=str(Path(args.index).resolve()),
        noise=args.noise,
        seed=args.seed,
        sample=args.sample,
        queries=args.queries,
        search_budget=args.search_budget,
        cache=args.cache,
        resume=args.resume,
        real=len(real.passage),
        reference_max=args.reference_max,
        beta=heaps_beta(real, args.seed),
    )
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    scaled_vectors(real, max(args.sizes), args.noise, args.seed, Path(args.cache))
    del real
    results: Results = {}
    for stage, n in jobs(args.sizes, args.reference_max):
        if stage in args.stages:
            results[(stage, n)] = run_job(stage, n, config)
    text = report(results, config, args.sizes, command)
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
