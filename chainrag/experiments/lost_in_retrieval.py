"""The lost-in-retrieval effect, measured without an LLM (ChainRAG §1, Table 2;
docs/decisions.md §1.7).

For every MuSiQue question whose gold decomposition has at least two steps and whose second
step refers to the first answer as ``#1``: paragraph Recall@2 of

* step 1;
* step 2 with ``#1`` replaced by a pronoun phrase ("this author", "this place"…) — what an
  LLM's decomposition usually produces, and what loses the key entity;
* step 2 with ``#1`` replaced by step 1's gold answer — what rewriting restores.

Steps written in MuSiQue's Wikidata form (``Levi Casey >> place of birth``) are first turned
into natural questions by a small rule set. Retrieval ranks the question's own paragraphs by
dense similarity to the step (the recipe's embedder); a step counts as recalled when its gold
supporting paragraph is among the top 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import attrs
import numpy as np

from chainrag.context import StageContext
from chainrag.core.errors import ChainragError
from chainrag.core.types import QAExample
from chainrag.data.datasets import load_dataset
from chainrag.experiments.probes import Progress, SavedProbes, counted, save_probes
from chainrag.index.build import EmbeddingCache
from chainrag.protocols.context import Context
from chainrag.protocols.index import Embedder, EmbedRole
from chainrag.recipes.recipe import load_recipe

PAPER_TABLE2 = {
    "musique": {"sub-question 1": 55.52, "sub-question 2 (original)": 40.91,
                "sub-question 2 (rewritten)": 58.81},
    "2wiki": {"sub-question 1": 57.50, "sub-question 2 (original)": 49.87,
              "sub-question 2 (rewritten)": 54.32},
    "hotpotqa": {"sub-question 1": 54.67, "sub-question 2 (original)": 49.17,
                 "sub-question 2 (rewritten)": 61.83},
}  # fmt: skip
"""Recall@2 (%) reported in the paper's Table 2 (LLM decompositions, LongBench contexts)."""


class LostInRetrievalError(ChainragError):
    """The recipe or dataset cannot run this experiment; the message says why."""


_RELATIONS = {
    "located in the administrative territorial entity": (
        "Which administrative territorial entity is {x} located in?"
    ),
    "shares border with": "What shares a border with {x}?",
    "place of birth": "Where was {x} born?",
    "place of death": "Where did {x} die?",
    "date of birth": "When was {x} born?",
    "date of death": "When did {x} die?",
    "educated at": "Where was {x} educated?",
    "employer": "Who is the employer of {x}?",
    "performer": "Who is the performer of {x}?",
    "author": "Who is the author of {x}?",
    "creator": "Who is the creator of {x}?",
    "composer": "Who is the composer of {x}?",
    "director": "Who is the director of {x}?",
    "spouse": "Who is the spouse of {x}?",
    "sibling": "Who is the sibling of {x}?",
    "father": "Who is the father of {x}?",
    "mother": "Who is the mother of {x}?",
    "child": "Who is the child of {x}?",
    "capital": "What is the capital of {x}?",
    "capital of": "What is {x} the capital of?",
    "member of": "What is {x} a member of?",
    "part of": "What is {x} part of?",
    "owned by": "Who owns {x}?",
    "cast member": "Who is a cast member of {x}?",
    "member of sports team": "Which sports team is {x} a member of?",
    "country": "Which country is {x} in?",
    "location": "Where is {x} located?",
    "work location": "Where did {x} work?",
    "crosses": "What does {x} cross?",
}  # fmt: skip
_PLACE_RELATIONS = {"located in the administrative territorial entity", "place of birth",
                    "place of death", "country", "location", "work location", "capital",
                    "capital of", "shares border with", "educated at"}  # fmt: skip
_PERSON_WORDS = {"who", "whom", "whose"}
_VERBS = {"is", "was", "are", "were", "did", "does", "do", "has", "had", "can", "will"}


def natural_question(step: str) -> str:
    """A Wikidata-form step ``subject >> relation`` as a question; other steps unchanged."""
    if ">>" not in step:
        return step.strip()
    subject, relation = (part.strip() for part in step.split(">>", 1))
    template = _RELATIONS.get(relation, "What is the {rel} of {x}?")
    return template.format(x=subject, rel=relation)


def pronoun_phrase(step1: str) -> str:
    """The phrase a decomposition would use for step 1's answer ("this author", "this place")."""
    if ">>" in step1:
        relation = step1.split(">>", 1)[1].strip()
        if relation in _PLACE_RELATIONS:
            return "this place"
        return f"this {relation.split()[0]}"
    words = re.findall(r"[A-Za-z]+", step1.lower())
    if not words:
        return "it"
    if words[0] in _PERSON_WORDS:
        return "this person"
    if words[0] == "where":
        return "this place"
    if words[0] == "when":
        return "that time"
    if words[0] in {"what", "which"} and len(words) > 1 and words[1] not in _VERBS:
        return f"this {words[1]}"
    return "it"


def fill(step: str, replacement: str) -> str:
    """``step`` with ``#1`` replaced and the space MuSiQue leaves before "?" removed."""
    return re.sub(r"\s+\?", "?", step.replace("#1", replacement)).strip()


@attrs.frozen
class Probe:
    """One question's three probes and whether each recalled its gold paragraph in the top 2."""

    qid: str
    step1: str
    step2_pronoun: str
    step2_answer: str
    hits: tuple[bool, bool, bool]


def probes_of(example: QAExample) -> tuple[str, str, str] | None:
    """(step 1, step 2 with a pronoun phrase, step 2 with the answer), or None if not usable."""
    steps = example.decomposition
    if len(steps) < 2 or "#1" not in steps[1].question:
        return None
    if steps[0].paragraph is None or steps[1].paragraph is None:
        return None
    first = natural_question(steps[0].question)
    second = natural_question(steps[1].question)
    return first, fill(second, pronoun_phrase(steps[0].question)), fill(second, steps[0].answer)


def top_paragraphs(
    queries: Sequence[str], passages: Sequence[str], embed: Callable[..., np.ndarray], k: int
) -> list[list[int]]:
    """The ``k`` passages nearest each query, best first (ties by index)."""
    p = embed(list(passages), "passage")
    q = embed(list(queries), "query")
    scores = q @ p.T
    return [list(np.lexsort((np.arange(len(row)), -row))[:k]) for row in scores]


def run(
    examples: Iterable[QAExample],
    embedder: Embedder,
    ctx: Context,
    k: int = 2,
    cache: EmbeddingCache | None = None,
) -> list[Probe]:
    """Probe every usable question; questions without a usable decomposition are skipped.

    With ``cache``, paragraph and probe embeddings are kept on disk (re-runs are fast).
    """

    def embed(texts: list[str], role: EmbedRole) -> np.ndarray:
        if cache is not None:
            return cache.embed(embedder, texts, ctx, role)
        return embedder(texts, ctx, role)

    out = []
    for example in examples:
        probes = probes_of(example)
        if probes is None:
            continue
        texts = [f"{p.title}: {p.text}" for p in example.passages]
        ranked = top_paragraphs(probes, texts, embed, k)
        gold = (example.decomposition[0].paragraph, example.decomposition[1].paragraph,
                example.decomposition[1].paragraph)  # fmt: skip
        hits = tuple(g in r for g, r in zip(gold, ranked, strict=True))
        out.append(Probe(example.qid, *probes, hits=hits))  # type: ignore[arg-type]
    return out


def table(probes: Sequence[Probe], dataset: str) -> str:
    """Markdown: our Recall@2 beside the paper's Table 2 (labelled as the paper's; for
    ``long:NAME``, NAME's, which the paper measured at that length)."""
    labels = ["sub-question 1", "sub-question 2 (original)", "sub-question 2 (rewritten)"]
    ours = ["step 1", "step 2, #1 → pronoun phrase", "step 2, #1 → gold answer"]
    paper = PAPER_TABLE2.get(dataset.removeprefix("long:"), {})
    lines = [
        f"| probe ({len(probes)} questions) | Recall@2, measured (%) | paper's Table 2 (%) |",
        "|---|---|---|",
    ]
    for i, (ours_label, label) in enumerate(zip(ours, labels, strict=True)):
        value = 100 * float(np.mean([p.hits[i] for p in probes])) if probes else float("nan")
        reference = f"{paper[label]:.2f} ({label})" if label in paper else "n/a"
        lines.append(f"| {ours_label} | {value:.2f} | {reference} |")
    return "\n".join(lines)


def experiment(
    recipe: Path,
    dataset: str = "musique",
    limit: int | None = None,
    out: Path = Path("runs"),
    progress: Progress | None = None,
) -> SavedProbes:
    """``chainrag experiment lost-in-retrieval``: probe the first ``limit`` questions of
    ``dataset`` with the recipe's ``index.embedder`` (embeddings kept in the cache) and save the
    table and probes in ``OUT/lost-in-retrieval-DATASET-<time>/``."""
    resolved = load_recipe(recipe)
    if resolved.index is None or resolved.index.embedder is None:
        raise LostInRetrievalError(f"{recipe} has no index.embedder")
    examples = load_dataset(dataset, limit)
    if not any(q.decomposition for q in examples):
        raise LostInRetrievalError(f"{dataset} has no gold decompositions (musique has)")
    probes = run(counted(examples, progress), resolved.index.embedder, StageContext(),
                 cache=EmbeddingCache())  # fmt: skip
    text = table(probes, dataset)
    name = dataset.replace(":", "-")  # long:musique → long-musique, a portable folder name
    return save_probes(out / f"lost-in-retrieval-{name}", text, resolved, probes)
