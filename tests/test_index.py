"""Building indexes for real questions; the content-hash cache of indexes and embeddings."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.index.edges import EntityCooccurrence, SimilarityTopK, StructuralAdjacency
from chainrag.components.index.embedders import FlagModelEmbedder, HashedBagOfWords
from chainrag.components.index.key_entities import BM25KeyEntities
from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences
from chainrag.context import StageContext
from chainrag.data.datasets import load_dataset
from chainrag.index.build import EmbeddingCache, IndexBuildError, IndexCache, build_index
from chainrag.index.graph import ChunkIndex, SentenceGraph
from chainrag.protocols.context import Context
from chainrag.recipes.recipe import IndexSpec, load_recipe

from .conftest import ROOT

FAST = IndexSpec(
    embedder=HashedBagOfWords(dim=64),
    splitter=SpacySentences(),
    ner=SpacyNER(),
    key_entities=BM25KeyEntities(alpha=60),
    edges={"ec": EntityCooccurrence(), "ss": SimilarityTopK(m=10), "sa": StructuralAdjacency()},
)


@pytest.fixture(scope="module")
def ctx() -> Context:
    return StageContext()


@pytest.mark.parametrize("dataset", ["musique", "hotpotqa", "2wiki"])
def test_sentence_graph_of_real_questions(dataset: str, ctx: Context, tmp_path: Path) -> None:
    for q in load_dataset(dataset, limit=2):
        graph, report = build_index(q.passages, FAST, ctx, IndexCache(tmp_path))
        assert isinstance(graph, SentenceGraph)
        assert not report.cached and report.units == len(graph) > 10
        for s in graph.sentences:  # provenance: offsets point at the text in its passage
            assert graph.passages[s.passage].text[s.start : s.end] == s.text
            assert s.title == graph.passages[s.passage].title
        positions = [(s.passage, s.position) for s in graph.sentences]
        assert positions == sorted(positions)
        assert graph.incidence.shape == (len(graph), len(graph.entities))
        assert graph.embeddings.shape == (len(graph), 64)
        for layer in graph.layers.values():
            assert layer.shape == (len(graph), len(graph)) and (layer != layer.T).nnz == 0
        assert graph.edge_counts()["sa"] > 0 and graph.edge_counts()["ss"] > 0


def test_cache_reuses_and_rebuilds(ctx: Context, tmp_path: Path) -> None:
    q = load_dataset("musique", limit=1)[0]
    cache = IndexCache(tmp_path / "indexes")
    first, r1 = build_index(q.passages, FAST, ctx, cache)
    second, r2 = build_index(q.passages, FAST, ctx, cache)
    assert (r1.cached, r2.cached) == (False, True)
    assert second == first and r2.seconds == {}
    changed = attrs.evolve(FAST, edges={**FAST.edges, "sa": StructuralAdjacency(window=1)})
    third, r3 = build_index(q.passages, changed, ctx, cache)
    assert not r3.cached
    assert third.layers["sa"].nnz < first.layers["sa"].nnz
    texts = {s.text for s in first.sentences}  # embeddings were reused: one vector per text
    assert len(cache.embeddings.store) == len(texts)


def test_a_damaged_index_is_rebuilt(ctx: Context, tmp_path: Path) -> None:
    q = load_dataset("musique", limit=1)[0]
    cache = IndexCache(tmp_path)
    graph, _ = build_index(q.passages, FAST, ctx, cache)
    folder = cache.path_for(q.passages, FAST)
    (folder / "arrays.npz").write_bytes(b"garbage")
    again, report = build_index(q.passages, FAST, ctx, cache)
    assert not report.cached and again == graph


def test_chunk_index(ctx: Context, tmp_path: Path) -> None:
    from chainrag.components.index.chunkers import WordChunks

    q = load_dataset("hotpotqa", limit=1)[0]
    spec = IndexSpec(embedder=HashedBagOfWords(dim=32), chunker=WordChunks(size=20))
    index, report = build_index(q.passages, spec, ctx, IndexCache(tmp_path))
    assert isinstance(index, ChunkIndex)
    assert report.units == len(index.chunks) == len(index.embeddings)
    loaded, _ = build_index(q.passages, spec, ctx, IndexCache(tmp_path))
    assert loaded == index


def test_missing_stage_is_a_clear_error(ctx: Context) -> None:
    with pytest.raises(IndexBuildError, match=r"needs index\.splitter and index\.embedder"):
        build_index((), IndexSpec(), ctx)


def test_embedding_cache_round_trip(ctx: Context, tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    texts = ["Paris is in France.", "Berlin is in Germany."]
    a = cache.embed(HashedBagOfWords(dim=16), texts, ctx)
    b = cache.embed(HashedBagOfWords(dim=16), texts, ctx)
    assert np.array_equal(a, b)
    assert len(cache.store) == 2
    cache.embed(HashedBagOfWords(dim=16), texts, ctx, role="query")
    assert len(cache.store) == 4


@pytest.mark.slow
def test_real_embedder_on_a_real_question(ctx: Context, tmp_path: Path) -> None:
    spec = attrs.evolve(FAST, embedder=FlagModelEmbedder())
    q = load_dataset("2wiki", limit=1)[0]
    graph, _ = build_index(q.passages, spec, ctx, IndexCache(tmp_path))
    assert graph.embeddings.shape[1] == 384
    assert np.allclose(np.linalg.norm(graph.embeddings, axis=1), 1.0, atol=1e-4)
    query = FlagModelEmbedder()(["Who directed The Serpent's Egg?"], ctx, role="query")
    best = int(np.argmax(graph.embeddings @ query[0]))
    assert "Serpent" in graph.sentences[best].text or "Bergman" in graph.sentences[best].text


def test_index_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"base: {ROOT / 'recipes' / 'index' / 'sentence_graph.yaml'}\n"
        "index: {embedder: {kind: hashed_bow, dim: 32}}\n"
    )
    assert load_recipe(recipe).index is not None
    runner = CliRunner()
    first = runner.invoke(
        app, ["index", "--recipe", str(recipe), "--dataset", "musique", "--limit", "2"]
    )
    assert first.exit_code == 0, first.output
    assert "2 index(es): 2 built, 0 from the cache" in first.output
    assert "edges ec:" in first.output and "seconds per stage" in first.output
    again = runner.invoke(
        app, ["index", "--recipe", str(recipe), "--dataset", "musique", "--limit", "2"]
    )
    assert "0 built, 2 from the cache" in again.output
    bad = runner.invoke(app, ["index", "--recipe", str(recipe)])
    assert bad.exit_code == 2 and "exactly one of --dataset and --corpus" in bad.output


def test_what_an_index_offers_is_told_by_its_protocols() -> None:
    """An index's units, the vector indexes it keeps and a component's file identity are
    optional parts told by ``isinstance`` on a Protocol, not by probing for an attribute."""
    from scipy import sparse

    from chainrag.components.index.linear_adapter import AdaptedEmbedder
    from chainrag.core.types import Chunk, Passage, Sentence
    from chainrag.index.corpus.store import CorpusIndex
    from chainrag.index.graph import GraphView, units_of
    from chainrag.protocols.parts import FileIdentified
    from chainrag.protocols.units import KeepsVectorIndexes

    passage = Passage("p0", "Danube", "The Danube rises in Germany.")
    sentence = Sentence(0, passage.text, 0, passage.title, 0, 0, len(passage.text))
    vectors, embedder = np.zeros((1, 4), dtype=np.float32), HashedBagOfWords(dim=4)
    graph = SentenceGraph(
        passages=(passage,), sentences=(sentence,), embeddings=vectors, embedder=embedder,
        entities=(), incidence=sparse.csr_matrix((1, 0)), key_entities=((),), layers={},
    )  # fmt: skip
    chunk = Chunk(0, passage.text, 0, passage.title, 0, 0, len(passage.text))
    chunks = ChunkIndex((passage,), (chunk,), vectors, embedder)
    assert units_of(graph) == units_of(GraphView(graph, sparse.csr_matrix((1, 1)))) == (sentence,)
    assert units_of(chunks) == (chunk,)
    with pytest.raises(TypeError, match="neither sentences nor chunks"):
        units_of(embedder)  # type: ignore[arg-type]
    assert issubclass(CorpusIndex, KeepsVectorIndexes)
    assert not any(issubclass(c, KeepsVectorIndexes) for c in (SentenceGraph, ChunkIndex))
    assert issubclass(AdaptedEmbedder, FileIdentified)
    assert not issubclass(HashedBagOfWords, FileIdentified)
