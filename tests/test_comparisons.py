"""Comparison questions decided by rule (chainrag/components/reasoning/comparisons.py): what is read
from
the question and the sub-answers, when the rule stands aside, and the recipe's flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainrag.components.reasoning.comparisons import (
    Comparison,
    parse_comparison,
    parse_count,
    parse_date,
    role_sub_questions,
    rule_comparison,
)
from chainrag.core.types import QAExample, SubAnswer
from chainrag.data.datasets import load_dataset
from chainrag.index.build import IndexCache
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.recipe import load_recipe
from chainrag.run.question import answer_question

from .conftest import ROOT
from .test_methods import fast


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which film came out earlier, Kaaka Muttai or En Sømand Går I Land?",
         Comparison(("Kaaka Muttai", "En Sømand Går I Land"), "release", "least")),
        ("Which film came out earlier, She Shall Have Music or That Devil, Bateese?",
         Comparison(("She Shall Have Music", "That Devil, Bateese"), "release", "least")),
        ("Which film was released more recently, Boundaries Of The Heart or Truck Turner?",
         Comparison(("Boundaries Of The Heart", "Truck Turner"), "release", "most")),
        ("Who died first, Thomas Valentine Cooper or John Ellis Roosevelt?",
         Comparison(("Thomas Valentine Cooper", "John Ellis Roosevelt"), "death", "least")),
        ("Which film has the director born later, He Knows You're Alone or Twilight?",
         Comparison(("He Knows You're Alone", "Twilight"), "birth", "most")),
        ("Was Jovita Carranza or Fidel Kuri Grajales born first?",
         Comparison(("Jovita Carranza", "Fidel Kuri Grajales"), "birth", "least")),
        ("Who is older, Ann or Bo?", Comparison(("Ann", "Bo"), "birth", "least")),
        ("Who won more academy awards,  Joseph L. Mankiewicz or Tony Kaye?",
         Comparison(("Joseph L. Mankiewicz", "Tony Kaye"), "count", "most", "academy")),
        ("Which opera has fewer acts, Parsifal or Manon?",
         Comparison(("Parsifal", "Manon"), "count", "least", "acts")),
        ("Who lived longer, Mukat Behari Lal Bhargava or Salvador J. Lara?", None),  # a duration
        ("Which film has the director who is older than the other, A or B?",
         Comparison(("A", "B"), "birth", "least")),
        ("Which is a comedy film, The Million Dollar Duck or Don Quixote?", None),
        ("Are Vertigo and Psycho both films?", None),
        ("Where did the director of Vertigo die?", None),
        ("Which film came out first, Vertigo or Psycho or Rope?", None),  # three choices
        ("Which film came out first, Psycho or Psycho?", None),
    ],
)  # fmt: skip
def test_parse_comparison_reads_the_choices_and_the_compared_attribute(
    question: str, expected: Comparison | None
) -> None:
    assert parse_comparison(question) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2015", (2015, 0, 0)),
        ("December 19, 1909", (1909, 12, 19)),
        ("8 March 2009", (2009, 3, 8)),
        ("March 1935", (1935, 3, 0)),
        ("He died on 1 August 1813.", (1813, 8, 1)),
        ("146 BC", None),
        ("1994 and 2001", None),  # two years: which one?
        ("unanswerable", None),
    ],
)
def test_parse_date(text: str, expected: tuple[int, int, int] | None) -> None:
    assert parse_date(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10", 10), ("three acts", 3), ("5 acts in 1884", None), ("many", None), ("2.5", None)],
)
def test_parse_count(text: str, expected: int | None) -> None:
    assert parse_count(text) == expected


def sub(question: str, answer: str) -> SubAnswer:
    return SubAnswer(question, answer, answer != "unanswerable")


KAAKA = "Which film came out earlier, Kaaka Muttai or En Sømand Går I Land?"


@pytest.mark.parametrize(
    ("question", "subs", "expected"),
    [
        (KAAKA, [sub("When did Kaaka Muttai come out?", "2015"),
                 sub("When did En Sømand Går I Land come out?", "2010")], "En Sømand Går I Land"),
        ("Which film was released more recently, Boundaries Of The Heart or Truck Turner?",
         [sub("When was Boundaries Of The Heart released?", "1988"),
          sub("When was Truck Turner released?", "1974")], "Boundaries Of The Heart"),
        ("Who died first, Thomas Valentine Cooper or John Ellis Roosevelt?",
         [sub("Who died first, Thomas Valentine Cooper or John Ellis Roosevelt?", "John"),
          sub("When did Thomas Valentine Cooper die?", "December 19, 1909"),
          sub("When did John Ellis Roosevelt die?", "March 9, 1939")], "Thomas Valentine Cooper"),
        ("Who won more academy awards, Joseph L. Mankiewicz or Tony Kaye?",
         [sub("How many Academy Awards did Joseph L. Mankiewicz win?", "4"),
          sub("How many Academy Awards did Tony Kaye win?", "0")], "Joseph L. Mankiewicz"),
        ("Who died first, Ann Lee or Bo Li?",  # same year, months tell
         [sub("When did Ann Lee die?", "May 1950"), sub("When did Bo Li die?", "March 1950")],
         "Bo Li"),
        # the rule stands aside:
        (KAAKA, [sub("When did Kaaka Muttai come out?", "2016"),
                 sub("When did En Sømand Går I Land come out?", "2016")], None),  # a tie
        ("Who died first, Ann Lee or Bo Li?",
         [sub("When did Ann Lee die?", "1950"), sub("When did Bo Li die?", "March 1950")],
         None),  # the year ties, one month not given
        (KAAKA, [sub("When did Kaaka Muttai come out?", "2015"),
                 sub("When did En Sømand Går I Land come out?", "unanswerable")], None),
        (KAAKA, [sub("When was Kaaka Muttai directed?", "2015"),
                 sub("When was En Sømand Går I Land directed?", "2010")], None),  # not asked
        ("Which film has the director born first, Lone Wolf Mcquade or Sordid Lives?",
         [sub("When was Lone Wolf Mcquade directed?", "1983"),
          sub("When was Sordid Lives directed?", "2000")], None),  # films' years, not births
        (KAAKA, [sub("When did Kaaka Muttai come out?", "2015"),
                 sub("When was Kaaka Muttai released?", "2014"),
                 sub("When did En Sømand Går I Land come out?", "2010")], None),  # two values
        ("Who won more academy awards, Joseph L. Mankiewicz or Tony Kaye?",
         [sub("How many films did Joseph L. Mankiewicz direct?", "20"),
          sub("How many films did Tony Kaye direct?", "5")], None),  # another count
        ("Where did the director of Vertigo die?", [sub("Who directed Vertigo?", "1958")], None),
    ],
)  # fmt: skip
def test_rule_comparison_decides_only_what_the_sub_answers_settle(
    question: str, subs: list[SubAnswer], expected: str | None
) -> None:
    ruling = rule_comparison(question, subs)
    assert (ruling.answer if ruling else None) == expected


@pytest.fixture(scope="module")
def lone_wolf() -> QAExample:
    q = load_dataset("2wiki", limit=7)[6]
    assert q.question.startswith("Which film has the director born first, Lone Wolf")
    return q


def _script(births: list[str]) -> ScriptedLLM:
    return ScriptedLLM({
        "decompose": ['["When was the director of Lone Wolf Mcquade born?", '
                      '"When was the director of Sordid Lives born?"]'],
        "sufficiency": lambda r: "Yes",
        "answer_sub": births,
        "summarize": ["Nothing about it."],
        "rewrite": ["unused"],
        "ansint": ["Sordid Lives"],
        "cxtint": ["Sordid Lives"],
    })  # fmt: skip


@pytest.mark.parametrize(
    ("births", "expected", "cxtint_asked"),
    [
        (["April 5, 1945", "December 3, 1957"], "Lone Wolf Mcquade", False),
        (["April 5, 1945", "unanswerable"], "Sordid Lives", True),
    ],
)
def test_compare_by_rule_makes_the_papers_requests_and_no_cxtint_where_the_rule_decides(
    births: list[str], expected: str, cxtint_asked: bool, lone_wolf: QAExample, tmp_path: Path
) -> None:
    """compare_by_rule.yaml: ansint.yaml's requests word for word (so it replays from its
    cache), without CxtInt's where the rule decides the comparison."""
    paper = fast(load_recipe(ROOT / "recipes" / "chainrag" / "ansint.yaml"))
    base = _script(births)
    answer_question(paper, lone_wolf, base, cache=IndexCache(tmp_path))
    recipe = fast(load_recipe(ROOT / "recipes" / "variants" / "compare_by_rule.yaml"))
    llm = _script(births)
    prediction = answer_question(recipe, lone_wolf, llm, cache=IndexCache(tmp_path))
    ansint, ruled = prediction.answers
    assert (ansint.name, ruled.name) == ("ansint", "byrule")
    assert ruled.answer.text == expected
    assert ruled.answer.picks[0].said.startswith(
        "[fallback" if cxtint_asked else "[by rule: birth least"
    )
    expected_requests = base.requests if cxtint_asked else base.requests[:-1]
    assert base.requests[-1].prompt_id == "cxtint"
    assert llm.requests == expected_requests


LONE_WOLF = "Which film has the director born first, Lone Wolf Mcquade or Sordid Lives?"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (LONE_WOLF, ("Who is the director of Lone Wolf Mcquade?", "When was #1 born?",
                     "Who is the director of Sordid Lives?", "When was #3 born?")),
        ("Which film has the director who died later, Akhono Onek Raat or Bitter Rice?",
         ("Who is the director of Akhono Onek Raat?", "When did #1 die?",
          "Who is the director of Bitter Rice?", "When did #3 die?")),
        ("Which film whose director was born first, Deported Women Of The Ss Special Section "
         "or Custodio De Señoras?",
         ("Who is the director of Deported Women Of The Ss Special Section?", "When was #1 born?",
          "Who is the director of Custodio De Señoras?", "When was #3 born?")),
        ("Which film has the producer who is older, Aatma Gowravam or Vitti Dandu?",
         ("Who is the producer of Aatma Gowravam?", "When was #1 born?",
          "Who is the producer of Vitti Dandu?", "When was #3 born?")),
        ("Which film has the director born earlier, The Adventures Of Priscilla, Queen Of The "
         "Desert or Harvest: 3,000 Years?",
         ("Who is the director of The Adventures Of Priscilla, Queen Of The Desert?",
          "When was #1 born?", "Who is the director of Harvest: 3,000 Years?",
          "When was #3 born?")),
        ("Who was born first, Ann Lee or Bo Li?", None),  # the choices are the people
        (KAAKA, None),  # the films' own dates
        ("Which film has more directors, Vertigo or Psycho?", None),  # a count
        ("Where did the director of Vertigo die?", None),
    ],
)  # fmt: skip
def test_role_sub_questions_ask_each_choices_person_then_the_compared_date(
    question: str, expected: tuple[str, ...] | None
) -> None:
    assert role_sub_questions(question) == expected


def test_the_rule_reads_a_numbered_reference_as_naming_what_it_refers_to() -> None:
    originals = role_sub_questions(LONE_WOLF)
    assert originals is not None
    subs = [sub("Who is the director of Lone Wolf Mcquade?", "Steve Carver"),
            sub("When was Steve Carver born?", "April 5, 1945"),
            sub("Who is the director of Sordid Lives?", "Del Shores"),
            sub("When was Del Shores born?", "December 3, 1957")]  # fmt: skip
    ruling = rule_comparison(LONE_WOLF, subs, originals)
    assert ruling is not None and ruling.answer == "Lone Wolf Mcquade"
    assert rule_comparison(LONE_WOLF, subs) is None  # the rewritten questions name no film
    # a reference to a later or missing step names nothing
    broken = ("Who is the director of Lone Wolf Mcquade?", "When was #3 born?",
              "Who is the director of Sordid Lives?", "When was #9 born?")  # fmt: skip
    assert rule_comparison(LONE_WOLF, subs, broken) is None


def _role_script(answers: list[str]) -> ScriptedLLM:
    return ScriptedLLM({
        "sufficiency": lambda r: "Yes",
        "answer_sub": answers,
        "summarize": lambda r: "Nothing about it.",
        "ansint": ["Sordid Lives"],
        "cxtint": ["Sordid Lives"],
    })  # fmt: skip


@pytest.mark.parametrize(
    ("answers", "expected", "cxtint_asked"),
    [
        (["Steve Carver", "April 5, 1945", "Del Shores", "December 3, 1957"],
         "Lone Wolf Mcquade", False),
        (["Steve Carver", "April 5, 1945", "unanswerable", "unanswerable"], "Sordid Lives", True),
    ],
)  # fmt: skip
def test_compare_roles_by_rule_decomposes_and_fills_references_without_the_llm(
    answers: list[str], expected: str, cxtint_asked: bool, lone_wolf: QAExample, tmp_path: Path
) -> None:
    """compare_roles_by_rule.yaml on a comparison of two films' directors: no decomposition
    or rewriting request, the references filled with the directors' names, and no CxtInt
    request where the two births decide it."""
    recipe = fast(load_recipe(ROOT / "recipes" / "variants" / "compare_roles_by_rule.yaml"))
    llm = _role_script(answers)
    prediction = answer_question(recipe, lone_wolf, llm, cache=IndexCache(tmp_path))
    asked = [r.prompt_id for r in llm.requests]
    assert "decompose" not in asked and "rewrite" not in asked
    assert ("cxtint" in asked) == cxtint_asked
    third = None if answers[2] == "unanswerable" else f"When was {answers[2]} born?"
    rewritten = [s.rewritten for s in prediction.steps]
    assert rewritten == [None, "When was Steve Carver born?", None, third]
    assert prediction.answers[1].answer.text == expected


def test_compare_roles_by_rule_is_compare_by_rule_on_any_other_question(tmp_path: Path) -> None:
    """Where the rule does not decompose, the requests are compare_by_rule.yaml's word for
    word (so it replays from that run's cache)."""
    question = load_dataset("2wiki", limit=1)[0]
    assert role_sub_questions(question.question) is None
    script = {
        "decompose": ['["Who directed The Serpent\'s Egg?", "Where did he die?"]'],
        "sufficiency": lambda r: "Yes",
        "answer_sub": ["Ingmar Bergman", "Fårö"],
        "rewrite": ["Where did Ingmar Bergman die?"],
        "summarize": ["Nothing."],
        "ansint": ["Fårö"],
        "cxtint": ["Fårö"],
    }
    requests = []
    for name in ("compare_by_rule", "compare_roles_by_rule"):
        recipe = fast(load_recipe(ROOT / "recipes" / "variants" / f"{name}.yaml"))
        llm = ScriptedLLM(script)
        answer_question(recipe, question, llm, cache=IndexCache(tmp_path))
        requests.append(llm.requests)
    assert "rewrite" in [r.prompt_id for r in requests[0]]
    assert requests[0] == requests[1]
