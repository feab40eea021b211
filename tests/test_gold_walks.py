"""``chainrag walks --gold`` (issue 49): ChainRAG's walks split by whether their seeds held the
question's still-missing gold paragraphs, and how many went past the first hop and reached one."""

from __future__ import annotations

import subprocess

from chainrag.analysis.gold_walks import GoldWalks, classify_walks, gold_paragraphs, tally
from chainrag.core.types import (
    Expansion,
    Passage,
    QAExample,
    Sentence,
    StepTrace,
    SupportingSentence,
)
from chainrag.data.datasets import load_dataset

from .test_analysis import CHAINRAG


def sentence(sid: int, passage: int) -> Sentence:
    return Sentence(sid, f"sentence {sid}", passage, f"p{passage}", 0, 0, 10)


# units 0-1 in passage 0, 2-3 in passage 1 (gold), 4-5 in passage 2 (gold), 6 in passage 3
UNITS = [sentence(i, p) for i, p in enumerate([0, 0, 1, 1, 2, 2, 3])]
GOLD = frozenset({1, 2})


def walk(seeds: tuple[int, ...], units: tuple[int, ...], hops: int) -> StepTrace:
    return StepTrace("q", retrieved=units, expansion=Expansion(units, seeds, hops))


def test_walks_are_counted_by_where_the_missing_gold_was() -> None:
    steps = [
        walk((0,), (0, 1, 6), 2),  # gold not at the seeds; went on, reached none
        walk((2,), (2, 3), 1),  # gold (passage 1) at the seeds; stopped at hop 1, reached it
        walk((6,), (6, 4), 3),  # passage 2 still missing, not at the seeds; went on, reached
        walk((4,), (4,), 1),  # nothing left to find
    ]
    assert tally(classify_walks(steps, UNITS, GOLD)) == GoldWalks(
        walks=4, nothing_missing=1, at_seeds=1, at_seeds_on=0, at_seeds_found=1,
        not_at_seeds=2, not_at_seeds_on=2, not_at_seeds_found=1,
    )  # fmt: skip


def test_gold_found_by_an_earlier_step_is_no_longer_missing() -> None:
    earlier = StepTrace("q", retrieved=(2,))  # a step without a walk (an iterative round)
    later = walk((2,), (2, 4), 1)  # passage 1 was found before: only passage 2 is missing
    assert tally(classify_walks([earlier, later], UNITS, GOLD)) == GoldWalks(
        walks=1, not_at_seeds=1, not_at_seeds_found=1
    )
    assert tally(classify_walks([walk((99,), (99,), 2)], UNITS, GOLD)) == GoldWalks(
        walks=1, not_at_seeds=1, not_at_seeds_on=1
    )  # a unit number outside the index holds nothing


def test_gold_paragraphs_come_from_passages_or_sentences() -> None:
    musique = load_dataset("musique", 1)[0]
    assert gold_paragraphs(musique) == frozenset(musique.supporting_passages)
    passages = (
        Passage("0", "A", "One. Two.", ((0, 4), (5, 9))),
        Passage("1", "B", "Three.", ((0, 6),)),
    )
    by_facts = QAExample("x", "toy", "q?", passages, ("a",),
                         supporting_sentences=(SupportingSentence("B", 0),))  # fmt: skip
    assert gold_paragraphs(by_facts) == frozenset({1})


def test_build_index_needs_gold() -> None:
    done = subprocess.run([*CHAINRAG, "walks", "runs", "--build-index"], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 2 and "--build-index applies to --gold only" in done.stderr


def test_the_listing_shows_each_walk_without_the_missing_gold_at_its_seeds() -> None:
    from chainrag.analysis.gold_walks import QuestionWalks, classify_walks, walks_listing
    from chainrag.core.types import SubAnswer, Verdict

    went_on = StepTrace(
        "Who | what?", rewritten="Who wrote it?", retrieved=(0, 1, 6),
        expansion=Expansion((0, 1, 6), (0,), 2, (Verdict(False, "no", score=0.41),)),
        answer=SubAnswer("Who wrote it?", "Ann | Bo", True),
    )  # fmt: skip
    at_seeds = walk((2,), (2, 3), 1)
    walks = classify_walks([went_on, at_seeds], UNITS, GOLD)
    assert [(w.where, w.on, w.reached) for w in walks] == [
        ("not at seeds", True, False), ("at seeds", False, True)
    ]  # fmt: skip
    table = walks_listing("runs/x", [QuestionWalks("q1", walks, 2), QuestionWalks("q2", None, 1)])
    assert table == [
        "\nruns/x: the walks without the missing gold at their seeds",
        "",
        "| question | sub-question (as searched) | hops | judge | reached | sub-answer |",
        "|---|---|---|---|---|---|",
        "| q1 | Who wrote it? | 2 | no 0.410 | no | Ann \\| Bo |",
    ]


def test_list_needs_gold() -> None:
    done = subprocess.run([*CHAINRAG, "walks", "runs", "--list"], capture_output=True, text=True)
    assert done.returncode == 2 and "--list applies to --gold only" in done.stderr
