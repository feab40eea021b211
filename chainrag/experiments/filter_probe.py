"""Does a knowledge filter keep the evidence and drop the rest? (Shi et al.'s knowledge filter.)

Shi et al. keeps a retrieved item only when its filter judges it entailed; a filter that keeps
nothing leaves the reader without context and its knowledge reservoir empty. This probe gives
the recipe's filter, for each question, each gold supporting paragraph and as many of the
question's other paragraphs (distractors), one at a time, and reports the share kept of each:
a good filter keeps the gold and drops the distractors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.types import KnowledgeItem, QAExample
from chainrag.experiments.judge import distractors, gold_passages
from chainrag.experiments.probes import LLMProbe
from chainrag.experiments.shares import Shares, probe_table
from chainrag.protocols import KnowledgeFilter
from chainrag.protocols.context import Context
from chainrag.protocols.parts import Filtered
from chainrag.recipes.recipe import Recipe

KINDS = ("gold", "distractor")


class FilterProbeError(ChainragError):
    """The recipe cannot run this probe; the message says why."""


@attrs.frozen
class Probe:
    qid: str
    kind: str
    title: str
    words: int
    kept: bool


def filter_of(recipe: Recipe) -> KnowledgeFilter:
    """The knowledge filter of the recipe's method, or a clear error."""
    if not isinstance(recipe.method, Filtered):
        raise FilterProbeError(
            f"recipe {recipe.name!r} has no knowledge filter (method.knowledge_filter); "
            "use a Shi et al. recipe such as recipes/seeds/four_module.yaml"
        )
    return recipe.method.knowledge_filter


def items(example: QAExample) -> list[tuple[str, KnowledgeItem]]:
    """(kind, item) for each gold paragraph and as many distractors (the first non-gold)."""
    gold = gold_passages(example)
    out = []
    for kind, indexes in (("gold", gold), ("distractor", distractors(example, gold))):
        for i in indexes:
            p = example.passages[i]
            out.append((kind, KnowledgeItem(p.text, title=p.title, source=i)))
    return out


def run(
    knowledge_filter: KnowledgeFilter, examples: Iterable[QAExample], ctx: Context
) -> list[Probe]:
    probes = []
    for example in examples:
        for kind, item in items(example):
            kept = bool(knowledge_filter(example.question, (item,), ctx))
            probes.append(Probe(example.qid, kind, item.title, len(item.text.split()), kept))
    return probes


SHARES: Shares[Probe] = Shares(
    group=lambda p: p.kind,
    groups=KINDS,
    means=(("words", lambda p: p.words, ".0f"),),
    hit=lambda p: p.kept,
    header=("paragraphs", "kept %"),
    contrast=("gold", "distractor", "kept", "filter"),
)


def table(probes: Sequence[Probe], dataset: str, filter_name: str) -> str:
    questions = sorted({p.qid for p in probes})
    notes: list[str] = []
    if questions:
        nothing = len(questions) - len({p.qid for p in probes if p.kept})
        notes.append(f"Questions with nothing kept: {nothing} of {len(questions)}.")
    title = f"Knowledge filter {filter_name} on {dataset} ({len(questions)} questions)"
    return probe_table(title, probes, SHARES, notes)


PROBE = LLMProbe("filter", filter_of, run, table)
"""``chainrag experiment filter``: :func:`~chainrag.experiments.probes.run_llm_probe` runs it."""
