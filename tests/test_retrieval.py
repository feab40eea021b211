"""Seed retrieval, rerankers, expansion and retrieval metrics (ChainRAG §3.2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrag.components.index.chunkers import WordChunks
from chainrag.components.index.edges import EntityCooccurrence, SimilarityTopK, StructuralAdjacency
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.index.key_entities import BM25KeyEntities
from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences
from chainrag.components.retrieval.expanders import IterativeHops, OneStepRerank, expand_hops, words
from chainrag.components.retrieval.judges import LLMYesNo, NoCheck, parse_yes_no
from chainrag.components.retrieval.rerankers import NoRerank, rescored
from chainrag.components.retrieval.retrievers import DenseRerank, reciprocal_rank_fusion, top_k_hits
from chainrag.context import StageContext
from chainrag.core.context import ModelPathError
from chainrag.core.types import (
    Expansion,
    Hit,
    Passage,
    QAExample,
    Sentence,
    SupportingSentence,
    Verdict,
)
from chainrag.data.datasets import load_dataset
from chainrag.data.metrics import retrieval_scores
from chainrag.index.build import IndexCache, build_index
from chainrag.index.graph import ChunkIndex, SentenceGraph
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.recipe import IndexSpec, structure

SPEC = IndexSpec(
    embedder=HashedBagOfWords(dim=256),
    splitter=SpacySentences(),
    ner=SpacyNER(),
    key_entities=BM25KeyEntities(),
    edges={"ec": EntityCooccurrence(), "ss": SimilarityTopK(), "sa": StructuralAdjacency()},
)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[QAExample, SentenceGraph]:
    q = load_dataset("hotpotqa", limit=1)[0]
    graph, _ = build_index(
        q.passages, SPEC, StageContext(), IndexCache(tmp_path_factory.mktemp("i"))
    )
    assert isinstance(graph, SentenceGraph)
    return q, graph


# --------------------------------------------------------------------------- seeds


@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), max_size=30), st.integers(0, 35))
def test_top_k_hits_order_and_ties(scores: list[float], k: int) -> None:
    hits = top_k_hits(np.array(scores), k)
    want = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
    assert [h.index for h in hits] == want
    assert len({h.index for h in hits}) == len(hits)


def test_rrf_rewards_agreement() -> None:
    fused = reciprocal_rank_fusion([[0, 1, 2], [1, 0, 2]], 4)
    assert fused[0] == fused[1] > fused[2] > fused[3] == 0


def test_rescored_keeps_first_stage_order_on_ties() -> None:
    hits = [Hit(5, 0.9), Hit(2, 0.8), Hit(7, 0.1)]
    assert [h.index for h in rescored(hits, [0.5, 0.9, 0.5])] == [2, 5, 7]


def test_dense_seed_retrieval_on_a_real_question(real: tuple[QAExample, SentenceGraph]) -> None:
    q, graph = real
    ctx = StageContext()
    seeds = DenseRerank(k=3)(q.question, graph, ctx)
    assert len(seeds) == 3 and len({h.index for h in seeds}) == 3
    assert [h.score for h in seeds] == sorted((h.score for h in seeds), reverse=True)
    candidates = DenseRerank(k=3, candidates=10).candidate_hits(q.question, graph, ctx)
    assert {h.index for h in DenseRerank(k=3, candidates=10)(q.question, graph, ctx)} <= {
        h.index for h in candidates
    }
    hybrid = DenseRerank(k=5, hybrid=True)(q.question, graph, ctx)
    assert len(hybrid) == 5
    top = graph.sentences[hybrid[0].index].text
    assert "Mankiewicz" in top or "Kaye" in top


def test_chunk_mode_uses_the_same_retriever(tmp_path: Path) -> None:
    q = load_dataset("hotpotqa", limit=1)[0]
    spec = IndexSpec(embedder=HashedBagOfWords(dim=256), chunker=WordChunks(size=30))
    index, _ = build_index(q.passages, spec, StageContext(), IndexCache(tmp_path))
    assert isinstance(index, ChunkIndex)
    hits = DenseRerank(k=4)(q.question, index, StageContext())
    assert len(hits) == 4
    scores = retrieval_scores(q, [index.chunks[h.index] for h in hits], ks=(2, 4))
    assert scores.level == "sentence" and 0 <= scores.recall[4] <= 1


@pytest.mark.parametrize("kind", ["cross_encoder", "flag_reranker"])
def test_missing_model_path_is_an_error_when_the_model_loads(kind: str) -> None:
    # issue 21: a recipe naming a model validates on a machine without it; loading says why not
    data = {"name": "r", "retrieval": {"seed": {"kind": "dense_rerank", "reranker": {
        "kind": kind, "model_path": "/nowhere/reranker"}}}}  # fmt: skip
    recipe = structure(data, "r")
    assert recipe.retrieval is not None and isinstance(recipe.retrieval.seed, DenseRerank)
    reranker = recipe.retrieval.seed.reranker
    with pytest.raises(ModelPathError, match=r"'model_path' '/nowhere/reranker' does not exist"):
        reranker("q", [Hit(0, 1.0)], ["a"], StageContext())
    with pytest.raises(ModelPathError, match=f"^{kind}: "):  # the error names the component
        reranker("q", [Hit(0, 1.0)], ["a"], StageContext())


def test_a_missing_embedder_model_is_an_error_when_it_loads(tmp_path: Path) -> None:
    data = {"name": "r", "index": {"splitter": {"kind": "spacy"},
            "embedder": {"kind": "flag_model", "model_path": "/nowhere/bge"}}}  # fmt: skip
    recipe = structure(data, "r")  # validates on a machine without the model
    assert recipe.index is not None and recipe.index.embedder is not None
    with pytest.raises(ModelPathError, match=r"^flag_model: 'model_path' '/nowhere/bge' does not"):
        recipe.index.embedder(["a sentence"], StageContext())
    adapter = {"kind": "linear_adapter", "base": {"kind": "hashed_bow", "dim": 16},
               "path": str(tmp_path / "none.npz")}  # fmt: skip
    adapted = structure({"name": "r", "index": {"chunker": {"kind": "word_chunks"},
                                                "embedder": adapter}}, "r")  # fmt: skip
    assert adapted.index is not None and adapted.index.embedder is not None
    with pytest.raises(ModelPathError, match=r"^linear_adapter: 'path' '.*none\.npz' is not a"):
        adapted.index.embedder(["a sentence"], StageContext())


@pytest.mark.slow
def test_cross_encoder_reranks_with_a_local_model(tmp_path: Path) -> None:
    from sentence_transformers import CrossEncoder

    from chainrag.components.index.embedders import offline_minilm_path
    from chainrag.components.retrieval.rerankers import CrossEncoderReranker

    folder = tmp_path / "ce"
    CrossEncoder(offline_minilm_path(), num_labels=1, device="cpu").save(str(folder))
    hits = [Hit(0, 0.0), Hit(1, 0.0), Hit(2, 0.0)]
    out = CrossEncoderReranker(model_path=str(folder))("q", hits, ["a", "b", "c"], StageContext())
    assert sorted(h.index for h in out) == [0, 1, 2]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)


# --------------------------------------------------------------------------- expansion


def line_graph(n: int) -> dict[int, list[int]]:
    return {i: [j for j in (i - 1, i + 1) if 0 <= j < n] for i in range(n)}


def seeds_within(seeds: Sequence[int], lengths: Sequence[int], budget: int) -> list[int]:
    """The distinct seeds, in order, that fit the word budget: where a walk starts from."""
    kept: list[int] = []
    total = 0
    for s in dict.fromkeys(seeds):
        if total + lengths[s] > budget:
            break
        kept.append(s)
        total += lengths[s]
    return kept


def assert_budget_cut_recorded(
    out: Expansion, seeds: Sequence[int], kept: Sequence[int], judged_first: bool,
    max_hops: int, neighbours: Callable[[Sequence[int]], list[int]],
) -> None:  # fmt: skip
    """The walk records whether the budget stopped it: an unjudged hop is a cut one, so are
    seeds left out, and a walk the budget did not stop, short of its hops and of a "yes", had
    nothing new to reach."""
    if len(out.verdicts) - judged_first == out.hops - 1:
        assert out.budget_cut is True
    if len(kept) < len(dict.fromkeys(seeds)):
        assert out.budget_cut is True
    if (
        out.budget_cut is False
        and out.hops < max_hops
        and not (out.verdicts and out.verdicts[-1].ok)
    ):
        assert not set(neighbours(out.units)) - set(out.units)


@given(
    st.integers(1, 25),
    st.lists(st.integers(0, 24), min_size=1, max_size=3),
    st.lists(st.integers(1, 30), min_size=25, max_size=25),
    st.integers(1, 120),
    st.integers(0, 4),
    st.integers(0, 5),
    st.booleans(),
)
def test_expansion_invariants(
    n: int,
    seeds: list[int],
    lengths: list[int],
    budget: int,
    max_hops: int,
    yes_after: int,
    judge_seeds: bool,
) -> None:
    seeds = [s % n for s in seeds]
    adjacency = line_graph(n)

    def neighbours(units: Sequence[int]) -> list[int]:
        return sorted({j for u in units for j in adjacency[u]} - set(units))

    calls: list[int] = []

    def judge(units: Sequence[int]) -> Verdict:
        calls.append(len(units))
        return Verdict(len(calls) > yes_after)

    out = expand_hops(seeds, neighbours, lambda u: lengths[u], judge, word_budget=budget,
                      max_hops=max_hops, judge_seeds=judge_seeds)  # fmt: skip
    assert out.words == sum(lengths[u] for u in out.units) <= budget
    assert len(set(out.units)) == len(out.units)
    assert out.hops <= max_hops
    # inside the hop ball: each unit is within `hops` steps of a seed on the line
    for u in out.units:
        assert min(abs(u - s) for s in seeds) <= out.hops
    kept = seeds_within(seeds, lengths, budget)
    if max_hops == 0:
        assert out.units == tuple(kept) and calls == []
    if out.verdicts and out.verdicts[-1].ok:
        assert len(out.verdicts) == yes_after + 1
    # one verdict per hop taken (none for a hop the budget cut), one more for the seeds first
    judged_first = judge_seeds and max_hops > 0 and bool(kept)
    assert len(out.verdicts) - judged_first in (out.hops, out.hops - 1)
    assert_budget_cut_recorded(out, seeds, kept, judged_first, max_hops, neighbours)
    if judged_first:
        assert calls[0] == len(kept)
        if yes_after == 0:  # the seeds suffice: no hop is taken
            assert out.hops == 0 and out.units == tuple(kept)


def test_iterative_hops_asks_after_each_hop(real: tuple[QAExample, SentenceGraph]) -> None:
    q, graph = real
    llm = ScriptedLLM({"sufficiency": ["No", "no.", "Yes, they do."]})
    ctx = StageContext(llm=llm)
    seeds = DenseRerank(k=3)(q.question, graph, ctx)
    out = IterativeHops(word_budget=3000, max_hops=5)(q.question, seeds, graph.view(), ctx)
    assert out.seeds == tuple(h.index for h in seeds)
    assert [v.ok for v in out.verdicts] == [False, False, True][: len(out.verdicts)]
    assert out.hops == len(out.verdicts) or out.words > 0
    assert out.words <= 3000
    ball = set(graph.neighbours(out.seeds, hops=out.hops)) | set(out.seeds)
    assert set(out.units) <= ball


def test_budget_stops_expansion(real: tuple[QAExample, SentenceGraph]) -> None:
    q, graph = real
    llm = ScriptedLLM({"sufficiency": lambda r: "no"})
    seeds = DenseRerank(k=3)(q.question, graph, StageContext())
    out = IterativeHops(word_budget=80, max_hops=10)(
        q.question, seeds, graph.view(), StageContext(llm=llm)
    )
    assert out.words <= 80 and out.budget_cut is True
    assert sum(words(graph.texts[u]) for u in out.units) == out.words


def test_one_step_rerank(real: tuple[QAExample, SentenceGraph]) -> None:
    q, graph = real
    seeds = DenseRerank(k=7)(q.question, graph, StageContext())
    yes = OneStepRerank()(
        q.question, seeds, graph.view(), StageContext(llm=ScriptedLLM({"sufficiency": ["yes"]}))
    )
    assert yes.units == tuple(h.index for h in seeds) and yes.hops == 0
    no = OneStepRerank(reranker=NoRerank())(
        q.question, seeds, graph.view(), StageContext(llm=ScriptedLLM({"sufficiency": ["no"]}))
    )
    added = no.units[len(seeds) :]
    assert 0 < len(added) <= 5 and no.hops == 1
    near = set(graph.view().neighbours([h.index for h in seeds[:3]]))
    assert set(added) <= near


def test_no_check_takes_one_hop_without_a_call(real: tuple[QAExample, SentenceGraph]) -> None:
    q, graph = real
    seeds = DenseRerank(k=3)(q.question, graph, StageContext())
    ctx = StageContext(llm=ScriptedLLM({}))  # any request would fail: no reply is scripted
    out = IterativeHops(judge=NoCheck(), word_budget=3000)(q.question, seeds, graph.view(), ctx)
    asked = IterativeHops(word_budget=3000)(  # the paper's judge, saying "yes" after hop 1
        q.question, seeds, graph.view(), StageContext(llm=ScriptedLLM({"sufficiency": ["yes"]}))
    )
    assert out.hops == 1 and out.units == asked.units and out.words == asked.words
    assert [(v.ok, v.checked) for v in out.verdicts] == [(True, False)]
    kept = OneStepRerank(judge=NoCheck())(q.question, seeds, graph.view(), ctx)
    assert kept.units == tuple(h.index for h in seeds) and kept.hops == 0


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("Yes", True), ("yes.", True), ("**No**", False), ("I think yes", True), ("Nope", None),
     ("", None), ("No, yes", False), ("YES!", True)],
)  # fmt: skip
def test_parse_yes_no(reply: str, verdict: bool | None) -> None:
    assert parse_yes_no(reply) is verdict


def test_unreadable_judge_reply_is_no_and_kept() -> None:
    ctx = StageContext(llm=ScriptedLLM({"sufficiency": ["Maybe."]}))
    assert LLMYesNo()("q", ["a"], ctx) == Verdict(False, "Maybe.", unread=True)


def test_graph_view_orders_by_connection_strength(real: tuple[QAExample, SentenceGraph]) -> None:
    _, graph = real
    view = graph.view({"ec": 1.0, "ss": 1.0, "sa": 1.0})
    found = view.neighbours([0, 1])
    strength = np.asarray(view.weighted[[0, 1]].sum(axis=0)).ravel()
    assert list(found) == sorted(found, key=lambda j: (-strength[j], j))
    assert 0 not in found and 1 not in found


# --------------------------------------------------------------------------- metrics


def sentence(passage: int, start: int, end: int, text: str = "w w") -> Sentence:
    return Sentence(0, text, passage, "t", 0, start, end)


def test_sentence_level_metrics() -> None:
    passages = (Passage("0", "A", "a1. a2.", ((0, 3), (4, 7))), Passage("1", "B", "b1.", ((0, 3),)))
    q = QAExample("q", "hotpotqa", "?", passages, ("x",),
                  supporting_sentences=(SupportingSentence("A", 1), SupportingSentence("B", 0),
                                        SupportingSentence("A", 9)))  # fmt: skip
    units = [sentence(0, 0, 3), sentence(1, 0, 3), sentence(0, 4, 7)]
    s = retrieval_scores(q, units, ks=(1, 2, 3))
    assert s.level == "sentence"
    assert (s.recall[1], s.recall[2], s.recall[3]) == (0.0, 0.5, 1.0)  # A/9 is past the end
    assert (s.hit[2], s.hit[3]) == (0.0, 1.0)
    assert s.mrr == 0.5 and s.words == 6


def test_paragraph_level_metrics_on_musique() -> None:
    q = load_dataset("musique", limit=1)[0]
    gold = list(q.supporting_passages)
    units = [sentence(p, 0, 1) for p in [5, *gold]]
    s = retrieval_scores(q, units, ks=(1, len(units)))
    assert s.level == "paragraph"
    assert s.recall[1] == (1.0 / len(gold) if 5 in gold else 0.0)
    assert s.recall[len(units)] == 1.0 and s.hit[len(units)] == 1.0


@pytest.mark.slow
def test_real_embedder_finds_gold_evidence(tmp_path: Path) -> None:
    import attrs

    from chainrag.components.index.embedders import FlagModelEmbedder

    spec = attrs.evolve(SPEC, embedder=FlagModelEmbedder())
    ctx = StageContext()
    recalls = []
    for q in load_dataset("hotpotqa", limit=5):
        graph, _ = build_index(q.passages, spec, ctx, IndexCache(tmp_path))
        assert isinstance(graph, SentenceGraph)
        hits = DenseRerank(k=10)(q.question, graph, ctx)
        scores = retrieval_scores(q, [graph.sentences[h.index] for h in hits], ks=(10,))
        recalls.append(scores.recall[10])
    assert float(np.mean(recalls)) > 0.3, recalls
