"""LongRAG (Zhao et al., 2024) as its code runs: the chunks of given texts worked out by hand
from ``gen_index.py``'s ``split_sentences``, the citation reading and the source paragraphs of
``src/main.py``, its prompts word for word, the method's flow and ablations with a scripted
LLM, and the recipe end to end through the stand-in server, per question and over a shared
corpus index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.index.chunkers import (
    SentenceChunks,
    longrag_word_count,
    punctuation_pieces,
)
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.knowledge.cot_filter import cites
from chainrag.components.reasoning.extractors import source_paragraphs
from chainrag.context import StageContext
from chainrag.core.context import MissingResourceError
from chainrag.core.types import LLMRequest, Passage, Prediction, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.index.build import IndexCache
from chainrag.index.graph import ChunkIndex
from chainrag.llm.fake import ScriptedLLM
from chainrag.llm.prompts import load_prompt
from chainrag.methods.longrag import LongRAG
from chainrag.recipes.recipe import Recipe, RetrievalSpec, load_recipe
from chainrag.run.question import answer_question, searchable_index
from chainrag.standin.replies import standin_reply
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT

RECIPE = ROOT / "recipes" / "baselines" / "longrag.yaml"

# ------------------------------------------------------------------ chunks, worked by hand

STORY = "Ann met Bob. They went to Rome, then to Paris; it rained! Bob left? Ann stayed"
# Pieces, cut after each of ! 。 ， ！ ? ？ , . ; (the mark stays with its piece); the tail
# " Ann stayed" has no mark after it and is dropped, as split_sentences drops it:
#   0 "Ann met Bob."          3 words
#   1 " They went to Rome,"   4 words
#   2 " then to Paris;"       3 words
#   3 " it rained!"           2 words
#   4 " Bob left?"            2 words


def texts(chunker: SentenceChunks, text: str) -> list[str]:
    return [c.text for c in chunker((Passage("p", "T", text),))]


def test_pieces_and_words_as_the_reference_counts_them() -> None:
    pieces = [STORY[a:b] for a, b in punctuation_pieces(STORY)]
    assert pieces == ["Ann met Bob.", " They went to Rome,", " then to Paris;", " it rained!",
                      " Bob left?"]  # fmt: skip
    assert [longrag_word_count(p) for p in pieces] == [3, 4, 3, 2, 2]
    assert punctuation_pieces(STORY, keep_tail=True)[-1] == (len(STORY) - 11, len(STORY))
    # split at every non-word character, each CJK character a word: don / t / stop / go / 中 / 文
    assert longrag_word_count("don't stop-go 中文") == 6


def test_chunks_of_a_text_with_the_overlap_that_only_starts_after_piece_overlap() -> None:
    # size 6, min 2, overlap 2. i=0: 3 < 6. i=1: 7 >= 6; i+1 = 2 is not > 2, so the overlap
    # stays 0 words; the first chunk is pieces 0-1; start = 2. i=2: 3 < 6; i=3: 5 < 6.
    # i=4 (last): the overlap is pieces 3-4's 4 words; start = 2 is not > overlap 2, so the
    # chunk does not step back: pieces 2-4 (3 pieces, not fewer than min 2).
    chunks = SentenceChunks(size=6, min_sentences=2, overlap=2)((Passage("p", "T", STORY),))
    assert [c.text for c in chunks] == ["Ann met Bob. They went to Rome,",
                                        " then to Paris; it rained! Bob left?"]  # fmt: skip
    assert [(c.start, c.end, c.position, c.passage) for c in chunks] == [
        (0, 31, 0, 0), (31, 67, 1, 0)]  # fmt: skip


def test_chunks_of_a_text_each_starting_with_the_previous_ones_last_piece() -> None:
    # size 4, min 2, overlap 1. i=1: 3+4 = 7 >= 4 -> chunk 0-1, overlap = piece 1's 4 words.
    # i=2: 3 >= 4-4 -> start 2 > 1 steps back to 1: chunk 1-2; overlap = piece 2's 3 words.
    # i=3: 2 >= 4-3 -> start 3 -> 2: chunk 2-3; overlap 2. i=4: 2 >= 4-2 -> start 4 -> 3:
    # chunk 3-4 (2 pieces).
    assert texts(SentenceChunks(size=4, min_sentences=2, overlap=1), STORY) == [
        "Ann met Bob. They went to Rome,",
        " They went to Rome, then to Paris;",
        " then to Paris; it rained!",
        " it rained! Bob left?",
    ]


def test_a_short_last_chunk_joins_the_one_before() -> None:
    # size 6, min 2, overlap 2: piece 0 has 6 words, a chunk by itself (start = 1); the last
    # piece alone (start 1 is not > 2, no step back) is 1 piece < min 2: appended to chunk 0.
    assert texts(SentenceChunks(size=6), "One two three four five six. Seven.") == [
        "One two three four five six. Seven."
    ]
    # min 1: it stays a chunk of its own
    assert texts(
        SentenceChunks(size=6, min_sentences=1), "One two three four five six. Seven."
    ) == [
        "One two three four five six.",
        " Seven.",
    ]


def test_the_default_chunks_of_two_hundred_words_overlap_by_two_pieces() -> None:
    # 100 pieces of 5 words. Chunk 1 gathers 40 pieces (200 words >= 200) : 0-39; the overlap
    # is pieces 38-39 (10 words). Chunk 2 needs 190 words: 38 pieces, 40-77, stepping back 2
    # to start at 38: 38-77. Chunk 3 reaches the last piece (22 pieces, 110 words): 76-99.
    pieces = [f"{' ' if k else ''}w{k} x y z v." for k in range(100)]
    assert {longrag_word_count(p) for p in pieces} == {5}
    assert texts(SentenceChunks(), "".join(pieces)) == [
        "".join(pieces[0:40]), "".join(pieces[38:78]), "".join(pieces[76:100])]  # fmt: skip


def test_a_passage_without_a_mark_is_one_chunk_and_none_crosses_a_passage() -> None:
    long_text = " ".join(["word"] * 500)
    chunks = SentenceChunks(size=6)(
        (Passage("a", "A", long_text), Passage("b", "B", ""), Passage("c", "C", STORY))
    )
    assert chunks[0].text == long_text and chunks[0].passage == 0
    assert [c.passage for c in chunks[1:]] == [2, 2]
    assert [c.cid for c in chunks] == [0, 1, 2]
    assert texts(SentenceChunks(size=6, keep_tail=True), STORY)[-1].endswith("Ann stayed")


# ------------------------------------------------------------------ the filter and extractor


@pytest.mark.parametrize(
    ("reply", "cited"),
    [
        ('{"status": "True"}', True),
        ('{"status": "false"}', False),
        ('{"status": "False"}', False),
        ('{"status": true}', True),  # not text: .lower() fails, "true" is found in the reply
        ('```json\n{"status": "True"}\n```', True),  # not JSON as a whole: "True" found
        ('{"status": "False"} True', True),  # extra data after the JSON: "True" found
        ("The article is untrue.", True),  # the reference's regex matches inside a word
        ("No.", False),
        ("", False),
    ],
)
def test_a_citation_check_is_read_as_the_reference_reads_it(reply: str, cited: bool) -> None:
    assert cites(reply) is cited


def test_source_paragraphs_come_once_in_chunk_order_and_long_ones_as_their_chunk() -> None:
    paragraphs = {0: "zero para", 1: "one para", 2: "two " * 10}
    sources = [1, 0, 1, 2, 2]
    chunks = ["c1a", "c0", "c1b", "c2a", "c2b"]
    read = source_paragraphs(chunks, sources, [paragraphs[s] for s in sources], limit=10)
    assert read == ["one para", "zero para", "c2a", "c2b"]


def test_the_prompts_are_the_reference_code_word_for_word() -> None:
    # src/main.py's f-strings, with their variables' names
    q, content, d, think_pro = "Who?", "CONTENT", "ARTICLE", "THOUGHT"
    reference = {
        "longrag_extract": (
            {"evidence": content, "question": q},
            f"{content}.\n\nBased on the above background, please output the information you "
            f"need to cite to answer the question below.\n{q}",
        ),
        "longrag_cot": (
            {"evidence": content, "question": q},
            f"{content}\n\nPlease combine the above information and give your thinking process "
            f"for the following question:{q}.",
        ),
        "longrag_cite": (
            {"article": d, "question": q, "thought": think_pro},
            f"Given an article:{d}\nQuestion: {q}.\nThought process:{think_pro}.\nYour task is "
            "to use the thought process provided to decide whether you need to cite the article "
            "to answer this question. If you need to cite the article, set the status value to "
            "True. If not, set the status value to False. Please output the response in the "
            'following json format: {"status": "{the value of status}"}',
        ),
        "longrag_answer": (
            {"evidence": content, "question": q},
            "Answer the question based on the given passages. Only give me the answer and do "
            f"not output any other words.\n\nThe following are given passages.\n{content}\n\n"
            "Answer the question based on the given passages. Only give me the answer and do not"
            f" output any other words.\n\nQuestion: {q}\nAnswer:",
        ),
    }
    tokens = {"longrag_extract": 1000, "longrag_cot": 1000, "longrag_cite": 32,
              "longrag_answer": 32}  # fmt: skip
    for prompt_id, (values, text) in reference.items():
        prompt = load_prompt(prompt_id, 1)
        messages = prompt.render(**values)
        assert [(m.role, m.content) for m in messages] == [("user", text)], prompt_id
        assert prompt.max_tokens == tokens[prompt_id]


# ------------------------------------------------------------------ the method's flow


@pytest.fixture(scope="module")
def bergman() -> QAExample:
    return load_dataset("2wiki", limit=1)[0]


def fast(recipe: Recipe, **method: object) -> Recipe:
    assert recipe.index is not None and recipe.method is not None
    return attrs.evolve(
        recipe,
        index=attrs.evolve(recipe.index, embedder=HashedBagOfWords(dim=256)),
        method=attrs.evolve(recipe.method, **method),
    )


def scripted(cited: str | None) -> ScriptedLLM:
    """Cites the chunks that contain ``cited`` (none where None)."""

    def cite(request: LLMRequest) -> str:
        article = request.messages[-1].content.split("\nQuestion:")[0]
        return '{"status": "True"}' if cited and cited in article else '{"status": "False"}'

    return ScriptedLLM({"longrag_cot": ["Bergman directed it; where did he die?"],
                        "longrag_cite": cite, "longrag_extract": ["EXTRACTED"],
                        "longrag_answer": ["Fårö."]})  # fmt: skip


def run(
    recipe: Recipe, example: QAExample, llm: ScriptedLLM, tmp_path: Path
) -> tuple[Prediction, dict[str, list[str]]]:
    prediction = answer_question(recipe, example, llm, cache=IndexCache(tmp_path))
    return prediction, {r.prompt_id: [m.content for m in r.messages] for r in llm.requests}


def test_longrag_keeps_the_cited_chunks_and_adds_the_extraction(
    bergman: QAExample, tmp_path: Path
) -> None:
    recipe = fast(load_recipe(RECIPE))
    index = searchable_index(recipe, bergman, StageContext().models, IndexCache(tmp_path))
    assert isinstance(index, ChunkIndex)
    llm = scripted("Bergman")
    prediction, last = run(recipe, bergman, llm, tmp_path)
    step = prediction.steps[0]
    retrieved = [index.texts[u] for u in step.retrieved]
    assert len(retrieved) == 7
    assert [r.prompt_id for r in llm.requests] == (
        ["longrag_cot"] + ["longrag_cite"] * 7 + ["longrag_extract", "longrag_answer"])  # fmt: skip
    assert prediction.usage.calls == 10 and prediction.answer == "Fårö"
    assert last["longrag_cot"][0].startswith("\n".join(retrieved) + "\n\n")
    kept = [index.texts[u] for u in step.retrieved if "Bergman" in index.texts[u]]
    assert kept and step.kept == tuple(u for u in step.retrieved if "Bergman" in index.texts[u])
    # the extractor reads each chunk's source paragraph once, in the chunks' order, joined
    sources = list(dict.fromkeys(index.chunks[u].passage for u in step.retrieved))
    joined = "".join(index.passages[p].text for p in sources)
    assert last["longrag_extract"][0].startswith(joined + ".\n\nBased on")
    assert step.summary == "EXTRACTED"
    assert "".join(kept) + "EXTRACTED" in last["longrag_answer"][0]
    assert [a.name for a in prediction.answers] == ["longrag"]


def test_a_filter_that_cites_nothing_keeps_every_chunk(bergman: QAExample, tmp_path: Path) -> None:
    prediction, _ = run(fast(load_recipe(RECIPE)), bergman, scripted(None), tmp_path)
    step = prediction.steps[0]
    assert step.kept == step.retrieved


@pytest.mark.parametrize(
    ("change", "prompts"),
    [
        ({"filter": None}, ["longrag_extract", "longrag_answer"]),
        ({"extractor": None}, ["longrag_cot"] + ["longrag_cite"] * 7 + ["longrag_answer"]),
        ({"filter": None, "extractor": None}, ["longrag_answer"]),
    ],
    ids=["without-filter", "without-extractor", "vanilla"],
)
def test_the_ablations_drop_their_stage(
    bergman: QAExample, tmp_path: Path, change: dict[str, object], prompts: list[str]
) -> None:
    llm = scripted("Bergman")
    prediction, last = run(fast(load_recipe(RECIPE), **change), bergman, llm, tmp_path)
    assert [r.prompt_id for r in llm.requests] == prompts
    step = prediction.steps[0]
    assert (step.kept is None) == (change.get("filter", 1) is None)
    assert (step.summary is None) == (change.get("extractor", 1) is None)
    if "filter" in change:  # every chunk goes to the generator, then the extraction if any
        index = searchable_index(fast(load_recipe(RECIPE)), bergman, StageContext().models,
                                 IndexCache(tmp_path))  # fmt: skip
        every = "".join(index.texts[u] for u in step.retrieved)
        assert every + (step.summary or "") + "\n\n" in last["longrag_answer"][0]


def test_the_extractor_needs_an_index_that_knows_its_units_passages() -> None:
    @attrs.frozen
    class Bare:
        texts: tuple[str, ...]
        embeddings: object
        embedder: object

    from chainrag.components.retrieval.retrievers import DenseRerank

    embedder = HashedBagOfWords(dim=16)
    bare = Bare(
        ("Paris is in France.",), embedder(["Paris is in France."], StageContext()), embedder
    )
    ctx = StageContext(llm=scripted(None), index=bare, retrieval=RetrievalSpec(DenseRerank(k=1)))
    with pytest.raises(MissingResourceError, match=r"source passages, which a Bare does not"):
        LongRAG(filter=None)(QAExample("q", "toy", "Where is Paris?"), ctx)


# ------------------------------------------------------------------ end to end, stand-in


def standin_recipe(tmp_path: Path, api_base: str) -> Path:
    path = tmp_path / "longrag.yaml"
    path.write_text(
        f"base: {RECIPE}\nname: longrag\n"
        "index: {embedder: {kind: hashed_bow, dim: 64}}\n"
        f"llm: {{kind: litellm, model: openai/standin, api_base: '{api_base}'}}\n"
    )
    return path


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines()]


def test_the_recipe_runs_through_the_stand_in_per_question_and_over_a_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    examples = load_dataset("musique", 3)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": p.title, "text": p.text}) + "\n"
                              for e in examples for p in e.passages))  # fmt: skip
    fake = FakeOpenAI([], reply=standin_reply)
    runner = CliRunner()
    with serve(fake) as api_base:
        path = standin_recipe(tmp_path, api_base)
        own = runner.invoke(app, ["run", str(path), "--dataset", "musique", "--limit", "3",
                                  "--out-dir", str(tmp_path / "runs"), "--no-report"])  # fmt: skip
        assert own.exit_code == 0, own.output
        built = runner.invoke(app, ["index", str(path), "--corpus", str(corpus),
                                    "--out-dir", str(tmp_path / "idx")])  # fmt: skip
        assert built.exit_code == 0, built.output
        shared = runner.invoke(app, ["run", str(path), "--dataset", "musique", "--limit", "3",
                                     "--index", str(tmp_path / "idx"), "--out-dir",
                                     str(tmp_path / "runs"), "--no-report"])  # fmt: skip
        assert shared.exit_code == 0, shared.output
    for folder in ("musique", "musique@corpus"):
        lines = records(tmp_path / "runs" / folder / "longrag")
        assert len(lines) == 3
        for line in lines:
            (step,) = line["trace"]["steps"]
            assert len(step["retrieved"]) == 7 and step["summary"]
            assert 1 <= len(step["kept"]) <= 7 and set(step["kept"]) <= set(step["retrieved"])
            usage = line["trace"]["usage"]
            assert usage["calls"] + usage["cache_hits"] == 10
            assert line["answers"]["longrag"]["text"]
            assert line["retrieval"]["level"] == "paragraph"


def test_the_view_shows_the_chunks_kept_and_the_extracted_information(tmp_path: Path) -> None:
    from chainrag.core.types import StepTrace
    from chainrag.view import Examples, Indexes, read_runs, render
    from tests.run_records import record, write_run
    from tests.view_runs import parse

    step = StepTrace("Who?", None, (5, 6, 7), kept=(6,), summary="Ann <wrote> it.")
    write_run(tmp_path / "longrag", [record("q1", {"longrag": 1.0}, steps=[step])])
    runs, notes = read_runs([tmp_path / "longrag"])
    page = parse(render(runs, notes, Examples(), Indexes(), plots=False).html)
    (shown,) = page.one("details", class_="method").find_all("div", class_="step")
    assert "Retrieved 3; the knowledge filter kept 1:" in shown.text()
    assert shown.one("p", class_="summary").text() == (
        "Extracted from their passages, which the answer read after them: Ann <wrote> it."
    )
