"""The streamed corpus index: equal to the in-memory build, resumable after a kill at any batch,
bad records named, opened memory-mapped, walked at the cost of its frontier."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from chainrag.context import StageContext
from chainrag.index.build import build_sentence_graph
from chainrag.index.corpus.build import build_corpus_index
from chainrag.index.corpus.source import CorpusError, read_passages
from chainrag.index.corpus.store import CorpusIndex, CorpusIndexError, Layer
from chainrag.index.graph import GraphView
from chainrag.recipes.recipe import IndexSpec, load_recipe

from .conftest import DATA_ROOT, ROOT

CORPUS = DATA_ROOT / "hipporag" / "2wikimultihopqa_corpus.json"


def recipe(tmp_path: Path) -> tuple[Path, IndexSpec]:
    """The paper's sentence graph with a cheap deterministic embedder (no model to load)."""
    path = tmp_path / "graph.yaml"
    path.write_text(
        f"base: {ROOT / 'recipes' / 'index' / 'sentence_graph.yaml'}\n"
        "index: {embedder: {kind: hashed_bow, dim: 64}}\n"
    )
    spec = load_recipe(path).index
    assert spec is not None
    return path, spec


def corpus_file(tmp_path: Path, n: int = 40, bad: dict[int, object] | None = None) -> Path:
    """The first ``n`` passages of HippoRAG's 2Wiki corpus as JSON Lines; ``bad`` replaces
    lines (1-based) with other records."""
    passages = json.loads(CORPUS.read_text())[:n]
    lines = [json.dumps(p) for p in passages]
    for number, record in (bad or {}).items():
        lines[number - 1] = json.dumps(record)
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def build(source: Path, spec: IndexSpec, out: Path, **kw: object) -> dict[str, object]:
    return build_corpus_index(
        [str(source)], spec, out, StageContext(), batch_passages=8, batch_sentences=32, **kw
    )  # type: ignore[arg-type]


def assert_same_index(a: Path, b: Path) -> None:
    """Two index folders hold the same rows, embeddings and layers."""
    tables = ("passages", "sentences", "mentions", "keys", "batches")
    with sqlite3.connect(a / "corpus.sqlite") as da, sqlite3.connect(b / "corpus.sqlite") as db:
        for table in tables:
            query = f"SELECT * FROM {table} ORDER BY rowid"
            assert da.execute(query).fetchall() == db.execute(query).fetchall(), table
    assert (a / "embeddings.npy").read_bytes() == (b / "embeddings.npy").read_bytes()
    for layer in sorted(p.name for p in (a / "layers").iterdir()):
        for part in ("data", "indices", "indptr"):
            file = Path("layers", layer, f"{part}.npy")
            assert (a / file).read_bytes() == (b / file).read_bytes(), file
    ma, mb = (json.loads((f / "manifest.json").read_text()) for f in (a, b))
    assert (ma["counts"], ma["corpus_sha256"]) == (mb["counts"], mb["corpus_sha256"])


def test_streamed_build_equals_the_in_memory_build(tmp_path: Path) -> None:
    _, spec = recipe(tmp_path)
    source = corpus_file(tmp_path)
    build(source, spec, tmp_path / "idx")
    passages = list(read_passages([str(source)]))
    graph, _ = build_sentence_graph(passages, spec, StageContext(), None)
    index = CorpusIndex.open(tmp_path / "idx", spec.embedder)
    n = len(graph)
    assert len(index) == n and list(index.texts) == list(graph.texts)
    assert [index.sentences[i] for i in range(n)] == list(graph.sentences)
    assert np.array_equal(np.asarray(index.embeddings), graph.embeddings)
    for name, matrix in graph.layers.items():
        assert (index.layers[name].csr(n) != matrix).nnz == 0, name
    view = GraphView(graph, graph.adjacency())
    for units in ([0], [3, 17], list(range(0, n, 7)), []):
        assert index.neighbours(units) == view.neighbours(units)


@pytest.mark.parametrize(
    ("stage", "after"), [("split", 2), ("embed", 3), ("embed", 99), ("edges.ss", 0)]
)  # 99: after the last embedding batch, before the key-entity and edge stages; edges.ss: as
# the similarity layer starts, the key entities and the EC layer done
def test_a_build_stopped_after_any_batch_resumes_to_the_same_index(
    tmp_path: Path, stage: str, after: int
) -> None:
    _, spec = recipe(tmp_path)
    source = corpus_file(tmp_path)
    build(source, spec, tmp_path / "whole")

    class KilledError(Exception):
        pass

    calls: list[str] = []

    def stop(name: str, done: int, total: int) -> None:
        calls.append(name)
        if name == stage and (calls.count(name) > after or (total and done == total)):
            raise KilledError

    with pytest.raises(KilledError):
        build(source, spec, tmp_path / "part", progress=stop)
    manifest = json.loads((tmp_path / "part" / "manifest.json").read_text())
    assert not manifest["complete"]
    with pytest.raises(CorpusIndexError, match="has not finished"):
        CorpusIndex.open(tmp_path / "part", spec.embedder)
    seen: list[tuple[str, int]] = []
    build(source, spec, tmp_path / "part", progress=lambda s, d, n: seen.append((s, d)))
    assert_same_index(tmp_path / "whole", tmp_path / "part")
    if stage == "embed":  # nothing recorded is split or encoded again
        assert not any(s == "split" for s, _ in seen)
        assert all(d > 32 * min(after, calls.count("embed")) for s, d in seen if s == "embed")


def test_each_graph_stage_shows_its_clock_from_its_start_to_its_end(tmp_path: Path) -> None:
    """The key entities and each edge layer (one call each, with no progress of their own) are
    shown at 0 of 1 as they start and while they run, and at 1 of 1 once done, in order."""
    _, spec = recipe(tmp_path)
    seen: list[tuple[str, int, int]] = []
    build(corpus_file(tmp_path), spec, tmp_path / "idx", progress=lambda *shown: seen.append(shown))
    graph = ["key_entities", *(f"edges.{name}" for name in spec.edges)]
    assert list(dict.fromkeys(s for s, _, _ in seen)) == ["split", "embed", *graph]
    for stage in graph:
        shown = [(done, total) for s, done, total in seen if s == stage]
        assert shown[0] == (0, 1) and shown[-1] == (1, 1)
        assert set(shown[:-1]) == {(0, 1)}


def test_ticking_moves_a_steps_clock_until_it_ends_and_ends_it_only_when_it_succeeds() -> None:
    import threading

    from chainrag.core.progress import ticking

    seen: list[tuple[str, int, int]] = []
    ticked = threading.Event()

    def progress(label: str, done: int, total: int) -> None:
        seen.append((label, done, total))
        if len(seen) >= 3:  # the call as it starts, then two from the clock
            ticked.set()

    with ticking(progress, "edges.ss", every=0.01):
        assert ticked.wait(60)
    assert len(seen) >= 4 and seen[-1] == ("edges.ss", 1, 1)
    assert set(seen[:-1]) == {("edges.ss", 0, 1)}
    seen.clear()
    with pytest.raises(KeyError), ticking(progress, "edges.ec", every=60):
        raise KeyError("edges.ec")
    assert seen == [("edges.ec", 0, 1)]  # never shown as done
    with ticking(None, "edges.sa"):  # no progress: nothing to call
        pass


def _rows(folder: Path, table: str) -> int:
    try:
        with sqlite3.connect(folder / "corpus.sqlite") as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_kill_9_during_a_real_build_then_resume_gives_the_same_index(tmp_path: Path) -> None:
    path, spec = recipe(tmp_path)
    source = corpus_file(tmp_path, n=120)
    build_corpus_index([str(source)], spec, tmp_path / "whole", StageContext(), batch_passages=8)
    args = [sys.executable, "-c", "from chainrag.cli.main import entry; entry()", "index",
            "--recipe", str(path), "--corpus", str(source), "--out", str(tmp_path / "part"),
            "--batch-passages", "8"]  # fmt: skip
    env = os.environ | {"TQDM_DISABLE": "1"}
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        db = tmp_path / "part" / "corpus.sqlite"
        if db.exists() and _rows(tmp_path / "part", "batches") >= 3:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert 3 <= _rows(tmp_path / "part", "batches") < 15
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "passages" in again.stdout and "edges" in again.stdout
    assert_same_index(tmp_path / "whole", tmp_path / "part")


def test_a_bad_record_is_named_and_what_was_built_is_kept(tmp_path: Path) -> None:
    _, spec = recipe(tmp_path)
    bad = corpus_file(tmp_path, bad={30: {"title": "X", "text": None}})
    with pytest.raises(CorpusError, match=r"corpus\.jsonl, line 30: field 'text' must be a string"):
        build(bad, spec, tmp_path / "idx")
    kept = _rows(tmp_path / "idx", "batches")
    assert kept == 3  # the batches before line 30 (8 passages each)
    fixed = corpus_file(tmp_path)  # the same file, repaired
    build(fixed, spec, tmp_path / "idx")
    build(corpus_file(tmp_path), spec, tmp_path / "whole")
    assert_same_index(tmp_path / "whole", tmp_path / "idx")


def test_a_changed_corpus_or_recipe_is_refused(tmp_path: Path) -> None:
    path, spec = recipe(tmp_path)
    source = corpus_file(tmp_path, bad={35: {"title": "X"}})
    with pytest.raises(CorpusError, match="line 35: field 'text' is missing"):
        build(source, spec, tmp_path / "idx")
    corpus_file(tmp_path, bad={2: {"title": "Changed", "text": "Another text."}})
    with pytest.raises(CorpusIndexError, match=r"corpus changed .* \(batch 1\)"):
        build(source, spec, tmp_path / "idx")
    other = load_recipe(path).index
    assert other is not None
    with pytest.raises(CorpusIndexError, match=r"built otherwise .*batch_passages"):
        build_corpus_index([str(source)], other, tmp_path / "idx", StageContext(), batch_passages=4)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"title": "a", "text": "b"}', "expected a JSON array"),
        ('[{"title": "a", "text": "b"}, 42]', r"record 2: expected a \{title, text\} object"),
        ('[{"title": ["a"], "text": "b"}]', "record 1: field 'title' must be a string"),
        ('[{"title": "a", "text": "b"} {"title": "c"}]', "record 2: expected ',' or ']'"),
        ('[{"title": "a", "text": "b"},', "not closed"),
    ],
)
def test_json_array_records_are_checked(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(CorpusError, match=message):
        list(read_passages([str(path)]))


def test_a_json_array_is_read_incrementally_across_buffer_boundaries(tmp_path: Path) -> None:
    import chainrag.index.corpus.source as source

    items = [{"title": f"t{i} é", "text": "ü" * (i % 50 + 1) + " end"} for i in range(300)]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(items, ensure_ascii=False, indent=1))
    old, source._CHUNK = source._CHUNK, 37  # odd-sized reads split characters and records
    try:
        got = list(read_passages([str(path), str(path)]))  # the second copy is deduplicated
    finally:
        source._CHUNK = old
    assert [(p.title, p.text) for p in got] == [(i["title"], i["text"]) for i in items]
    assert [p.pid for p in got] == [str(i) for i in range(300)]


def test_layers_are_read_by_rows_not_whole(tmp_path: Path) -> None:
    _, spec = recipe(tmp_path)
    build(corpus_file(tmp_path), spec, tmp_path / "idx")
    layer = Layer.open(tmp_path / "idx" / "layers" / "ss")
    assert isinstance(layer.indices, np.memmap) and isinstance(layer.data, np.memmap)
    cols, vals = layer.rows(np.array([0, 1]))
    expected = layer.csr(int(layer.indptr.shape[0] - 1))[[0, 1]]
    assert sorted(cols.tolist()) == sorted(expected.indices.tolist()) and vals.size == cols.size


def test_a_remote_embedder_gets_each_batch_as_it_is_split(tmp_path: Path) -> None:
    """With an embedder that waits on the network, the split stage sends each batch's sentences
    to it as they are written: the embed stage then finds every vector in the store and makes
    no request, and the index is the one the same vectors made locally (hashed_bow)."""
    import attrs

    from chainrag.components.index.remote_embedders import LiteLLMEmbedder
    from chainrag.standin.server import FakeOpenAI, serve

    _, local = recipe(tmp_path)
    source = corpus_file(tmp_path)
    build(source, local, tmp_path / "local")
    fake = FakeOpenAI([])
    at_embed: list[int] = []

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "embed" and not at_embed:
            at_embed.append(len(fake.embedded))

    with serve(fake) as base:
        embedder = LiteLLMEmbedder(model="openai/standin-embed", api_base=base, dimensions=64)
        remote = attrs.evolve(local, embedder=embedder)
        build(source, remote, tmp_path / "remote", progress=progress)
    assert len(fake.embedded) >= 5  # one request or more a split batch of 8 passages
    assert at_embed == [len(fake.embedded)]  # all of them before the embed stage began
    assert_same_index(tmp_path / "local", tmp_path / "remote")


def test_run_answers_a_dataset_over_a_prebuilt_corpus_index(tmp_path: Path) -> None:
    """``chainrag run --index DIR``: every question over one shared index, retrieval scored
    against the gold passages' titles, the index recorded in run.json."""
    from typer.testing import CliRunner

    from chainrag.cli.main import app
    from chainrag.data.datasets import load_dataset
    from chainrag.standin.server import FakeOpenAI, serve

    examples = load_dataset("musique", 3)
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"title": p.title, "text": p.text}) + "\n"
                              for e in examples for p in e.passages))  # fmt: skip
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        path = tmp_path / "naive.yaml"
        path.write_text(
            f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\nname: naive\n"
            "index: {embedder: {kind: hashed_bow, dim: 64}}\n"
            f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}'}}\n"
        )
        runner = CliRunner()
        built = runner.invoke(app, ["index", "--recipe", str(path), "--corpus", str(source),
                                    "--out", str(tmp_path / "idx")])  # fmt: skip
        assert built.exit_code == 0, built.output
        args = ["run", str(path), "--dataset", "musique", "--limit", "3", "--index",
                str(tmp_path / "idx"), "--out", str(tmp_path / "runs"), "--no-report"]  # fmt: skip
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
    folder = tmp_path / "runs" / "musique@corpus" / "naive"
    lines = [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and all(r["retrieval"]["level"] == "paragraph" for r in lines)
    assert any(r["retrieval"]["recall@10"] > 0 for r in lines)
    meta = json.loads((folder / "run.json").read_text())
    assert meta["index"]["counts"]["passages"] == sum(len(e.passages) for e in examples)
    from chainrag.report import find_runs

    assert find_runs([folder])[0].dataset == "musique@corpus"
    other = tmp_path / "other.yaml"
    other.write_text(
        f"base: {path}\nname: other\nindex: {{embedder: {{kind: hashed_bow, dim: 32}}}}\n"
    )
    refused = CliRunner().invoke(app, ["run", str(other), "--dataset", "musique", "--limit", "1",
                                       "--index", str(tmp_path / "idx"), "--out",
                                       str(tmp_path / "runs")])  # fmt: skip
    assert refused.exit_code == 1 and "not the one" in refused.output
    assert "index.embedder.dim: 64 then, 32 now" in refused.output  # the field, not two hashes
    assert "sha256:" not in refused.output


def test_seed_retrieval_over_a_corpus_index_through_each_search(tmp_path: Path) -> None:
    """Seeds from the memory-mapped embeddings: exact, and FAISS with parameters that make it
    exhaustive, give the same candidates; a built vector index is kept and read again."""
    from chainrag.components.retrieval.retrievers import DenseRerank
    from chainrag.components.retrieval.search import ExactSearch, FaissHNSW, FaissIVF

    pytest.importorskip("faiss")
    _, spec = recipe(tmp_path)
    build(corpus_file(tmp_path), spec, tmp_path / "idx")
    index = CorpusIndex.open(tmp_path / "idx", spec.embedder)
    ctx = StageContext()
    n = len(index)
    dense = index.embeddings @ spec.embedder(["the film director"], ctx, "query")[0]
    expected = np.lexsort((np.arange(n), -dense))[:20].tolist()
    for search in (ExactSearch(), FaissIVF(nlist=4, nprobe=4), FaissHNSW(ef_search=n)):
        retriever = DenseRerank(k=20, candidates=20, search=search)
        hits = retriever("the film director", index, ctx)
        assert [h.index for h in hits] == expected, search
    saved = sorted((tmp_path / "idx" / "search").iterdir())
    assert len(saved) == 3
    again = CorpusIndex.open(tmp_path / "idx", spec.embedder)
    hits = DenseRerank(k=5, search=FaissIVF(nlist=4, nprobe=4))("the film director", again, ctx)
    assert [h.index for h in hits] == expected[:5]


def test_a_blocked_ivf_index_keeps_its_vectors_in_list_order_beside_it(tmp_path: Path) -> None:
    """The vectors in list order are moved with the index file out of its temporary name; the
    session that built the index and a later one search the lists as slices of that file and
    find the same seeds; a folder from before that file (none beside the index) still gives
    them, by gathering."""
    from chainrag.components.retrieval.retrievers import DenseRerank
    from chainrag.components.retrieval.search import BlockedIVF, BlockedIVFIndex, lists_file

    _, spec = recipe(tmp_path)
    build(corpus_file(tmp_path), spec, tmp_path / "idx")
    search = BlockedIVF(nlist=4, nprobe=4)  # every list probed: exact
    ctx = StageContext()
    index = CorpusIndex.open(tmp_path / "idx", spec.embedder)
    n = len(index)
    dense = index.embeddings @ spec.embedder(["the film director"], ctx, "query")[0]
    expected = np.lexsort((np.arange(n), -dense))[:20].tolist()

    def seeds(opened: CorpusIndex) -> list[int]:
        hits = DenseRerank(k=20, candidates=20, search=search)("the film director", opened, ctx)
        return [h.index for h in hits]

    assert seeds(index) == expected
    [saved, beside] = sorted((tmp_path / "idx" / "search").iterdir())
    assert saved.suffix == ".index" and beside == lists_file(saved)
    opened = CorpusIndex.open(tmp_path / "idx", spec.embedder)
    for searcher in (index.vector_index(search), opened.vector_index(search)):
        assert isinstance(searcher, BlockedIVFIndex) and searcher.in_lists is not None
    assert seeds(opened) == expected
    beside.unlink()
    before = CorpusIndex.open(tmp_path / "idx", spec.embedder)
    searcher = before.vector_index(search)
    assert isinstance(searcher, BlockedIVFIndex) and searcher.in_lists is None
    assert seeds(before) == expected


def test_index_section_names_a_recipe_without_one(tmp_path: Path) -> None:
    from chainrag.index.build import IndexBuildError
    from chainrag.index.corpus.indexing import index_section

    path, spec = recipe(tmp_path)
    assert index_section(path) == spec
    bare = tmp_path / "bare.yaml"
    bare.write_text("index: null\n")
    with pytest.raises(IndexBuildError, match=f"^{bare} has no index: section$"):
        index_section(bare)


def test_contexts_are_a_dev_sets_questions_or_one_corpus(tmp_path: Path) -> None:
    from chainrag.data.datasets import DatasetError, load_dataset
    from chainrag.index.corpus.indexing import contexts_of

    questions = load_dataset("musique", 2)
    assert contexts_of("musique", None, 2) == [(q.qid, q.passages) for q in questions]
    records = json.loads(CORPUS.read_text())[:5]
    source = tmp_path / "corpus.json"
    source.write_text(json.dumps(records))
    [(name, passages)] = contexts_of(None, str(source))
    assert name == str(source)
    assert [(p.title, p.text) for p in passages] == [(r["title"], r["text"]) for r in records]
    with pytest.raises(DatasetError, match="unknown dataset 'nope'"):
        contexts_of("nope", None)


def test_index_contexts_sums_what_the_indexes_hold(tmp_path: Path) -> None:
    from chainrag.index.build import IndexCache, build_index
    from chainrag.index.corpus.indexing import contexts_of, index_contexts

    _, spec = recipe(tmp_path)
    contexts = contexts_of("musique", None, 2)
    seen: list[tuple[str, int, int]] = []
    cache = IndexCache(tmp_path / "cache")
    totals = index_contexts(contexts, spec, StageContext(), cache, lambda *a: seen.append(a))
    assert seen == [("indexing", 0, 2), ("indexing", 1, 2), ("indexing", 2, 2)]
    reports = [build_index(p, spec, StageContext(), None)[1] for _, p in contexts]
    assert (totals.contexts, totals.built, totals.chunked) == (2, 2, False)
    assert totals.units == sum(r.units for r in reports)
    assert totals.entities == sum(r.entities for r in reports)
    assert dict(totals.edges) == {k: sum(r.edges[k] for r in reports) for k in reports[0].edges}
    assert set(totals.seconds) == set(reports[0].seconds)
    lines = totals.lines()
    assert lines[:2] == [
        "2 index(es): 2 built, 0 from the cache",
        f"sentences: {totals.units:,}   entities: {totals.entities:,}",
    ]
    assert "seconds per stage (built indexes only):" in lines
    again = index_contexts(contexts, spec, StageContext(), cache)
    assert (again.built, again.units, dict(again.seconds)) == (0, totals.units, {})
    assert again.lines()[0] == "2 index(es): 0 built, 2 from the cache"


def test_build_from_recipe_reports_the_manifests_counts(tmp_path: Path) -> None:
    from chainrag.index.corpus.indexing import CorpusBuild, build_from_recipe, prepare_search

    path, _ = recipe(tmp_path)
    source = corpus_file(tmp_path)
    built = build_from_recipe(path, [str(source)], tmp_path / "idx", batch_passages=8)
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    counts = manifest["counts"]
    assert built == CorpusBuild(tmp_path / "idx", counts["passages"], counts["sentences"],
                                counts["entities"], counts["key_entities"], counts["edges"],
                                manifest["stages"], built.seconds)  # fmt: skip
    first, second = built.lines()
    assert first.startswith(f"{tmp_path / 'idx'}: 40 passages, {counts['sentences']:,} units, ")
    assert first.endswith(f"edges: ec {counts['edges']['ec']:,}, ss {counts['edges']['ss']:,}, "
                          f"sa {counts['edges']['sa']:,}")  # fmt: skip
    assert second.startswith("stages (this and earlier sessions): split ")
    assert prepare_search(path, tmp_path / "idx") is None  # the recipe names no seed search


def test_an_unknown_engine_is_named(tmp_path: Path) -> None:
    from chainrag.index.corpus.indexing import build_from_recipe

    path, _ = recipe(tmp_path)
    with pytest.raises(CorpusIndexError, match="unknown engine 'spark'; engines: local, ray"):
        build_from_recipe(path, [str(corpus_file(tmp_path))], tmp_path / "idx", engine="spark")


def test_prepare_search_builds_the_seed_retrievers_vector_index(tmp_path: Path) -> None:
    from chainrag.components.retrieval.search import FaissIVF
    from chainrag.index.corpus.indexing import build_from_recipe, prepare_search

    pytest.importorskip("faiss")
    path, _ = recipe(tmp_path)
    build_from_recipe(path, [str(corpus_file(tmp_path))], tmp_path / "idx")
    seeded = tmp_path / "seeded.yaml"
    seeded.write_text(
        f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\n"
        "index: {embedder: {kind: hashed_bow, dim: 64}}\n"
        "retrieval: {seed: {search: {kind: faiss_ivf, nlist: 4, nprobe: 4}}}\n"
    )
    ready = prepare_search(seeded, tmp_path / "idx")
    assert ready is not None and ready.search == FaissIVF(nlist=4, nprobe=4)
    assert len(list((tmp_path / "idx" / "search").iterdir())) == 1
