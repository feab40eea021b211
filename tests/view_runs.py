"""A toy ChainRAG run whose index is in the cache, for the tests of ``chainrag view``: one
MuSiQue-format question over four passages, a hand-made sentence graph (EC / SS / SA edges
chosen so that the walks below are what ``iterative_hops`` does on it), and a two-step trace
— a rewrite triggered by "it", a two-hop walk, a gold paragraph never reached — plus a small
parser that turns the page into a tree to query.

Sentences (units), by passage:

    0 Alice was born in Paris.   1 Paris is in France.   2 The sky is blue.      (Alpha, gold)
    3 France borders Spain.      4 Spain has a king.     5 Kings wear crowns.   (Beta, gold)
    6 Bob likes tea.             7 Tea is hot.                                  (Gamma)
    8 Madrid is the capital of Spain.                                           (Delta, gold)
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import attrs
import numpy as np
from scipy import sparse

from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.core.types import (
    Answer,
    Decomposition,
    Expansion,
    NamedAnswer,
    Passage,
    Prediction,
    Sentence,
    StepTrace,
    SubAnswer,
    Usage,
    Verdict,
)
from chainrag.data.datasets import load_dataset
from chainrag.index.build import IndexCache
from chainrag.index.graph import SentenceGraph
from chainrag.recipes.recipe import check_recipe
from chainrag.run.meta import file_fingerprint
from chainrag.run.notes import notes_of
from chainrag.run.record import RetrievalRecord, RunRecord, ScoredAnswer, record_line

ROOT = Path(__file__).resolve().parent.parent
STORED = ROOT / "docs" / "runs" / "musique" / "ansint"
QID = "2hop__toy_1"

PASSAGES = {
    "Alpha": ["Alice was born in Paris.", "Paris is in France.", "The sky is blue."],
    "Beta": ["France borders Spain.", "Spain has a king.", "Kings wear crowns."],
    "Gamma": ["Bob likes tea.", "Tea is hot."],
    "Delta": ["Madrid is the capital of Spain."],
}
GOLD_PASSAGES = ("Alpha", "Beta", "Delta")
EDGES = {
    "ec": [(0, 1), (1, 3), (3, 4), (5, 8)],
    "ss": [(0, 6)],
    "sa": [(0, 1), (1, 2), (3, 4), (4, 5), (6, 7)],
}
STEP_1 = Expansion(units=(0, 1, 6), seeds=(0,), hops=1, verdicts=(Verdict(True, "yes"),))
STEP_2 = Expansion(units=(3, 1, 4, 0, 2, 5), seeds=(3,), hops=2,
                   verdicts=(Verdict(False, "no"), Verdict(True, "Yes.")))  # fmt: skip


def musique_record() -> dict[str, object]:
    paragraphs = [
        {"idx": i, "title": title, "paragraph_text": " ".join(sentences),
         "is_supporting": title in GOLD_PASSAGES}
        for i, (title, sentences) in enumerate(PASSAGES.items())
    ]  # fmt: skip
    return {
        "id": QID,
        "question": "Which country borders the country where Alice was born?",
        "answer": "Spain",
        "answer_aliases": ["Kingdom of Spain"],
        "paragraphs": paragraphs,
        "question_decomposition": [
            {"question": "Where was Alice born?", "answer": "France", "paragraph_support_idx": 0},
            {"question": "Which country borders #1?", "answer": "Spain",
             "paragraph_support_idx": 1},
        ],
    }  # fmt: skip


def sentences() -> tuple[Sentence, ...]:
    out = []
    for p, (title, texts) in enumerate(PASSAGES.items()):
        text = " ".join(texts)
        for position, sentence in enumerate(texts):
            start = text.index(sentence)
            out.append(Sentence(len(out), sentence, p, title, position, start,
                                start + len(sentence)))  # fmt: skip
    return tuple(out)


def graph(passages: tuple[Passage, ...]) -> SentenceGraph:
    units = sentences()
    n = len(units)

    def layer(pairs: list[tuple[int, int]]) -> sparse.csr_matrix:
        rows = [a for a, b in pairs] + [b for a, b in pairs]
        cols = [b for a, b in pairs] + [a for a, b in pairs]
        return sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, n))

    return SentenceGraph(
        passages=passages, sentences=units, embeddings=np.zeros((n, 4), np.float32),
        embedder=HashedBagOfWords(4), entities=(), incidence=sparse.csr_matrix((n, 0)),
        key_entities=((),) * n, layers={name: layer(p) for name, p in EDGES.items()},
    )  # fmt: skip


def trace(summary: str | None = None) -> Prediction:
    """The toy trace; with ``summary``, step 1 is unanswered and summarised (so step 2 is not
    rewritten)."""
    steps = (
        StepTrace("Where was Alice born?", None, STEP_1.units, STEP_1,
                  SubAnswer("Where was Alice born?", "Paris", True), Usage(2, 0, 300, 4, 1.5)),
        StepTrace("Which country borders it?", "Which country borders France?", STEP_2.units,
                  STEP_2, SubAnswer("Which country borders France?", "Spain", True),
                  Usage(4, 0, 900, 9, 3.25)),
    )  # fmt: skip
    if summary is not None:
        unanswered = SubAnswer("Where was Alice born?", "unanswerable", False)
        steps = (attrs.evolve(steps[0], answer=unanswered, summary=summary),
                 attrs.evolve(steps[1], rewritten=None))  # fmt: skip
    decomposition = Decomposition(
        ("Where was Alice born?", "Which country borders it?"), raw='["Where was Alice born?"]'
    )
    answers = (NamedAnswer("ansint", Answer("Spain")), NamedAnswer("cxtint", Answer("France")))
    usage = Usage(9, 0, 1500, 20, 6.0)
    recipe = check_recipe(STORED / "recipe.yaml").recipe
    assert recipe is not None
    by_prompt = (("decompose", Usage(1, 0, 100, 5, 1.0)),)
    return Prediction(answers, steps, decomposition, usage, by_prompt, notes=notes_of(recipe))


def words(units: list[int]) -> int:
    texts = sentences()
    return sum(len(texts[u].text.split()) for u in units)


def toy_record(word_count: int | None = None, summary: str | None = None) -> RunRecord:
    retrieved = list(dict.fromkeys([*STEP_1.units, *STEP_2.units]))
    scores = {"recall@2": 0.33, "recall@all": 2 / 3,
              "words": float(words(retrieved) if word_count is None else word_count)}  # fmt: skip
    answers = {
        "ansint": ScoredAnswer("Spain", 1.0, 1.0),
        "cxtint": ScoredAnswer("France", 0.0, 0.0),
    }
    return RunRecord(QID, "musique", str(musique_record()["question"]), "2hop",
                     ("Spain", "Kingdom of Spain"), answers, RetrievalRecord("paragraph", scores),
                     trace(summary), 12.5)  # fmt: skip


@attrs.frozen
class ToyRun:
    folder: Path
    data: Path
    index: Path


def make_toy_run(
    base: Path, *, cached: bool = True, word_count: int | None = None, name: str = "ansint",
    more_questions: str = "", summary: str | None = None,
) -> ToyRun:  # fmt: skip
    """The toy run folder under ``base`` (``runs/musique/NAME``), its data root (set
    ``CHAINRAG_DATA`` to it; ``more_questions``: lines of the dataset file after the toy's)
    and, with ``cached``, its graph saved where the view looks (``CHAINRAG_CACHE``)."""
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    dataset = data / "musique_dev.jsonl"
    dataset.write_text(json.dumps(musique_record()) + "\n" + more_questions, encoding="utf-8")
    folder = base / "runs" / "musique" / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(STORED / "recipe.yaml", folder / "recipe.yaml")
    meta = json.loads((STORED / "run.json").read_text(encoding="utf-8"))
    meta.update(dataset_file=str(dataset), dataset_fingerprint=file_fingerprint(dataset),
                recipe_name=name)  # fmt: skip
    (folder / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    line = json.dumps(record_line(toy_record(word_count, summary)))
    (folder / "predictions.jsonl").write_text(line + "\n", encoding="utf-8")
    example = load_dataset("musique", root=data)[0]
    recipe = check_recipe(folder / "recipe.yaml").recipe
    assert recipe is not None
    assert recipe.index is not None
    index = IndexCache().path_for(example.passages, recipe.index)
    if cached:
        graph(example.passages).save(index)
    return ToyRun(folder, data, index)


# --------------------------------------------------------------------------- a parsed page


@attrs.define
class Element:
    """An element of a parsed page: tag, attributes, children (elements and text)."""

    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = attrs.Factory(list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.walk()

    def find_all(self, tag: str | None = None, *, class_: str | None = None,
                 **attributes: str) -> list[Element]:  # fmt: skip
        """Descendants (and self) with the tag, the class and every attribute given
        (``data_unit`` for ``data-unit``)."""
        wanted = {k.replace("_", "-"): v for k, v in attributes.items()}
        return [
            e for e in self.walk()
            if (tag is None or e.tag == tag) and (class_ is None or class_ in e.classes)
            and all(e.attrs.get(k) == v for k, v in wanted.items())
        ]  # fmt: skip

    def one(
        self, tag: str | None = None, *, class_: str | None = None, **attributes: str
    ) -> Element:
        found = self.find_all(tag, class_=class_, **attributes)
        assert len(found) == 1, (
            f"expected one <{tag} class={class_} {attributes}>, got {len(found)}"
        )
        return found[0]


VOID = {"meta", "link", "br", "img", "input", "hr", "circle", "line", "path"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attributes})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attributes}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Element:
    """The page as a tree; an assertion error on an end tag that closes the wrong element."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    assert builder.stack == [builder.root], f"unclosed: {[e.tag for e in builder.stack]}"
    return builder.root
