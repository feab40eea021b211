"""EM/F1 with SQuAD normalisation, and the traps method.md §1.6 lists."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrag.data.metrics import answer_em, answer_f1, normalize_answer, qa_scores


def test_squad_normalisation() -> None:
    assert normalize_answer("The  Eiffel-Tower, in Paris!") == "eiffeltower in paris"


@pytest.mark.parametrize(
    ("prediction", "gold", "em", "f1"),
    [
        ("Paris.", "Paris", 1.0, 1.0),  # trailing period stripped
        ("the city of Paris", "Paris", 0.0, 0.5),
        ("A", "A", 1.0, 1.0),  # trap: "a" is an article; both normalise to ""
        ("anything at all", "The", 0.0, 0.0),  # trap: a gold normalising to "" must not score 1
        ("", "The", 0.0, 0.0),
        ("yes", "no", 0.0, 0.0),  # yes/no rule
        ("no", "no way", 0.0, 0.0),  # one side yes/no, the other not: 0, not a partial match
        ("Yes", "yes", 1.0, 1.0),
    ],
)
def test_traps(prediction: str, gold: str, em: float, f1: float) -> None:
    assert answer_em(prediction, gold) == em
    assert answer_f1(prediction, gold) == pytest.approx(f1)


def test_max_over_aliases() -> None:
    answers = ("Richland County", "Richland County, South Carolina")
    assert qa_scores("Richland County, South Carolina", answers) == (1.0, 1.0)
    assert qa_scores("South Carolina", answers)[1] == pytest.approx(2 * (1 * 0.5) / 1.5)
    assert qa_scores("x", ()) == (0.0, 0.0)


@given(st.text(max_size=30), st.text(max_size=30))
def test_scores_are_bounded_and_em_implies_f1(prediction: str, gold: str) -> None:
    em, f1 = answer_em(prediction, gold), answer_f1(prediction, gold)
    assert 0.0 <= f1 <= 1.0 and em in (0.0, 1.0)
    if em == 1.0:
        assert f1 == 1.0


@given(st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=20))
def test_a_real_answer_matches_itself(answer: str) -> None:
    if answer.strip():
        assert answer_f1(answer, answer) == 1.0
