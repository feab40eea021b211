"""Unit and property tests of the pure built-in components."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import sparse

from chainrag.components.index.chunkers import WordChunks, word_windows
from chainrag.components.index.edges import StructuralAdjacency, adjacency_band
from chainrag.components.knowledge.cache_triggers import Popularity
from chainrag.components.reasoning.rewrite_triggers import (
    NumberedReferences,
    PronounWords,
    Substring,
    resolve_numbered,
)
from chainrag.context import StageContext
from chainrag.core.types import GraphInputs, Passage, ReservoirMatch, Sentence, SubAnswer
from chainrag.llm.fake import ScriptedLLM

# --------------------------------------------------------------------------- rewrite triggers


@pytest.mark.parametrize(
    ("question", "fires"),
    [
        ("Where is the hometown of this author?", True),
        ("When did it open?", True),
        ("What is the capital of the city?", False),  # "city" contains "it"; "the" contains "he"
        ("Who wrote The Worries of the City?", False),
        ("THEY said what?", True),
        ("", False),
    ],
)
def test_pronoun_words_match_whole_words(question: str, fires: bool) -> None:
    assert PronounWords()(question) is fires


def test_substring_reproduces_the_authors_over_triggering() -> None:
    assert Substring()("What is the capital of the city?")
    assert Substring()("Who is the author?")  # "the" contains "he"
    assert not Substring()("Who wrote Hamlet?")


def test_trigger_words_are_configurable_and_validated() -> None:
    assert PronounWords(words=("former",))("Who is the former?")
    with pytest.raises(ValueError, match="non-empty list"):
        PronounWords(words=())


def test_a_numbered_reference_fires_only_when_asked_for() -> None:
    assert not PronounWords()("Where was #1 born?")  # the paper's rule: no pronoun here
    assert PronounWords(numbered=True)("Where was #1 born?")
    assert PronounWords(numbered=True)("Where was this director born?")  # pronouns still fire
    assert not PronounWords(numbered=True)("Who wrote #Hamlet, #one?")


HISTORY = (SubAnswer("Who directed Blind Shaft?", "Li Yang", True),
           SubAnswer("Where was Li Yang born?", "unanswerable", False))  # fmt: skip


@pytest.mark.parametrize(
    ("sub_question", "resolved"),
    [
        ("Where was #1 born?", "Where was Li Yang born?"),
        ("In which county is #2?", "In which county is (the answer to: Where was Li Yang born)?"),
        ("Is #1 older than #3?", "Is Li Yang older than #3?"),  # no step 3 yet: left as it is
        ("Was #0 or #12 first?", "Was #0 or #12 first?"),
        ("Who directed Blind Shaft?", "Who directed Blind Shaft?"),
    ],
)
def test_numbered_references_are_filled_from_the_steps(sub_question: str, resolved: str) -> None:
    assert resolve_numbered(sub_question, HISTORY) == resolved


def test_the_numbered_rewriter_asks_the_llm_only_without_a_numbered_reference() -> None:
    llm = ScriptedLLM({"rewrite": ["Where was Li Yang born?"]})
    rewriter, ctx = NumberedReferences(), StageContext(llm=llm)
    assert rewriter("Where was #1 born?", HISTORY[:1], ctx) == "Where was Li Yang born?"
    assert llm.requests == []  # filled by substitution
    assert rewriter("Where was this director born?", HISTORY[:1], ctx) == "Where was Li Yang born?"
    assert [r.prompt_id for r in llm.requests] == ["rewrite"]  # the paper's LLM rewriter
    unchanged = NumberedReferences(fallback=None)("Where was he born?", HISTORY[:1], ctx)
    assert unchanged == "Where was he born?" and len(llm.requests) == 1


# --------------------------------------------------------------------------- SA edges

passage_layouts = st.lists(st.integers(0, 4), max_size=40).map(sorted)


@given(passage_layouts, st.integers(0, 6), st.sampled_from(["inverse_distance", "binary"]))
def test_sa_invariants(passages: list[int], window: int, weighting: str) -> None:
    m = adjacency_band(passages, window, weighting, cross_passages=False)  # type: ignore[arg-type]
    n = len(passages)
    assert sparse.isspmatrix_csr(m)
    assert m.shape == (n, n)
    assert m.dtype == np.float32
    dense = m.toarray()
    assert np.array_equal(dense, dense.T)
    assert np.all(np.diag(dense) == 0)
    assert np.all(dense >= 0)
    assert np.all(np.isfinite(dense))
    for i in range(n):
        for j in range(n):
            linked = 0 < abs(i - j) <= window and passages[i] == passages[j]
            assert bool(dense[i, j] > 0) == linked
            if linked and weighting == "inverse_distance":
                assert dense[i, j] == pytest.approx(1 / (abs(i - j) + 1))


@given(st.lists(st.integers(0, 3), max_size=30), st.integers(0, 5))
def test_sa_crossing_passages_is_a_plain_band(passages: list[int], window: int) -> None:
    dense = adjacency_band(passages, window, "binary", cross_passages=True).toarray()
    n = len(passages)
    expected = np.array(
        [[1.0 if 0 < abs(i - j) <= window else 0.0 for j in range(n)] for i in range(n)]
    ).reshape(n, n)
    assert np.array_equal(dense, expected)


def test_sa_component_reads_sentence_passages() -> None:
    sentences = tuple(Sentence(i, "s", p, "t", 0, 0, 1) for i, p in enumerate([0, 0, 1]))
    m = StructuralAdjacency(window=3, weighting="binary")(GraphInputs(sentences))
    assert m.toarray().tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]


# --------------------------------------------------------------------------- chunks


@given(st.integers(0, 60), st.integers(1, 12), st.data())
def test_word_windows_cover_every_word_in_order(n: int, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    windows = word_windows(n, size, overlap)
    covered = sorted({i for a, b in windows for i in range(a, b)})
    assert covered == list(range(n))
    assert all(0 < b - a <= size for a, b in windows)
    assert all(b1 - a2 <= overlap for (_, b1), (a2, _) in itertools.pairwise(windows))


def test_word_chunks_stay_inside_passages() -> None:
    passages = (Passage("a", "A", "w1 w2 w3 w4 w5"), Passage("b", "B", "x1 x2"))
    chunks = WordChunks(size=2)(passages)
    assert [(c.cid, c.text, c.passage, c.title, c.position) for c in chunks] == [
        (0, "w1 w2", 0, "A", 0),
        (1, "w3 w4", 0, "A", 1),
        (2, "w5", 0, "A", 2),
        (3, "x1 x2", 1, "B", 0),
    ]
    for c in chunks:
        assert passages[c.passage].text[c.start : c.end].split() == c.text.split()


# --------------------------------------------------------------------------- cache trigger


@pytest.mark.parametrize(
    ("sims", "use_memory"),
    [([0.9, 0.5, 0.41, 0.1], True), ([0.9, 0.5, 0.39], False), ([], False), ([0.4] * 3, True)],
)
def test_popularity_trigger(sims: list[float], use_memory: bool) -> None:
    match = ReservoirMatch((), np.array(sims, dtype=np.float32))
    assert Popularity(threshold=0.4, popularity=3)(match) is use_memory


def test_popularity_validates_its_parameters() -> None:
    with pytest.raises(ValueError, match=r"'threshold' must be <= 1.0: 1.5"):
        Popularity(threshold=1.5)
    with pytest.raises(ValueError, match="'popularity' must be >= 1: 0"):
        Popularity(popularity=0)
