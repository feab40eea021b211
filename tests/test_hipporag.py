"""HippoRAG's stages (Gutiérrez et al. 2024) on fixtures small enough to check by hand: OpenIE
replies read as the authors' ``extract_json_dict`` reads them (unreadable ones counted, never
raised) and stored once per passage text and LLM, the phrase graph's weights and counts,
linking with and without node specificity, Personalized PageRank against hand solutions and a
direct power iteration, passage scores and the code's order of ties; and the graph's invariants
under hypothesis."""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import sparse

from chainrag.components.index.chunkers import TitledPassages
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.phrases.graph import (
    HippoRAGGraph,
    clean_phrase,
    clean_triples,
    synonym_sources,
)
from chainrag.components.phrases.linking import QueryNERLinker, read_query_entities
from chainrag.components.phrases.openie import (
    LLMOpenIE,
    read_entities,
    read_triples,
    reference_json_dict,
)
from chainrag.components.phrases.pagerank import PersonalizedPageRank, personalized_pagerank
from chainrag.components.retrieval.hipporag import HippoRAGRetriever, min_max, ranked_hits
from chainrag.context import StageContext
from chainrag.core.phrase_graph import Extraction, PhraseGraph
from chainrag.core.types import FloatArray, Hit, LLMRequest, Passage
from chainrag.index.graph import ChunkIndex
from chainrag.llm.fake import ScriptedLLM
from chainrag.protocols.context import Context
from chainrag.protocols.index import EmbedRole


@attrs.frozen
class TableEmbedder:
    """Vectors from a table (normalised); a text not in it gets a vector of its own axis."""

    table: tuple[tuple[str, tuple[float, ...]], ...]
    dim: int = 8

    def __call__(
        self, texts: Sequence[str], ctx: Context, role: EmbedRole = "passage"
    ) -> FloatArray:
        known = dict(self.table)
        rows = []
        for text in texts:
            row = np.zeros(self.dim)
            row[: len(known.get(text, ()))] = known.get(text, ())
            if not row.any():
                row[-1 - (hash(text) % 3)] = 1.0
            rows.append(row / np.linalg.norm(row))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)


class NamedLLM(ScriptedLLM):
    """A scripted LLM that says what it is, as a run's LLM does (its OpenIE is stored)."""

    def __init__(self, script: dict, name: str = "scripted") -> None:  # type: ignore[type-arg]
        super().__init__(script)
        self.name = name

    def identity(self) -> str | None:
        return self.name


# --------------------------------------------------------------------------- OpenIE


@pytest.mark.parametrize(
    ("reply", "found"),
    [
        ('{"named_entities": ["A"]}', {"named_entities": ["A"]}),
        ('Sure! ```json\n{"a": {"b": {"c": 1}}}\n``` done', {"a": {"b": {"c": 1}}}),
        ('{"x": 1} and {"y": 2}', {"x": 1}),  # the first object
        ("{'named_entities': ['A']}", None),  # not JSON: the code's json.loads fails too
        ('{"named_entities": ["A"]', None),  # cut off
        ("I cannot help with that.", None),
        # four levels: past the pattern's three, the first match is the inner object
        ('{"a": {"b": {"c": {"d": 1}}}}', {"b": {"c": {"d": 1}}}),
    ],
)
def test_replies_are_read_as_the_authors_extract_json_dict(reply: str, found: object) -> None:
    assert reference_json_dict(reply) == found


def test_unreadable_openie_replies_give_nothing_and_are_counted_not_raised() -> None:
    assert read_entities('{"named_entities": ["Paris", "France", "Paris", 1889]}') == (
        ("1889", "France", "Paris"),
        True,
    )
    assert read_entities("Paris, France") == ((), False)
    assert read_entities('{"entities": ["Paris"]}') == ((), False)
    assert read_triples('{"triples": [["a", "b", "c"], "x", ["d", "e"]]}') == (
        (("a", "b", "c"), ("d", "e")),
        True,
    )
    assert read_triples('{"triples": [["a", "b", "c"]') == ((), False)
    llm = ScriptedLLM(
        {
            "openie_ner": ["not JSON", '{"named_entities": ["Lyon"]}'],
            "openie_triples": ['{"triples": [["Lyon", "in", "France"]]}', "oops"],
        }
    )
    first, second = LLMOpenIE()(
        ["Paris is in France.", "Lyon is in France."], StageContext(llm=llm)
    )
    assert first == Extraction((), (("Lyon", "in", "France"),), ner_read=False)
    assert second == Extraction(("Lyon",), (), triples_read=False)
    # the triples prompt is given the NER's entities as the code's json.dumps writes them
    assert '{"named_entities": ["Lyon"]}' in llm.requests[3].messages[-1].content
    assert llm.requests[1].max_tokens == 4096
    graph = HippoRAGGraph()([first, second], HashedBagOfWords(dim=16), StageContext())
    assert (graph.stats.unread_ner, graph.stats.unread_triples) == (1, 1)


def test_a_passage_is_read_once_per_text_and_llm() -> None:
    script = {
        "openie_ner": lambda r: '{"named_entities": ["Paris"]}',
        "openie_triples": lambda r: '{"triples": [["Paris", "is in", "France"]]}',
    }
    llm = NamedLLM(script)
    openie = LLMOpenIE()
    texts = ["Paris is in France.", "Rome is in Italy.", "Paris is in France."]
    first = openie(texts, StageContext(llm=llm))
    assert llm.calls() == 4  # two passages, two calls each: the repeated text is read once
    again = openie(texts[::-1], StageContext(llm=llm))
    assert llm.calls() == 4 and again == first[::-1]
    other = NamedLLM(script, name="another model")
    openie(texts, StageContext(llm=other))
    assert other.calls() == 4  # another LLM's extractions are its own
    plain = ScriptedLLM(script)  # says no identity: asked every time
    openie(texts[:1], StageContext(llm=plain))
    openie(texts[:1], StageContext(llm=plain))
    assert plain.calls() == 4


# --------------------------------------------------------------------------- the graph


def extractions() -> list[Extraction]:
    return [
        Extraction(
            ("France", "Paris"),
            (("Paris", "is in", "France"), ("Paris", "capital of", "France"), ("Paris", "is")),
        ),
        Extraction(("Lyon",), (("Lyon", "is in", "France"), ("Lyon", "is in", "France"))),
        Extraction(("Eiffel Tower",), (("Eiffel Tower", "in", "Paris!"),)),
    ]


def test_the_phrase_graph_by_hand() -> None:
    """Phrases eiffel tower, france, lyon, paris (0-3). Passage 0 states paris-france twice
    (two relations), passage 1 lyon-france twice (one triple repeated), passage 2
    eiffel tower-paris once; each statement adds 1 to both directed keys, and the undirected
    weight is the two keys' sum."""
    graph = HippoRAGGraph(synonymy=False)(extractions(), HashedBagOfWords(dim=16), StageContext())
    assert graph.phrases == ("eiffel tower", "france", "lyon", "paris")
    assert graph.adjacency.toarray().tolist() == [
        [0, 0, 0, 2],
        [0, 0, 4, 4],
        [0, 4, 0, 0],
        [2, 4, 0, 0],
    ]
    # passage x phrase: how many of the passage's distinct triples name the phrase
    assert graph.passage_phrases.toarray().tolist() == [[0, 2, 0, 2], [0, 1, 1, 0], [1, 0, 0, 1]]
    assert graph.passages_per_phrase().tolist() == [1, 2, 1, 2]
    assert graph.stats.triples == 4 and graph.stats.malformed_triples == 1


def test_a_synonymy_pair_replaces_its_keys_triple_count() -> None:
    """eiffel tower and paris at cosine 0.9 (≥ 0.8): each directed key's count 1 becomes 0.9,
    so their undirected weight is 1.8; lyon and france at 0.6 get nothing."""
    table = (
        ("eiffel tower", (0.9, np.sqrt(1 - 0.81))),
        ("paris", (1.0,)),
        ("lyon", (0.0, 0.0, 0.6, 0.8)),
        ("france", (0.0, 0.0, 1.0)),
    )
    graph = HippoRAGGraph(threshold=0.8)(extractions(), TableEmbedder(table), StageContext())
    weights = graph.adjacency.toarray()
    assert weights[0, 3] == pytest.approx(1.8) and weights[3, 0] == pytest.approx(1.8)
    assert weights[1, 2] == 4 and graph.stats.synonymy_edges == 2
    capped = HippoRAGGraph(threshold=0.8, max_synonyms=0)(
        extractions(), TableEmbedder(table), StageContext()
    )
    assert capped.stats.synonymy_edges == 0 and capped.adjacency.toarray()[0, 3] == 2


def test_phrases_are_cleaned_as_the_code_does() -> None:
    assert clean_phrase("  Fårö (island)! ") == "f r   island"
    assert clean_triples(Extraction(triples=(("A", "b"), ("A",), ("X", "y", "Z", "w")))) == ([], 2)
    assert synonym_sources(["abc", "a-b", "ab1", ""]).tolist() == [True, False, True, False]


# --------------------------------------------------------------------------- linking


def test_linking_with_and_without_node_specificity() -> None:
    graph = HippoRAGGraph(synonymy=False)(extractions(), HashedBagOfWords(dim=64), StageContext())
    llm = ScriptedLLM({"query_ner": lambda r: '{"named_entities": ["Paris", "Lyon!"]}'})
    linking = QueryNERLinker()(
        "Is Paris near Lyon?", graph, HashedBagOfWords(dim=64), StageContext(llm=llm)
    )
    assert linking.entities == ("paris", "lyon") and linking.phrases == (3, 2)
    assert linking.reset.tolist() == [0.0, 0.0, 1.0, 0.5]  # paris is in two passages
    flat = QueryNERLinker(node_specificity=False)(
        "q", graph, HashedBagOfWords(dim=64), StageContext(llm=llm)
    )
    assert flat.reset.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert read_query_entities('{"named_entities": ["A", 3]}') == ((), False)
    bad = ScriptedLLM({"query_ner": ["Paris and Lyon"]})
    unread = QueryNERLinker()("q", graph, HashedBagOfWords(dim=64), StageContext(llm=bad))
    assert not unread.read and not unread.reset.any()


# --------------------------------------------------------------------------- PageRank


def direct_power_iteration(weights: np.ndarray, reset: np.ndarray, d: float) -> np.ndarray:
    """The walk written out densely: a row-stochastic matrix whose sink rows are the reset
    distribution, iterated from the reset distribution."""
    r = reset / reset.sum()
    degree = weights.sum(axis=1, keepdims=True)
    step = np.where(degree > 0, weights / np.where(degree > 0, degree, 1), r)
    p = r.copy()
    for _ in range(2000):
        p = d * step.T @ p + (1 - d) * r
    return p


def test_pagerank_by_hand() -> None:
    """Two phrases joined, the walk restarting at the first: p0 = d·p1 + (1 − d),
    p1 = d·p0, so with d = 0.5, p = (2/3, 1/3). A third, isolated phrase in the reset
    distribution restarts from itself: p2 = (d·p2 + 1 − d)/2 = 1/3, p0 = 4/9, p1 = 2/9."""
    pair = sparse.csr_matrix(np.array([[0.0, 3.0], [3.0, 0.0]]))
    assert personalized_pagerank(pair, np.array([1.0, 0.0]), 0.5) == pytest.approx([2 / 3, 1 / 3])
    three = sparse.csr_matrix(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    found = personalized_pagerank(three, np.array([2.0, 0.0, 2.0]), 0.5)
    assert found == pytest.approx([4 / 9, 2 / 9, 3 / 9], abs=1e-12)
    with pytest.raises(ValueError, match="not all zero"):
        personalized_pagerank(three, np.zeros(3), 0.5)
    with pytest.raises(ValueError, match="damping"):
        PersonalizedPageRank(damping=1.0)


@given(
    hnp.arrays(np.float64, (6, 6), elements=st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0])),
    hnp.arrays(np.float64, 6, elements=st.sampled_from([0.0, 0.25, 1.0])),
    st.sampled_from([0.1, 0.5, 0.85]),
)
def test_pagerank_equals_a_direct_power_iteration(
    upper: np.ndarray, reset: np.ndarray, damping: float
) -> None:
    weights = np.triu(upper, 1) + np.triu(upper, 1).T
    reset = reset if reset.any() else np.eye(6)[0]
    found = personalized_pagerank(sparse.csr_matrix(weights), reset, damping)
    assert found == pytest.approx(direct_power_iteration(weights, reset, damping), abs=1e-9)
    assert found.sum() == pytest.approx(1.0) and (found >= 0).all()


# --------------------------------------------------------------------------- retrieval


def test_scores_and_the_codes_order_of_ties() -> None:
    assert min_max(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert min_max(np.array([1.0, 1.0])).tolist() == [0.0, 0.0]
    # argsort(kind="mergesort")[::-1]: equal scores in descending unit order
    assert ranked_hits(np.array([0.5, 1.0, 0.5, 0.5]), 3) == (Hit(1, 1.0), Hit(3, 0.5), Hit(2, 0.5))


def toy_index() -> ChunkIndex:
    passages = (
        Passage("0", "Paris", "Paris is the capital of France."),
        Passage("1", "Lyon", "Lyon is a city in France."),
        Passage("2", "Eiffel Tower", "The Eiffel Tower stands in Paris."),
    )
    embedder = HashedBagOfWords(dim=64)
    chunks = TitledPassages()(passages)
    vectors = embedder([c.text for c in chunks], StageContext())
    return ChunkIndex(passages, chunks, vectors, embedder)


def openie_script(query: str) -> dict:  # type: ignore[type-arg]
    triples = {
        "Paris": [["Paris", "capital of", "France"]],
        "Lyon": [["Lyon", "in", "France"]],
        "Eiffel Tower": [["Eiffel Tower", "in", "Paris"]],
    }

    def ner(request: LLMRequest) -> str:
        return json.dumps({"named_entities": []})

    def facts(request: LLMRequest) -> str:
        text = request.messages[-1].content
        title = next(t for t in ("Eiffel Tower", "Paris", "Lyon") if f"```\n{t}\n" in text)
        return json.dumps({"triples": triples[title]})

    return {"openie_ner": ner, "openie_triples": facts, "query_ner": [query]}


def test_the_retriever_scores_passages_by_their_phrases_pagerank() -> None:
    """Phrases eiffel tower, france, lyon, paris; the query links to lyon. Passage scores are
    the passage × phrase counts times PageRank, min-max normalised."""
    index = toy_index()
    llm = ScriptedLLM(openie_script('{"named_entities": ["Lyon"]}'))
    ctx = StageContext(llm=llm)
    retriever = HippoRAGRetriever(k=3, graph=HippoRAGGraph(synonymy=False))
    hits = retriever("Where is Lyon?", index, ctx)
    graph = retriever.phrase_graph(index, ctx)
    reset = np.array([0.0, 0.0, 1.0, 0.0])  # lyon, in one passage
    ppr = direct_power_iteration(graph.adjacency.toarray(), reset, 0.5)
    raw = graph.passage_phrases.toarray() @ ppr
    expected = (raw - raw.min()) / (raw.max() - raw.min())
    assert [h.index for h in hits] == list(np.argsort(-expected, kind="stable"))
    assert [h.score for h in hits] == pytest.approx(sorted(expected, reverse=True))
    assert hits[0].index == 1  # Lyon's passage
    assert retriever.graph_stats(index, ctx).passages == 3
    assert llm.calls("openie_ner") == 3  # the graph is built once for the index


def test_a_query_without_entities_scores_every_passage_alike() -> None:
    """The code's 1/n for every passage, ranked as its argsort ranks ties: the last first."""
    llm = ScriptedLLM(openie_script('{"named_entities": []}'))
    hits = HippoRAGRetriever(k=3)("Where?", toy_index(), StageContext(llm=llm))
    assert hits == (Hit(2, 1 / 3), Hit(1, 1 / 3), Hit(0, 1 / 3))


# --------------------------------------------------------------------------- invariants

PHRASES = st.sampled_from(["Paris", "paris!", "France", "Lyon", "ab", "Rhône", "x y"])
TRIPLES = st.lists(st.lists(PHRASES, min_size=1, max_size=4).map(tuple), max_size=5)
EXTRACTIONS = st.lists(TRIPLES.map(lambda ts: Extraction(triples=tuple(ts))), max_size=5)


@given(EXTRACTIONS, st.booleans(), st.sampled_from([0.0, 0.5, 0.9, 1.01]))
def test_phrase_graph_invariants(found: list[Extraction], synonymy: bool, threshold: float) -> None:
    graph = HippoRAGGraph(synonymy=synonymy, threshold=threshold)(
        found, HashedBagOfWords(dim=8), StageContext()
    )
    n = len(graph.phrases)
    weights = graph.adjacency.toarray()
    assert list(graph.phrases) == sorted(set(graph.phrases))
    assert weights.shape == (n, n) and np.allclose(weights, weights.T)
    assert (np.diag(weights) == 0).all() and (weights >= 0).all() and np.isfinite(weights).all()
    counts = graph.passage_phrases.toarray()
    assert counts.shape == (len(found), n) and (counts >= 0).all()
    for p, extraction in enumerate(found):  # a count is non-zero exactly where a triple names it
        rows, _ = clean_triples(extraction)
        named = {x for h, _, t in rows for x in (h, t)}
        assert {graph.phrases[i] for i in np.flatnonzero(counts[p])} == named
    if not synonymy:  # each statement between two phrases weighs 2 (both keys)
        expected = np.zeros((n, n))
        index = {p: i for i, p in enumerate(graph.phrases)}
        for extraction in found:
            for h, _, t in clean_triples(extraction)[0]:
                if h != t:
                    expected[index[h], index[t]] += 2
                    expected[index[t], index[h]] += 2
        assert np.array_equal(weights, expected)
    shuffled = HippoRAGGraph(synonymy=synonymy, threshold=threshold)(
        found[::-1], HashedBagOfWords(dim=8), StageContext()
    )
    assert np.allclose(shuffled.adjacency.toarray(), weights)
    assert np.array_equal(shuffled.passage_phrases.toarray(), counts[::-1])


def test_the_phrase_graph_value_compares_its_matrices_by_value() -> None:
    one = HippoRAGGraph()(extractions(), HashedBagOfWords(dim=16), StageContext())
    assert one == HippoRAGGraph()(extractions(), HashedBagOfWords(dim=16), StageContext())
    assert one != attrs.evolve(one, adjacency=sparse.csr_matrix(one.adjacency.shape))
    assert isinstance(one, PhraseGraph)


def test_every_field_of_the_new_components_says_what_it_is() -> None:
    """docs/recipes.md shows each field's docstring (recipes.reference.field_docs)."""
    from chainrag.methods.ircot import IRCoT
    from chainrag.recipes.describe import params
    from chainrag.recipes.reference import field_docs

    for cls in (LLMOpenIE, HippoRAGGraph, QueryNERLinker, PersonalizedPageRank,
                HippoRAGRetriever, IRCoT):  # fmt: skip
        docs = field_docs(cls)
        assert {p.name for p in params(cls)} == set(docs), cls.__name__
        assert all(docs.values())
    assert "--top_k" in field_docs(IRCoT)["read"]
