"""Building a corpus index in a stream, stage by stage, resumable at every finished batch.

    sources = ["2wiki_hipporag_corpus", "dev:2wiki"]
    manifest = build_corpus_index(sources, recipe.index, Path("idx"), ctx)

Stages, each recorded in the folder's SQLite ``progress`` table in the same transaction as its
rows (so a batch is either wholly there or not at all):

1. ``split``: passages are read ``batch_passages`` at a time (fixed boundaries in the stream),
   split into sentences and run through NER; passages, sentences and mentions are written. With
   an embedder that waits on the network (a remote one), each batch's sentences are sent to it
   as soon as they are written, in a thread of their own (:func:`embedded_ahead`): its vectors
   go into its store while spaCy tags the next batches.
2. ``embed``: sentences ``batch_sentences`` at a time (fixed boundaries) into the memory-mapped
   ``embeddings.npy`` (a remote embedder's from its store, where they were sent ahead); the rows
   are flushed before the batch is recorded as done.
3. ``key_entities``: the recipe's key-entity scorer over every sentence's entities.
4. ``edges.NAME``: each edge layer, written as it is finished.

Killed at any point (``kill -9`` included) and started again with the same arguments, the
build resumes after the last recorded batch of the stage it was in: nothing recorded is computed
again (only a batch in flight is), and since batch boundaries are fixed the index is identical
to an uninterrupted build. Each finished batch of passages is recorded with its sha256, and a
resumed build checks the passages it skips against them: a corpus whose indexed part changed is
an error naming the batch, while a fix further on (a bad record that stopped the build) is
simply read. Started with another recipe ``index:``, other sources, dtype or batch sizes, it is
an error naming what differs. The manifest's ``corpus_sha256`` (written when the build is
complete) is the sha256 over the batches' digests. The encoding stages (split, NER,
embeddings) go through an :class:`Engine`, so that :mod:`chainrag.index.corpus.ray_engine` can
spread them over a cluster.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
import numpy as np
from numpy.lib.format import open_memmap

from chainrag.core.device import resolved_devices
from chainrag.core.progress import ticking
from chainrag.core.types import Chunk, GraphInputs, Passage, ScoredEntity, Sentence
from chainrag.index.build import IndexBuildError, digest, entity_name, waits_on_network
from chainrag.index.corpus.source import read_passages
from chainrag.index.corpus.store import (
    EMBEDDINGS,
    FORMAT,
    KIND,
    CorpusIndexError,
    connect,
    read_manifest,
    save_layer,
    write_manifest,
)
from chainrag.index.stores import endpoint_identities
from chainrag.protocols.resources import Resources
from chainrag.recipes.recipe import IndexSpec
from chainrag.recipes.structure import identity, unstructure

Dtype = Literal["float32", "float16"]
Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as units of a stage (passages, sentences) finish;
a graph stage, one call with no progress of its own, at 0 of 1 every second while it runs and
at 1 of 1 when it ends (:func:`~chainrag.core.progress.ticking`)."""

OWN_PROGRESS = ("split", "embed")
"""The stages that call ``progress`` as their units finish."""

SplitRows = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[int, str]]]


Encoder = Callable[[Resources, IndexSpec, Any], Any]
"""An encoding step: ``fn(ctx, spec, batch)``, a module-level function (a worker may be another
process or machine, with its own :class:`~chainrag.context.StageContext` and models)."""


class Engine(Protocol):
    """Runs an encoding step over batches, yielding the results in batch order, lazily."""

    def map(self, fn: Encoder, spec: IndexSpec, batches: Iterable[Any]) -> Iterator[Any]: ...


class LocalEngine:
    """Every batch in this process, one after another, with the caller's context (models)."""

    def __init__(self, ctx: Resources) -> None:
        self.ctx = ctx

    def map(self, fn: Encoder, spec: IndexSpec, batches: Iterable[Any]) -> Iterator[Any]:
        for batch in batches:
            yield fn(self.ctx, spec, batch)


def index_digest(spec: IndexSpec) -> str:
    """``sha256:<hex>`` of the recipe's ``index:`` section: what decides the index's content
    (with a remote embedder's endpoint identity, where it has one)."""
    payload: dict[str, Any] = {"format": FORMAT, "index": identity(spec)}
    if endpoints := endpoint_identities(spec):
        payload["endpoints"] = endpoints
    return "sha256:" + digest(payload)


def same_index(stored: Any, spec: IndexSpec) -> bool:
    """Whether the ``index:`` section a manifest stored is ``spec``, compared as components
    (so a parameter added to a component since, with its default, changes nothing) as far as
    what they compute goes (a ``device`` may differ; a remote embedder's endpoint may not)."""
    from chainrag.recipes.recipe import structure_stored

    found = structure_stored({"name": "index", "index": stored}, "the index's manifest")
    if found is None or identity(found.index) != identity(spec):
        return False
    return endpoint_identities(found.index) == endpoint_identities(spec)


def build_corpus_index(
    sources: Sequence[str],
    spec: IndexSpec,
    out: Path,
    ctx: Resources,
    *,
    batch_passages: int = 512,
    batch_sentences: int = 4096,
    dtype: Dtype = "float32",
    engine: Engine | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Build (or resume building) the corpus index of ``sources`` into ``out``; its manifest."""
    if spec.embedder is None or (spec.splitter is None) == (spec.chunker is None):
        raise IndexBuildError("a corpus index needs index.embedder and one of index.splitter "
                              "(a sentence graph) or index.chunker (chunk mode)")  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    manifest = _start(out, sources, spec, dtype, batch_passages, batch_sentences)
    devices = resolved_devices(spec, "index")  # the devices of each session that built it
    if devices and devices not in manifest.setdefault("devices", []):
        manifest["devices"].append(devices)
        write_manifest(out, manifest)
    engine = engine or LocalEngine(ctx)
    db = connect(out)
    try:
        stages: list[tuple[str, Callable[[], None]]] = [
            ("split", lambda: _split_stage(db, sources, spec, engine, manifest, progress)),
            ("embed", lambda: _embed_stage(db, out, spec, engine, manifest, progress)),
        ]
        if spec.chunker is None:
            stages.append(("key_entities", lambda: _key_stage(db, spec)))
        stages += [(f"edges.{n}", _edge_job(db, out, spec, n)) for n in spec.edges]
        for name, run in stages:
            if name not in manifest["stages"]:
                started = time.perf_counter()
                with ticking(None if name in OWN_PROGRESS else progress, name):
                    run()
                manifest["stages"][name] = round(time.perf_counter() - started, 3)
                write_manifest(out, manifest)
        manifest["counts"] = _counts(db, out, spec)
        keys = [k for (k,) in db.execute("SELECT digest FROM batches ORDER BY number")]
        manifest["corpus_sha256"] = "sha256:" + digest(keys)
        manifest["complete"] = True
        write_manifest(out, manifest)
    finally:
        db.close()
    return manifest


def _start(
    out: Path, sources: Sequence[str], spec: IndexSpec, dtype: Dtype, bp: int, bs: int
) -> dict[str, Any]:
    wanted = {
        "sources": list(sources),
        "dtype": dtype,
        "batch_passages": bp,
        "batch_sentences": bs,
    }
    if (out / "manifest.json").exists():
        manifest = read_manifest(out)
        differs = [k for k, v in wanted.items() if manifest.get(k) != v]
        if not same_index(manifest.get("index"), spec):
            differs.append("index")
            wanted["index"] = unstructure(spec)
        if differs:
            shown = "; ".join(f"{k}: {manifest.get(k)!r} there, {wanted[k]!r} now" for k in differs)
            raise CorpusIndexError(f"{out} holds an index built otherwise ({shown}): pass "
                                   "another --out-dir, or remove it to start over")  # fmt: skip
        return manifest
    if any(out.iterdir()):
        raise CorpusIndexError(
            f"{out} is not empty and holds no corpus index: pass another --out-dir"
        )
    unit = "chunk" if spec.chunker is not None else "sentence"
    manifest = {"kind": KIND, "format": FORMAT, "recipe_digest": index_digest(spec), **wanted,
                "index": unstructure(spec), "unit": unit,
                "stages": {}, "layers": list(spec.edges), "complete": False}  # fmt: skip
    write_manifest(out, manifest)
    return manifest


def _done(db: sqlite3.Connection, stage: str) -> int:
    row = db.execute("SELECT done FROM progress WHERE stage = ?", (stage,)).fetchone()
    return int(row[0]) if row else 0


def _record(db: sqlite3.Connection, stage: str, done: int) -> None:
    db.execute("INSERT OR REPLACE INTO progress (stage, done) VALUES (?, ?)", (stage, done))


# --------------------------------------------------------------------------- 1. split + NER


def _batches(items: Iterable[Passage], size: int) -> Iterator[list[Passage]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def encode_passages(ctx: Resources, spec: IndexSpec, batch: list[Passage]) -> SplitRows:
    """Split (or chunk) and NER of one batch of passages (pids are their corpus positions): the
    rows to write, with unit ids relative to the batch."""
    sentences: Sequence[Sentence | Chunk]
    if spec.chunker is not None:
        sentences = [attrs.evolve(c, cid=i) for i, c in enumerate(spec.chunker(batch))]
    else:
        assert spec.splitter is not None
        sentences = spec.splitter(batch, ctx)
    base = int(batch[0].pid)
    passages = [(int(p.pid), p.pid, p.title, p.text) for p in batch]
    rows = [(i, base + s.passage, s.position, s.start, s.end, s.text)
            for i, s in enumerate(sentences)]  # fmt: skip
    mentions: list[tuple[int, str]] = []
    if spec.ner is not None and spec.chunker is None:
        found = spec.ner([s.text for s in sentences], ctx)
        mentions = [(i, n) for i, row in enumerate(found) for n in map(entity_name, row) if n]
    return passages, rows, mentions


def batch_digest(batch: Sequence[Passage]) -> str:
    """sha256 of a batch of passages (titles and texts, in order)."""
    return digest([[p.title, p.text] for p in batch])


def _checked(batches: Iterator[list[Passage]], db: sqlite3.Connection, done: int, size: int,
             ) -> Iterator[list[Passage]]:  # fmt: skip
    """The batches after the ``done`` recorded ones, each recorded one checked unchanged."""
    recorded = dict(db.execute("SELECT number, digest FROM batches"))
    for number, batch in enumerate(batches, 1):
        if number > done:
            yield batch
        elif batch_digest(batch) != recorded.get(number):
            first = (number - 1) * size
            raise CorpusIndexError(
                f"the corpus changed since it was indexed: passages {first}..{first + size - 1} "
                f"(batch {number}) differ from what the index holds; remove the index folder "
                "to build it anew"
            )


def _split_stage(
    db: sqlite3.Connection, sources: Sequence[str], spec: IndexSpec, engine: Engine,
    manifest: dict[str, Any], progress: Progress | None,
) -> None:  # fmt: skip
    size = manifest["batch_passages"]
    done = _done(db, "split")
    batches = _checked(_batches(read_passages(sources), size), db, done, size)
    sid = db.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
    pending = ((batch_digest(b), b) for b in batches)
    digests: list[str] = []

    def payloads() -> Iterator[list[Passage]]:
        for key, batch in pending:
            digests.append(key)
            yield batch

    with embedded_ahead(spec, engine) as send_ahead:
        results = engine.map(encode_passages, spec, payloads())
        for number, (passages, rows, mentions) in enumerate(results, done + 1):
            _write_split(db, number, digests[number - done - 1], sid, passages, rows, mentions)
            send_ahead([r[-1] for r in rows])
            sid += len(rows)
            if progress:
                progress("split", number * size, 0)
    if progress:  # the total is known once the stream has ended
        passages = db.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
        progress("split", passages, passages)


def _write_split(
    db: sqlite3.Connection, number: int, key: str, sid: int, passages: list[tuple[Any, ...]],
    rows: list[tuple[Any, ...]], mentions: list[tuple[int, str]],
) -> None:  # fmt: skip
    """One split batch's rows and its progress, in one transaction."""
    db.execute("BEGIN")
    db.execute("INSERT INTO batches VALUES (?, ?)", (number, key))
    db.executemany("INSERT INTO passages VALUES (?, ?, ?, ?)", passages)
    db.executemany("INSERT INTO sentences VALUES (?, ?, ?, ?, ?, ?)",
                   [(sid + r[0], *r[1:]) for r in rows])  # fmt: skip
    db.executemany("INSERT INTO mentions VALUES (?, ?)", [(sid + s, n) for s, n in mentions])
    _record(db, "split", number)
    db.execute("COMMIT")


AHEAD_BATCHES = 4
"""Split batches whose sentences may wait for the embedder at once (:func:`embedded_ahead`)."""


def _embed_ahead(ctx: Resources, spec: IndexSpec, texts: list[str]) -> None:
    """``texts`` embedded for their store, the vectors dropped; a failure is left to the embed
    stage, which asks for the same texts again and stops on it where it belongs."""
    with contextlib.suppress(Exception):  # the embed stage raises it, with its own progress
        embed_texts(ctx, spec, texts)


@contextlib.contextmanager
def embedded_ahead(spec: IndexSpec, engine: Engine) -> Iterator[Callable[[list[str]], None]]:
    """A function that sends a split batch's sentence texts to the embedder in a thread of its
    own, where the embedder waits on the network (:func:`~chainrag.index.build.waits_on_network`)
    and the build runs in this process (:class:`LocalEngine`): a remote embedder keeps its
    vectors in its text store, so the embed stage then finds them there and makes no request,
    and its network time overlaps spaCy's CPU time instead of following it. Elsewhere it does
    nothing (a local embedder would take the cores from spaCy; a Ray build embeds in its
    workers). At most :data:`AHEAD_BATCHES` batches wait to be sent (the split waits for room),
    so the texts held stay few and the embed stage starts soon after the split ends. Leaving the
    block waits for what was sent, or, on an error or an interrupt, cancels what has not
    started."""
    embedder = spec.embedder
    if not isinstance(engine, LocalEngine) or embedder is None or not waits_on_network(embedder):
        yield lambda texts: None
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="embed-ahead")
    room = threading.BoundedSemaphore(AHEAD_BATCHES)

    def send(texts: list[str]) -> None:
        if texts:
            room.acquire()  # the split waits while the embedder is that far behind
            pool.submit(_embed_ahead, engine.ctx, spec, texts).add_done_callback(
                lambda _: room.release()
            )

    try:
        yield send
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# --------------------------------------------------------------------------- 2. embeddings


def embed_texts(ctx: Resources, spec: IndexSpec, texts: list[str]) -> np.ndarray:
    """The embeddings of one batch of sentence texts, float32."""
    assert spec.embedder is not None
    return np.asarray(spec.embedder(texts, ctx, "passage"), dtype=np.float32)


def _embed_stage(
    db: sqlite3.Connection, out: Path, spec: IndexSpec, engine: Engine,
    manifest: dict[str, Any], progress: Progress | None,
) -> None:  # fmt: skip
    n = db.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
    size, done = manifest["batch_sentences"], _done(db, "embed")
    starts = range(done * size, n, size)
    texts = ([r[0] for r in db.execute(
        "SELECT text FROM sentences WHERE sid >= ? AND sid < ? ORDER BY sid", (a, a + size))]
        for a in starts)  # fmt: skip
    matrix: np.ndarray | None = _open_embeddings(out, n, manifest["dtype"]) if done else None
    results = engine.map(embed_texts, spec, texts)
    for number, (start, vectors) in enumerate(zip(starts, results, strict=True), done + 1):
        if matrix is None:
            matrix = _open_embeddings(out, n, manifest["dtype"], dim=vectors.shape[1])
        matrix[start : start + len(vectors)] = vectors
        matrix.flush()  # type: ignore[attr-defined]
        _record(db, "embed", number)
        if progress:
            progress("embed", min(n, start + len(vectors)), n)
    if n == 0:
        _open_embeddings(out, 0, manifest["dtype"], dim=0)


def _open_embeddings(out: Path, n: int, dtype: str, dim: int | None = None) -> np.ndarray:
    path = out / EMBEDDINGS
    if dim is None:
        existing: np.ndarray = np.load(path, mmap_mode="r+")
        return existing
    matrix: np.ndarray = open_memmap(path, mode="w+", dtype=np.dtype(dtype), shape=(n, dim))
    return matrix


# --------------------------------------------------------------------------- 3. key entities


def entity_rows(db: sqlite3.Connection, n: int) -> list[list[str]]:
    """Every sentence's entity names in mention order, by sid."""
    names: list[list[str]] = [[] for _ in range(n)]
    for sid, name in db.execute("SELECT sid, name FROM mentions ORDER BY sid, rowid"):
        names[sid].append(name)
    return names


def _key_stage(db: sqlite3.Connection, spec: IndexSpec) -> None:
    n = db.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
    names = entity_rows(db, n)
    if spec.key_entities is not None:
        keys = spec.key_entities(names)
    else:  # no scorer: every entity is key (α = 100 without scores)
        keys = tuple(tuple(ScoredEntity(e, 0.0) for e in dict.fromkeys(row)) for row in names)
    db.execute("BEGIN")
    db.execute("DELETE FROM keys")
    rows = ((sid, e.name, e.score) for sid, row in enumerate(keys) for e in row)
    db.executemany("INSERT INTO keys VALUES (?, ?, ?)", rows)
    db.execute("COMMIT")


def key_rows(db: sqlite3.Connection, n: int) -> tuple[tuple[ScoredEntity, ...], ...]:
    rows: list[list[ScoredEntity]] = [[] for _ in range(n)]
    for sid, name, score in db.execute("SELECT sid, name, score FROM keys ORDER BY rowid"):
        rows[sid].append(ScoredEntity(name, score))
    return tuple(tuple(r) for r in rows)


# --------------------------------------------------------------------------- 4. edges


def graph_inputs(db: sqlite3.Connection, out: Path) -> GraphInputs:
    """What the edge builders read, without the texts (SA reads passages and positions, EC
    the key entities, SS the memory-mapped embeddings)."""
    rows = db.execute("SELECT sid, passage, position, start, end FROM sentences ORDER BY sid")
    sentences = tuple(Sentence(sid, "", p, "", pos, a, b) for sid, p, pos, a, b in rows)
    embeddings = np.load(out / EMBEDDINGS, mmap_mode="r")
    return GraphInputs(sentences, key_rows(db, len(sentences)), embeddings)


def _edge_job(db: sqlite3.Connection, out: Path, spec: IndexSpec, name: str) -> Callable[[], None]:
    def job() -> None:
        save_layer(out, name, spec.edges[name](graph_inputs(db, out)))

    return job


def _counts(db: sqlite3.Connection, out: Path, spec: IndexSpec) -> dict[str, Any]:
    from chainrag.index.corpus.store import Layer

    def count(sql: str) -> int:
        return int(db.execute(sql).fetchone()[0])

    edges = {n: Layer.open(out / "layers" / n).nnz // 2 for n in spec.edges}
    return {
        "passages": count("SELECT COUNT(*) FROM passages"),
        "sentences": count("SELECT COUNT(*) FROM sentences"),
        "mentions": count("SELECT COUNT(*) FROM mentions"),
        "entities": count("SELECT COUNT(DISTINCT name) FROM mentions"),
        "key_entities": count("SELECT COUNT(DISTINCT name) FROM keys"),
        "edges": edges,
    }
