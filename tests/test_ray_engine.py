"""The Ray engine: a corpus index built with ``--engine ray`` (Ray Data actors, local mode) equals
the single-process build; results come back in batch order; a worker's exception reaches the
caller; the package imports without Ray."""

from __future__ import annotations

import json
import os
import pickle
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from chainrag.context import StageContext
from chainrag.index.corpus.build import build_corpus_index, embed_texts
from chainrag.index.corpus.ray_engine import (
    EncoderActor,
    RayEngine,
    RayEngineError,
    in_order,
    windows,
)
from chainrag.recipes.recipe import IndexSpec, load_recipe

from .conftest import ROOT

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.filterwarnings(  # Ray Data's own, when it copies its DataContext
    "ignore::DeprecationWarning:ray.data.context"
)

PEOPLE = [
    "Ada Lovelace",
    "Alan Turing",
    "Grace Hopper",
    "Marie Curie",
    "Niels Bohr",
    "Lise Meitner",
]
PLACES = ["London", "Paris", "Berlin", "Vienna", "Copenhagen", "New York"]
BATCHES = {"batch_passages": 16, "batch_sentences": 16}
"""30 passages (90 sentences): 2 split batches and 6 embedding batches."""


def toy_corpus(path: Path, n: int = 30) -> Path:
    """``n`` passages of three sentences with people, places and years, as JSON Lines."""
    with path.open("w") as fh:
        for i in range(n):
            who, where, then = PEOPLE[i % 6], PLACES[i * 5 % 6], PLACES[(i + 1) % 6]
            text = (f"{who} was born in {where} in {1800 + i}. {who} later moved to {then}. "
                    f"The work of {who} influenced {PEOPLE[(i + 2) % 6]}.")  # fmt: skip
            fh.write(json.dumps({"id": f"p{i}", "title": f"Passage {i}", "text": text}) + "\n")
    return path


def toy_recipe(path: Path) -> tuple[Path, IndexSpec]:
    """The paper's sentence graph (spaCy sentences and NER, EC/SS/SA) with a hashed embedder."""
    path.write_text(
        f"base: {ROOT / 'recipes' / 'index' / 'sentence_graph.yaml'}\n"
        "index: {embedder: {kind: hashed_bow, dim: 32}}\n"
    )
    spec = load_recipe(path).index
    assert spec is not None
    return path, spec


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, IndexSpec, Path]:
    """(corpus, recipe, spec, the local engine's index), built once."""
    root = tmp_path_factory.mktemp("toy")
    corpus = toy_corpus(root / "corpus.jsonl")
    recipe, spec = toy_recipe(root / "graph.yaml")
    local = root / "local"
    build_corpus_index([str(corpus)], spec, local, StageContext(), **BATCHES)  # type: ignore[arg-type]
    return corpus, recipe, spec, local


@pytest.fixture(scope="module")
def local_ray() -> Iterator[str]:
    """A local Ray of 2 CPUs on loopback (the tests may not leave it); its address."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1", object_store_memory=256 << 20)  # fmt: skip
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def assert_same_index(a: Path, b: Path) -> None:
    """Same manifest counts, the same rows in every SQLite table, the same embeddings and
    layer files, byte for byte."""
    with sqlite3.connect(a / "corpus.sqlite") as da, sqlite3.connect(b / "corpus.sqlite") as db:
        names = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        tables = [t for (t,) in da.execute(names)]
        assert tables == [t for (t,) in db.execute(names)]
        for table in tables:
            query = f"SELECT * FROM {table} ORDER BY rowid"  # names from the schema
            assert da.execute(query).fetchall() == db.execute(query).fetchall(), table
    assert (a / "embeddings.npy").read_bytes() == (b / "embeddings.npy").read_bytes()
    layers = sorted(p.relative_to(a) for p in (a / "layers").rglob("*.npy"))
    assert layers == sorted(p.relative_to(b) for p in (b / "layers").rglob("*.npy"))
    assert {f.parent.name for f in layers} == {"ec", "ss", "sa"}
    for file in layers:
        assert (a / file).read_bytes() == (b / file).read_bytes(), file
    ma, mb = (json.loads((f / "manifest.json").read_text()) for f in (a, b))
    assert ma["counts"] == mb["counts"]
    assert ma["counts"]["sentences"] == 90 and ma["counts"]["edges"]["ec"] > 0


def test_the_ray_engine_builds_the_local_engines_index(
    toy: tuple[Path, Path, IndexSpec, Path], local_ray: str, tmp_path: Path
) -> None:
    corpus, _, spec, local = toy
    engine = RayEngine(window=3)  # split: one window of 2 batches; embeddings: two of 3
    manifest = build_corpus_index([str(corpus)], spec, tmp_path / "ray", StageContext(),
                                  engine=engine, **BATCHES)  # type: ignore[arg-type]  # fmt: skip
    assert manifest["complete"]
    assert_same_index(local, tmp_path / "ray")


def test_chainrag_index_with_engine_ray_joins_ray_address(
    toy: tuple[Path, Path, IndexSpec, Path], local_ray: str, tmp_path: Path
) -> None:
    corpus, recipe, _, local = toy
    out = tmp_path / "cli"
    args = [sys.executable, "-c", "from chainrag.cli.main import entry; entry()", "index",
            "--recipe", str(recipe), "--corpus", str(corpus), "--out", str(out),
            "--engine", "ray", "--batch-passages", "16", "--batch-sentences", "16"]  # fmt: skip
    env = os.environ | {"TQDM_DISABLE": "1", "RAY_ADDRESS": local_ray}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "30 passages, 90 units" in done.stdout
    assert_same_index(local, out)


def test_results_come_back_in_batch_order_whatever_order_they_arrive_in() -> None:
    results = [f"result {i}" for i in range(20)]
    rows = [{"seq": i, "ok": True, "payload": pickle.dumps(r)} for i, r in enumerate(results)]
    random.Random(0).shuffle(rows)
    assert list(in_order(rows, 20)) == results
    assert [len(w) for w in windows(iter(range(7)), 3)] == [3, 3, 1]


def test_missing_or_repeated_batches_are_errors() -> None:
    row = {"seq": 0, "ok": True, "payload": pickle.dumps(0)}
    with pytest.raises(RayEngineError, match="returned 1 of 2 batches"):
        list(in_order([row], 2))
    with pytest.raises(RayEngineError, match="batch 0 twice or out of range"):
        list(in_order([row, row], 2))


def test_a_workers_exception_is_raised_again_in_the_caller(tmp_path: Path) -> None:
    _, spec = toy_recipe(tmp_path / "graph.yaml")
    actor = EncoderActor(embed_texts, spec)  # what a Ray Data actor runs, in this process
    batches = [pickle.dumps(["one sentence"]), pickle.dumps(None)]  # None: not a list of texts
    table = actor(pa.table({"seq": [0, 1], "payload": pa.array(batches, pa.binary())}))
    results = in_order(table.to_pylist(), 2)
    assert next(results).shape == (1, 32)
    with pytest.raises(TypeError) as caught:
        next(results)
    assert "raised on a Ray worker" in "".join(caught.value.__notes__)


def test_the_package_imports_without_loading_ray() -> None:
    code = ("import sys, chainrag.cli.main, chainrag.index.corpus.build, "
            "chainrag.index.corpus.ray_engine; "
            "assert 'ray' not in sys.modules, 'ray imported'")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
