"""The store of values by text: every text embedded, split and tagged once; several writers; a
killed build and a damaged file lose nothing; bounded; ``chainrag cache``; rerankers and
judges take the index's vectors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.index import embedders
from chainrag.components.index.edges import EntityCooccurrence, SimilarityTopK, StructuralAdjacency
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.index.key_entities import BM25KeyEntities
from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences
from chainrag.components.retrieval.judges import SimilarityJudge
from chainrag.components.retrieval.rerankers import DenseRerank
from chainrag.context import StageContext
from chainrag.core.text_store import TextStore
from chainrag.core.types import FloatArray, Hit, Mention, Passage
from chainrag.data.datasets import load_dataset
from chainrag.index.build import IndexCache, build_index, build_sentence_graph
from chainrag.index.stores import AnnotationCache, EmbeddingCache, space_of, stores
from chainrag.protocols.context import Context
from chainrag.recipes.recipe import IndexSpec

from .processes import write_at_once

SPEC = IndexSpec(
    embedder=HashedBagOfWords(dim=64),
    splitter=SpacySentences(),
    ner=SpacyNER(),
    key_entities=BM25KeyEntities(alpha=60),
    edges={"ec": EntityCooccurrence(), "ss": SimilarityTopK(m=10), "sa": StructuralAdjacency()},
)


@attrs.define
class Counted:
    """How many texts each stage was asked for."""

    embedded: list[str] = attrs.field(factory=list)
    tagged: list[str] = attrs.field(factory=list)
    split: list[str] = attrs.field(factory=list)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    seen = Counted()
    real_hash, real_ner, real_split = (embedders.hashed_bag_of_words, SpacyNER.__call__,
                                       SpacySentences.__call__)  # fmt: skip

    def hashed(texts: Sequence[str], dim: int) -> FloatArray:
        seen.embedded.extend(texts)
        return real_hash(texts, dim)

    def ner(self: SpacyNER, texts: Sequence[str], ctx: Context) -> tuple[tuple[Mention, ...], ...]:
        seen.tagged.extend(texts)
        return real_ner(self, texts, ctx)

    def split(self: SpacySentences, passages: Sequence[Passage], ctx: Context) -> tuple:  # type: ignore[type-arg]
        seen.split.extend(p.text for p in passages)
        return real_split(self, passages, ctx)

    monkeypatch.setattr(embedders, "hashed_bag_of_words", hashed)
    monkeypatch.setattr(SpacyNER, "__call__", ner)
    monkeypatch.setattr(SpacySentences, "__call__", split)
    return seen


def test_a_text_shared_by_questions_is_computed_once(counted: Counted, tmp_path: Path) -> None:
    """long:musique pads each question with other questions' paragraphs: the second index
    computes only the paragraphs and sentences the first did not have."""
    one, two = load_dataset("long:musique", limit=2)
    cache = IndexCache(tmp_path / "indexes")
    first, _ = build_index(one.passages, SPEC, StageContext(), cache)
    assert len(counted.embedded) == len({s.text for s in first.sentences})
    assert len(counted.split) == len({p.text for p in one.passages})
    before = Counted(list(counted.embedded), list(counted.tagged), list(counted.split))
    second, _ = build_index(two.passages, SPEC, StageContext(), cache)
    shared = {p.text for p in one.passages} & {p.text for p in two.passages}
    assert shared  # the padding repeats paragraphs across questions
    new_split = counted.split[len(before.split) :]
    assert set(new_split) == {p.text for p in two.passages} - {p.text for p in one.passages}
    new_embedded = counted.embedded[len(before.embedded) :]
    assert set(new_embedded) == {s.text for s in second.sentences} - {
        s.text for s in first.sentences
    }
    assert set(counted.tagged[len(before.tagged) :]) == set(new_embedded)
    fresh, _ = build_sentence_graph(two.passages, SPEC, StageContext(), None)
    assert fresh == second  # the stored values give the same index as a build without them


def test_the_store_keys_on_embedder_role_and_files(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    texts = ["Paris is in France.", "Paris is in France.", "Berlin is in Germany."]
    a = cache.embed(HashedBagOfWords(dim=16), texts, StageContext())
    assert a.shape == (3, 16) and np.array_equal(a[0], a[1])
    assert len(cache.store) == 2  # a text repeated is stored once
    cache.embed(HashedBagOfWords(dim=32), texts, StageContext())
    cache.embed(HashedBagOfWords(dim=16), texts, StageContext(), role="query")
    assert len(cache.store) == 6
    spaces = {space_of(HashedBagOfWords(dim=16), role=r) for r in ("query", "passage")}
    assert len(spaces) == 2
    assert space_of(SpacyNER(processes=2), role="ner") == space_of(SpacyNER(), role="ner")
    assert space_of(SpacyNER(labels=("PERSON",)), role="ner") != space_of(SpacyNER(), role="ner")


class BuildKilledError(Exception):
    pass


def test_a_killed_build_keeps_what_it_computed(counted: Counted, tmp_path: Path) -> None:
    """A build stopped after its first chunk of texts: the rerun computes only the rest, and the
    vectors are those of an uninterrupted build."""
    texts = [f"sentence number {i} of the corpus" for i in range(10)]
    cache = EmbeddingCache(tmp_path, chunk=4)
    calls = 0

    @attrs.frozen
    class Dies:
        def __call__(self, part: Sequence[str], ctx: Context, role: str = "passage") -> FloatArray:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise BuildKilledError
            return HashedBagOfWords(dim=16)(part, ctx)

    space = space_of(Dies(), role="passage")
    with pytest.raises(BuildKilledError):
        cache.embed(Dies(), texts, StageContext())
    assert len(cache.store.get(space, texts)) == 4  # the first chunk was kept
    counted.embedded.clear()
    again = cache.embed(Dies(), texts, StageContext())
    assert counted.embedded == texts[4:]
    assert np.array_equal(again, HashedBagOfWords(dim=16)(texts, StageContext()))


def test_a_damaged_store_file_is_replaced(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    texts = ["Paris is in France.", "Berlin is in Germany."]
    good = cache.embed(HashedBagOfWords(dim=16), texts, StageContext())
    path = tmp_path / "vectors.sqlite"
    cache.store.close()
    for part in tmp_path.glob("vectors.sqlite-*"):
        part.unlink()
    path.write_bytes(b"this is not a database at all" * 200)
    reopened = EmbeddingCache(tmp_path)
    assert np.array_equal(reopened.embed(HashedBagOfWords(dim=16), texts, StageContext()), good)
    assert (tmp_path / "vectors.sqlite.damaged").is_file()
    assert len(reopened.store) == 2
    # damaged while open: the next statement moves it aside too
    path.write_bytes(b"garbage" * 4096)
    assert np.array_equal(reopened.embed(HashedBagOfWords(dim=16), texts, StageContext()), good)


def test_the_store_stays_within_its_bound(tmp_path: Path) -> None:
    store = TextStore(tmp_path / "s.sqlite", max_bytes=256 * 1024)
    for batch in range(40):
        store.put("space", {f"text {batch} {i}": bytes(1536) for i in range(20)})
        assert store.live_bytes() <= 256 * 1024
    assert 0 < len(store) < 800
    newest = store.get("space", [f"text 39 {i}" for i in range(20)])
    assert len(newest) == 20  # the oldest values go first
    store.clear()
    assert len(store) == 0


def _writer(path: str, worker: int) -> None:
    store = TextStore(path)
    for i in range(30):  # half the texts are written by every worker
        text = f"shared {i}" if i % 2 else f"own {worker} {i}"
        store.put("space", {text: f"{text}".encode()})


def test_several_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    TextStore(path).close()
    write_at_once(_writer, path)
    store = TextStore(path)
    assert len(store) == 4 * 15 + 15
    found = store.get("space", ["shared 1", "own 3 0"])
    assert found == {"shared 1": b"shared 1", "own 3 0": b"own 3 0"}


def test_annotations_are_those_of_spacy(tmp_path: Path) -> None:
    q = load_dataset("musique", limit=1)[0]
    cache = AnnotationCache(tmp_path)
    stored = cache.sentences(SpacySentences(), q.passages, StageContext())
    assert stored == SpacySentences()(q.passages, StageContext())
    assert cache.sentences(SpacySentences(), q.passages, StageContext()) == stored
    texts = [s.text for s in stored]
    mentions = cache.mentions(SpacyNER(), texts, StageContext())
    assert mentions == SpacyNER()(texts, StageContext())
    assert cache.mentions(SpacyNER(), texts, StageContext()) == mentions


def test_dense_rerank_and_judge_take_the_index_vectors(counted: Counted, tmp_path: Path) -> None:
    q = load_dataset("musique", limit=1)[0]
    graph, _ = build_index(q.passages, SPEC, StageContext(), IndexCache(tmp_path))
    view = graph.view()
    ctx = StageContext(index=view)
    texts = list(view.texts[:20])
    hits = [Hit(i, 0.0) for i in range(20)]
    counted.embedded.clear()
    ranked = DenseRerank()(q.question, hits, texts, ctx)
    SimilarityJudge()(q.question, texts, ctx)
    assert counted.embedded == [q.question]  # the query once; no unit embedded again
    query = HashedBagOfWords(dim=64)([q.question], ctx, "query")[0]
    fresh = HashedBagOfWords(dim=64)(texts, ctx) @ query
    assert [h.index for h in ranked] == sorted(range(20), key=lambda i: (-fresh[i], i))
    outside = DenseRerank()(q.question, [Hit(0, 0.0)], ["not a unit of the index"], ctx)
    assert len(outside) == 1 and counted.embedded[-1] == "not a unit of the index"


def test_cache_command_shows_and_clears(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path))
    EmbeddingCache().embed(HashedBagOfWords(dim=16), ["a text"], StageContext())
    AnnotationCache().mentions(SpacyNER(), ["Paris is in France."], StageContext())
    runner = CliRunner()
    shown = runner.invoke(app, ["cache"])
    assert shown.exit_code == 0, shown.output
    assert "embeddings" in shown.output and "annotations" in shown.output
    assert "llm" in shown.output and str(tmp_path) in shown.output
    sizes = {s.name: s.bytes for s in stores()}
    assert sizes["embeddings"] > 0 and sizes["annotations"] > 0
    cleared = runner.invoke(app, ["cache", "clear", "--embeddings"])
    assert cleared.exit_code == 0 and "cleared embeddings" in cleared.output
    sizes = {s.name: s.bytes for s in stores()}
    assert sizes["embeddings"] == 0 and sizes["annotations"] > 0
    assert runner.invoke(app, ["cache", "clear"]).exit_code == 0
    assert all(s.bytes == 0 for s in stores())
