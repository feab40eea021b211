"""IRCoT as HippoRAG's code runs it (``src/ircot_hipporag.py``, ``src/qa/qa_reader.py``): when
it stops, how many steps it takes, how it merges and orders passages, what its prompts show, how
the reader's answer is read; and the HippoRAG recipes run end to end through the runner with the
stand-in, per question and over a shared corpus index, each passage read once."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np
import pytest

from chainrag.components.index.chunkers import TitledPassages
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.context import StageContext
from chainrag.core.errors import RecipeError
from chainrag.core.types import FloatArray, Hit, LLMRequest, Passage, QAExample
from chainrag.index.graph import ChunkIndex
from chainrag.llm.fake import ScriptedLLM
from chainrag.methods.ircot import IRCoT, by_score, dataset_demos, merge_best, merge_same_title
from chainrag.protocols.context import Context
from chainrag.protocols.units import Searchable
from chainrag.recipes.recipe import RetrievalSpec, load_recipe

from .conftest import ROOT

PASSAGES = tuple(Passage(str(i), f"T{i}", f"text {i}") for i in range(8))


@attrs.frozen
class Scripted:
    """A seed retriever that answers each query from a table of hits."""

    table: tuple[tuple[str, tuple[Hit, ...]], ...]

    def __call__(self, query: str, index: Searchable, ctx: Context) -> tuple[Hit, ...]:
        return dict(self.table)[query]


def context(table: dict[str, list[tuple[int, float]]], llm: ScriptedLLM) -> Context:
    embedder = HashedBagOfWords(dim=8)
    chunks = TitledPassages()(PASSAGES)  # "T0\ntext 0", ...
    vectors: FloatArray = embedder([c.text for c in chunks], StageContext())
    hits = tuple((q, tuple(Hit(u, s) for u, s in rows)) for q, rows in table.items())
    index = ChunkIndex(PASSAGES, chunks, vectors, embedder)
    return StageContext(llm=llm, index=index, retrieval=RetrievalSpec(Scripted(hits)))


def ask(method: IRCoT, ctx: Context, dataset: str = "musique") -> tuple:  # type: ignore[type-arg]
    prediction = method(QAExample("q1", dataset, "Q?"), ctx)
    return prediction, [s.question for s in prediction.steps]


def reader(answer: str = "Paris") -> list[str]:
    return [f"Reasoning.\nAnswer: {answer}"]


def test_the_loop_stops_at_so_the_answer_is() -> None:
    llm = ScriptedLLM(
        {
            "ircot_musique": ["T3 is a city.", "So the answer is: T4."],
            "hipporag_reader_musique": reader(),
        }
    )
    table = {"Q?": [(0, 0.9), (1, 0.5)], "T3 is a city.": [(3, 0.7)]}
    prediction, queries = ask(IRCoT(), context(table, llm))
    assert queries == ["Q?", "T3 is a city.", "So the answer is: T4."]
    assert [s.retrieved for s in prediction.steps] == [(0, 1), (3,), ()]
    assert llm.calls("ircot_musique") == 2 and prediction.answer == "Paris"
    # each thought reads the passages so far, best first, and the thoughts before it
    second = llm.requests[1].messages[-1].content
    assert second == "T0\ntext 0\n\nT3\ntext 3\n\nT1\ntext 1\n\nQuestion: Q?\nThought:T3 is a city."
    assert llm.requests[0].messages[-1].content.endswith("Question: Q?\nThought:")


@pytest.mark.parametrize(
    ("max_steps", "dataset", "thoughts"),
    [
        (1, "musique", 0),
        (2, "musique", 1),
        (None, "musique", 3),
        (None, "long:2wiki[0:5]", 1),
        (None, "pooled:hotpotqa", 1),
    ],
)
def test_the_step_limit_counts_retrievals(
    max_steps: int | None, dataset: str, thoughts: int
) -> None:
    """At most ``max_steps`` retrievals, so one thought fewer; unset, the authors' scripts'
    limit for the dataset: 4 on MuSiQue, 2 on HotpotQA and 2Wiki."""
    demos = dataset_demos(dataset)
    llm = ScriptedLLM(
        {f"ircot_{demos}": lambda r: "Still looking.", f"hipporag_reader_{demos}": reader()}
    )
    table = {"Q?": [(0, 0.9)], "Still looking.": [(1, 0.5)]}
    _, queries = ask(IRCoT(max_steps=max_steps), context(table, llm), dataset)
    assert llm.calls(f"ircot_{demos}") == thoughts
    assert queries == ["Q?"] + ["Still looking."] * thoughts


def test_passages_merge_by_best_score_in_the_order_they_came() -> None:
    """The pool keeps the order units first came in; read best first, equal scores in that
    order (the reference sorts its insertion-ordered dict each time, not the last sorted list):
    after T1 (0.45) comes back at 0.45 it is read before T2, which came later."""
    pool = merge_best({}, [Hit(0, 0.5), Hit(1, 0.4)])
    pool = merge_best(pool, [Hit(2, 0.45)])
    assert by_score(pool) == [0, 2, 1]
    pool = merge_best(pool, [Hit(1, 0.45), Hit(0, 0.1)])
    assert pool == {0: 0.5, 1: 0.45, 2: 0.45} and by_score(pool) == [0, 1, 2]


def test_the_reader_reads_the_best_passages_and_the_text_after_answer() -> None:
    llm = ScriptedLLM(
        {
            "ircot_musique": ["Maybe T5.", "So the answer is: T5."],
            "hipporag_reader_musique": ["I think.\nAnswer: T5\nAnswer: no"],
        }
    )
    table = {"Q?": [(0, 0.3), (1, 0.2), (2, 0.1)], "Maybe T5.": [(5, 0.9), (2, 0.8)]}
    prediction, _ = ask(IRCoT(answer_with=3), context(table, llm))
    user = llm.requests[-1].messages[-1].content
    assert user.startswith("Wikipedia Title: T5\ntext 5\n\nWikipedia Title: T2\ntext 2\n\n")
    assert "T0" in user and "T1" not in user and user.endswith("Question: Q?\nThought: ")
    assert prediction.answer == "T5"  # between the first "Answer:" and the next
    plain = ScriptedLLM(
        {"ircot_musique": ["So the answer is: x"], "hipporag_reader_musique": ["No marker here"]}
    )
    assert ask(IRCoT(), context({"Q?": [(0, 1.0)]}, plain))[0].answer == "No marker here"


def test_ircots_own_choices_are_fields() -> None:
    """IRCoT's code keeps a generation's first sentence and its paragraphs in arrival order,
    at most 15."""
    llm = ScriptedLLM(
        {
            "ircot_musique": ["T6 is it. More words.", "So the answer is: T6."],
            "hipporag_reader_musique": reader(),
        }
    )
    table = {"Q?": [(0, 0.2), (1, 0.1)], "T6 is it.": [(6, 0.9), (7, 0.8), (0, 0.5)]}
    method = IRCoT(thought="first_sentence", pool="cumulative", max_paragraphs=3)
    _, queries = ask(method, context(table, llm))
    assert queries == ["Q?", "T6 is it.", "So the answer is: T6."]
    reader_user = llm.requests[-1].messages[-1].content
    assert [line for line in reader_user.split("\n") if line.startswith("Wikipedia")] == [
        "Wikipedia Title: T0",
        "Wikipedia Title: T1",
        "Wikipedia Title: T6",
    ]


def test_hotpotqa_passages_of_one_title_are_merged() -> None:
    assert merge_same_title(["A\nx", "B\ny", "A\nz"]) == [
        "Wikipedia Title: A\nx\nz",
        "Wikipedia Title: B\ny",
    ]
    assert dataset_demos("my_file.json") == "musique"


def test_an_expander_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(
        f"base: {ROOT / 'recipes' / 'index' / 'sentence_graph.yaml'}\n"
        "retrieval: {seed: {kind: dense_rerank}, expander: {kind: one_step_rerank}}\n"
        "method: {kind: ircot}\n"
    )
    with pytest.raises(RecipeError, match="ircot merges its retrievals' seed scores"):
        load_recipe(path)


# --------------------------------------------------------------------------- runs


def run_cli(args: Sequence[str]) -> None:
    from typer.testing import CliRunner

    from chainrag.cli.main import app

    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output


def lines(folder: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines()]


def recipe_file(tmp_path: Path, name: str, api_base: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"base: {ROOT / 'recipes' / 'baselines' / f'{name}.yaml'}\nname: {name}\n"
        "index: {embedder: {kind: hashed_bow, dim: 64}}\n"
        f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}'}}\n"
    )
    return path


def test_the_recipes_run_per_question_and_share_each_passages_openie(tmp_path: Path) -> None:
    """hipporag_ircot, then hipporag over the same questions: the second reads no passage
    again (OpenIE's store), and each record holds its phrase graph's counts."""
    from chainrag.standin.replies import standin_reply
    from chainrag.standin.server import FakeOpenAI, serve

    fake = FakeOpenAI([], reply=standin_reply)
    with serve(fake) as api_base:
        for name in ("hipporag_ircot", "hipporag", "ircot"):
            run_cli(
                [
                    "run",
                    str(recipe_file(tmp_path, name, api_base)),
                    "--dataset",
                    "musique",
                    "--limit",
                    "2",
                    "--out-dir",
                    str(tmp_path / "runs"),
                    "--no-report",
                ]
            )
    first, second, dense = (
        lines(tmp_path / "runs" / "musique" / n) for n in ("hipporag_ircot", "hipporag", "ircot")
    )
    assert all(r["usage_by_prompt"]["openie_ner"]["calls"] == 20 for r in first)
    assert all("openie_ner" not in r["usage_by_prompt"] for r in second + dense)
    assert all(r["trace"]["phrase_graph"]["passages"] == 20 for r in first + second)
    assert all("phrase_graph" not in r["trace"] for r in dense)
    assert all(len(r["trace"]["steps"]) == 1 for r in second)
    assert all(r["answer"] and r["retrieval"]["recall@10"] >= 0 for r in first + dense)


def test_the_recipe_runs_over_a_shared_corpus_index(tmp_path: Path) -> None:
    """Every question over one index of all their passages: the graph of the corpus is read
    once (OpenIE) and retrieval is scored by title."""
    from chainrag.data.datasets import load_dataset
    from chainrag.standin.replies import standin_reply
    from chainrag.standin.server import FakeOpenAI, serve

    examples = load_dataset("musique", 2)
    passages = {(p.title, p.text) for e in examples for p in e.passages}
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in passages))
    fake = FakeOpenAI([], reply=standin_reply)
    with serve(fake) as api_base:
        path = recipe_file(tmp_path, "hipporag_ircot", api_base)
        run_cli(["index", str(path), "--corpus", str(source), "--out-dir", str(tmp_path / "idx")])
        run_cli(
            [
                "run",
                str(path),
                "--dataset",
                "musique",
                "--limit",
                "2",
                "--index",
                str(tmp_path / "idx"),
                "--out-dir",
                str(tmp_path / "runs"),
                "--no-report",
            ]
        )
    records = lines(tmp_path / "runs" / "musique@corpus" / "hipporag_ircot")
    ner = [r["usage_by_prompt"].get("openie_ner", {}).get("calls", 0) for r in records]
    assert sorted(ner) == [0, len(passages)]  # the first question's graph read the corpus
    assert all(r["trace"]["phrase_graph"]["passages"] == len(passages) for r in records)
    assert all(r["retrieval"]["level"] == "paragraph" for r in records)


def test_the_phrase_graph_counts_read_back_from_a_record() -> None:
    from chainrag.core.types import PhraseGraphStats, Prediction
    from chainrag.run.record import plain, structured

    prediction = Prediction((), phrase_graph=PhraseGraphStats(passages=3, unread_ner=1))
    data = plain(prediction)
    assert structured(data, Prediction, "trace") == prediction
    assert "phrase_graph" not in plain(Prediction(()))
    assert np.isfinite(data["phrase_graph"]["passages"])
    assert isinstance(LLMRequest, type)
