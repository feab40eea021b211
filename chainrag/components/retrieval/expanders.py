"""Graph expansion from the seeds (ChainRAG §3.2, step 2), under a word budget.

``iterative_hops`` is the paper's: take all 1-hop neighbours of the seeds at once, ask the
sufficiency judge, and while it says no, take the next hop — stopping when the judge says yes,
at ``max_hops``, when nothing new is reachable, or when the next sentence would pass the word
budget (3000 words), which is never exceeded. With ``judge_seeds: true`` (not the paper's) the
judge first reads the seeds alone, and a "yes" there ends the walk before its first hop.
``one_step_rerank`` is the authors' code: judge the seeds; if they do not suffice, rerank the
1-hop neighbours of the top 3 seeds and append the best 5 — one step, no budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from chainrag.components.retrieval.judges import LLMYesNo
from chainrag.components.retrieval.rerankers import NoRerank
from chainrag.core.budget import fit, words
from chainrag.core.types import Expansion, Hit, Verdict
from chainrag.protocols.context import Context
from chainrag.protocols.retrieval import Reranker, SufficiencyJudge
from chainrag.protocols.units import Graph
from chainrag.recipes.registry import EXPANDERS

if TYPE_CHECKING:
    from chainrag.recipes.recipe import Recipe


def take_within(
    units: Iterable[int],
    gathered: list[int],
    total: int,
    length: Callable[[int], int],
    word_budget: int,
) -> tuple[int, bool]:
    """Append ``units`` to ``gathered`` in order while they fit ``word_budget`` words (``total``
    gathered so far); the new total, and whether a unit did not fit (:func:`fit`)."""
    kept, total, cut = fit(units, length, word_budget, total)
    gathered.extend(kept)
    return total, cut


def expand_hops(
    seeds: Sequence[int],
    neighbours: Callable[[Sequence[int]], Sequence[int]],
    length: Callable[[int], int],
    judge: Callable[[Sequence[int]], Verdict],
    *,
    word_budget: int,
    max_hops: int,
    judge_seeds: bool = False,
) -> Expansion:
    """Breadth-first expansion with a judge after every hop and a hard word budget.

    Args:
        seeds: Seed units, best first.
        neighbours: Units one hop from the given ones (not including them), in the order to add.
        length: Words of a unit.
        judge: Whether the gathered units suffice.
        word_budget: Most words gathered; a unit that would pass it stops the expansion.
        max_hops: Most expansion steps (0: the seeds only, no judge).
        judge_seeds: Judge the seeds before the first hop, and stop there on a "yes".
    """
    unique = tuple(dict.fromkeys(seeds))
    gathered: list[int] = []
    total, full = take_within(unique, gathered, 0, length, word_budget)
    verdicts: list[Verdict] = []
    if judge_seeds and max_hops > 0 and gathered:
        verdicts.append(judge(gathered))
    hops = 0
    while hops < max_hops and not full and not (verdicts and verdicts[-1].ok):
        have = set(gathered)
        frontier = [u for u in neighbours(gathered) if u not in have]
        if not frontier:
            break
        hops += 1
        total, full = take_within(frontier, gathered, total, length, word_budget)
        if not full:  # a hop the budget cut is not judged: the walk ends with it
            verdicts.append(judge(gathered))
    return Expansion(tuple(gathered), unique, hops, tuple(verdicts), total, budget_cut=full)


def needs_a_graph(kind: str, recipe: Recipe) -> None:
    """Refuse an expander over chunks: it walks a sentence graph's edges, and chunks have
    none (it used to be skipped without a word)."""
    if recipe.index is not None and recipe.index.chunker is not None:
        raise ValueError(
            f"{kind} walks the sentence graph's edges, but this recipe's index is chunks "
            "(index.chunker), which have none: remove retrieval.expander, or index sentences "
            "(index.splitter and index.edges)"
        )


@EXPANDERS.register("iterative_hops", example={"max_hops": 0})
@attrs.frozen
class IterativeHops:
    """The paper's expansion: hop by hop, a sufficiency check after each, a word budget.

    Recipe: ``{kind: iterative_hops, word_budget: 3000, max_hops: 3, judge: {kind: llm_yes_no}}``;
    ``judge_seeds: true`` asks the judge about the seeds alone first (not the paper's).
    """

    judge: SufficiencyJudge = attrs.field(factory=LLMYesNo)
    word_budget: int = attrs.field(default=3000, validator=attrs.validators.ge(1))
    max_hops: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    judge_seeds: bool = False

    def check_recipe(self, recipe: Recipe) -> None:
        needs_a_graph("iterative_hops", recipe)

    def __call__(
        self, question: str, seeds: Sequence[Hit], graph: Graph, ctx: Context
    ) -> Expansion:
        texts = graph.texts
        return expand_hops(
            [h.index for h in seeds],
            graph.neighbours,
            lambda u: words(texts[u]),
            lambda units: self.judge(question, [texts[u] for u in units], ctx),
            word_budget=self.word_budget,
            max_hops=self.max_hops,
            judge_seeds=self.judge_seeds,
        )


@EXPANDERS.register("one_step_rerank")
@attrs.frozen
class OneStepRerank:
    """The authors' code: if the seeds do not suffice, add the best ``add`` reranked 1-hop
    neighbours of the top ``from_seeds`` seeds. One step, no word budget.

    ``dedupe: false`` also keeps neighbours that are seeds already, as that code does.
    Recipe: ``{kind: one_step_rerank, from_seeds: 3, add: 5, reranker: {kind: none}}``.
    """

    judge: SufficiencyJudge = attrs.field(factory=LLMYesNo)
    reranker: Reranker = attrs.field(factory=NoRerank)
    from_seeds: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    add: int = attrs.field(default=5, validator=attrs.validators.ge(0))
    dedupe: bool = True

    def check_recipe(self, recipe: Recipe) -> None:
        needs_a_graph("one_step_rerank", recipe)

    def __call__(
        self, question: str, seeds: Sequence[Hit], graph: Graph, ctx: Context
    ) -> Expansion:
        texts = graph.texts
        units = [h.index for h in seeds]
        verdict = self.judge(question, [texts[u] for u in units], ctx)
        if verdict.ok or not units:
            total = sum(words(texts[u]) for u in units)
            return Expansion(tuple(units), tuple(units), 0, (verdict,), total)
        found = graph.neighbours(units[: self.from_seeds])  # may include the other seeds
        candidates = [u for u in found if not self.dedupe or u not in units]
        hits = [Hit(u, 0.0) for u in candidates]
        best = self.reranker(question, hits, [texts[u] for u in candidates], ctx)[: self.add]
        gathered = units + [h.index for h in best]
        if self.dedupe:
            gathered = list(dict.fromkeys(gathered))
        return Expansion(
            tuple(gathered), tuple(units), 1, (verdict,), sum(words(texts[u]) for u in gathered)
        )
