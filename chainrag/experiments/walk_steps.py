"""Does the walk go on where it must? ChainRAG's walk over MuSiQue's gold steps, without an
LLM (issue 49; ``chainrag experiment walk-steps``).

For each step of a question's gold decomposition, the sub-question is written as
``judge-steps`` writes it (``#k`` as step k's gold answer; a Wikidata-form step read as a
question), and the recipe's retrieval runs on it over the question's own index, as in a run:
seeds, then the expander with the recipe's sufficiency judge. Each walk is then one of:

* **gold at the seeds**: a seed sentence belongs to the step's gold paragraph;
* **gold not at the seeds**: none does, so a walk that stops after its first hop holds the
  gold paragraph only if that hop reached it.

For each kind the table counts the walks past the first hop (``hops >= 2``: the judge said no
after the first expansion and the walk went on), the walks whose units hold the gold paragraph
at the end, and the words read; and the walks the word budget cut. Issue 49 asks that at least
a third of the walks without their gold at the seeds go past the first hop, and a judge that
sends every walk on is no better than none: the first kind says what going on costs where it
was not needed. The first hop often reaches the gold even without it at the seeds, so a second
table splits those walks by whether the walk stopped at its first check (the recipe's expander
with ``judge: none``, walked too) holds it: going on is needed only where it does not.

Unlike ``chainrag walks --gold``, which reads a run's traces, the sub-questions here are the
gold ones (decomposition and rewriting right), so this measures the walk and its judge alone,
and a step's own gold paragraph is known. It asks no LLM: a recipe whose judge asks one (the
paper's) is refused, as are recipes without an expander; those walks are measured in runs.

Layer: experiments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

import attrs

from chainrag.context import StageContext
from chainrag.core.context import MissingResourceError, ModelStore
from chainrag.core.types import Expansion, QAExample
from chainrag.experiments.judge import JudgeProbeError
from chainrag.experiments.judge_steps import sub_question, with_decompositions
from chainrag.experiments.probes import Progress, SavedProbes, counted, save_probes
from chainrag.index.build import IndexCache
from chainrag.protocols.parts import Judged
from chainrag.protocols.retrieval import Expander
from chainrag.protocols.units import Graph, Sentenced
from chainrag.recipes.recipe import Recipe, RetrievalSpec


@attrs.frozen
class StepWalk:
    """One gold step's walk: where its gold paragraph was, how far the walk went, what it read.

    ``scores``: each sufficiency check's score (the similarity judge's best cosine), in order.
    """

    recipe: str
    """The recipe's name, or the label the experiment gave it (``NAME[PATH=VALUE]``)."""
    qid: str
    step: int
    sub_question: str
    gold_at_seeds: bool
    hops: int
    reached: bool
    words: int
    budget_cut: bool | None
    scores: tuple[float | None, ...]
    first_check_reached: bool
    """Whether the walk would hold the gold paragraph had its judge said yes at the first
    check (the recipe's expander with ``judge: {kind: none}``): for a walk that went on, whether
    going on was needed."""

    @property
    def on(self) -> bool:
        """Whether the walk went past its first hop."""
        return self.hops >= 2


def walkable(recipe: Recipe) -> tuple[RetrievalSpec, Expander]:
    """``recipe``'s retrieval and its expander (the walk to measure); a clear error where it
    has none."""
    if recipe.retrieval is None or recipe.retrieval.expander is None:
        raise JudgeProbeError(
            f"recipe {recipe.name!r} has no expander (retrieval.expander): there is no walk to "
            "measure; use a ChainRAG recipe such as recipes/variants/similarity_judge.yaml"
        )
    return recipe.retrieval, recipe.retrieval.expander


def passages_of(units: Iterable[int], index: Sentenced) -> set[int]:
    """The passages the sentence units ``units`` of ``index`` belong to."""
    sentences = index.sentences
    return {sentences[u].passage for u in units}


class SentenceGraph(Graph, Sentenced, Protocol):
    """An index the walk can read: a sentence graph."""


def sentence_graph(
    recipe: Recipe, example: QAExample, models: ModelStore, cache: IndexCache | None
) -> SentenceGraph:
    """``example``'s index by ``recipe`` (see :func:`walk`); a JudgeProbeError naming the
    recipe when it is not a sentence graph."""
    from chainrag.run.question import searchable_index

    index = searchable_index(recipe, example, models, cache)
    if not isinstance(index, Sentenced) or not isinstance(index, Graph):
        raise JudgeProbeError(
            f"recipe {recipe.name!r} indexes {type(index).__name__}, not sentences; the walk "
            "needs a sentence graph (index.splitter)"
        )
    return index


def walk(
    recipe: Recipe, example: QAExample, models: ModelStore, cache: IndexCache | None = None
) -> list[StepWalk]:
    """The walks of ``example``'s gold steps that name a supporting paragraph, over its index
    from ``cache`` (built there when missing; built and dropped when None)."""
    index = sentence_graph(recipe, example, models, cache)
    retrieval, expander = walkable(recipe)
    first_check = _stopping_at_first_check(expander)
    ctx = StageContext(models=models, index=index, retrieval=retrieval)
    retriever = ctx.retriever()
    stopping = (
        None
        if first_check is None
        else attrs.evolve(retriever, spec=attrs.evolve(retrieval, expander=first_check))
    )
    found = []
    for i, step in enumerate(example.decomposition):
        if step.paragraph is None:
            continue
        query = sub_question(example.decomposition, i)
        seeds = retriever.spec.seed(query, index, ctx)  # once for both walks
        try:
            expansion: Expansion = retriever.expand(query, seeds, ctx)
        except MissingResourceError as exc:
            raise JudgeProbeError(
                f"recipe {recipe.name!r}: its walk asks an LLM ({exc}); this experiment walks "
                "without one: give the recipe a judge that needs none (retrieval.expander.judge:"
                " {kind: similarity, threshold: T} or {kind: none})"
            ) from None
        stopped = expansion if stopping is None else stopping.expand(query, seeds, ctx)
        found.append(
            StepWalk(
                recipe=recipe.name,
                qid=example.qid,
                step=i + 1,
                sub_question=query,
                gold_at_seeds=step.paragraph in passages_of(expansion.seeds, index),
                hops=expansion.hops,
                reached=step.paragraph in passages_of(expansion.units, index),
                words=expansion.words,
                budget_cut=expansion.budget_cut,
                scores=tuple(v.score for v in expansion.verdicts),
                first_check_reached=step.paragraph in passages_of(stopped.units, index),
            )
        )
    return found


def _stopping_at_first_check(expander: Expander) -> Expander | None:
    """``expander`` judged by ``none`` (the walk as it is when its judge says yes at the first
    check), or None where the judge is already ``none`` or it has no judge to replace."""
    from chainrag.components.retrieval.judges import NoCheck

    if not isinstance(expander, Judged) or isinstance(expander.judge, NoCheck):
        return None
    never_asks: Expander = attrs.evolve(expander, judge=NoCheck())  # type: ignore[misc]
    return never_asks


def _share(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.0f}%)" if whole else "–"


def _on(walks: Sequence[StepWalk]) -> str:
    return _share(sum(w.on for w in walks), len(walks))


def _reached(walks: Sequence[StepWalk]) -> str:
    return _share(sum(w.reached for w in walks), len(walks))


def _split(
    walks: Sequence[StepWalk], keep: Callable[[StepWalk], bool]
) -> tuple[list[StepWalk], list[StepWalk]]:
    """``walks`` that ``keep`` holds for, and the others."""
    return [w for w in walks if keep(w)], [w for w in walks if not keep(w)]


def _mean_words(walks: Sequence[StepWalk]) -> str:
    return f"{sum(w.words for w in walks) / len(walks):,.0f}" if walks else "–"


def table(
    walks: Sequence[StepWalk], recipes: Sequence[str], dataset: str, changes: Sequence[str] = ()
) -> str:
    """One markdown row per recipe: its walks by where the step's gold paragraph was;
    ``changes``: the ``--set`` every recipe was walked with."""
    changed = f" Every recipe with {', '.join(f'--set {c}' for c in changes)}." if changes else ""
    lines = [
        f"ChainRAG's walk on the gold steps of {dataset} (sub-questions with #k as step k's "
        "gold answer; no LLM). Past hop 1: the judge said no after the first expansion." + changed,
        "",
        "| recipe | walks | gold at seeds | past hop 1 | reached | words | gold not at seeds "
        "| past hop 1 | reached | words | budget cut |",
        "|---" * 11 + "|",
    ]
    for name in recipes:
        own = [w for w in walks if w.recipe == name]
        at, off = _split(own, lambda w: w.gold_at_seeds)
        lines.append(
            f"| {name} | {len(own)} | {len(at)} | {_on(at)} | {_reached(at)} "
            f"| {_mean_words(at)} | {len(off)} | {_on(off)} | {_reached(off)} "
            f"| {_mean_words(off)} | {_share(sum(bool(w.budget_cut) for w in own), len(own))} |"
        )
    return "\n".join(lines + _needed(walks, recipes))


def _needed(walks: Sequence[StepWalk], recipes: Sequence[str]) -> list[str]:
    """The walks without their gold at the seeds, split by whether stopping at the first check
    would have reached it: does the judge go on where it is needed more than where it is not?"""
    lines = [
        "",
        "The walks without their gold at the seeds, by whether the walk stopped at its first "
        "check (the judge saying yes) would hold it: going on is needed only where it would not.",
        "",
        "| recipe | first check holds gold | past hop 1 | first check misses gold | past hop 1 "
        "| reached |",
        "|---" * 6 + "|",
    ]
    for name in recipes:
        off = [w for w in walks if w.recipe == name and not w.gold_at_seeds]
        held, missed = _split(off, lambda w: w.first_check_reached)
        lines.append(
            f"| {name} | {len(held)} | {_on(held)} | {len(missed)} | {_on(missed)} "
            f"| {_reached(missed)} |"
        )
    return lines


def experiment(
    recipes: Sequence[tuple[str, Recipe]],
    dataset: str,
    limit: int,
    out: Path,
    progress: Progress | None = None,
    changes: Sequence[str] = (),
) -> SavedProbes:
    """Walk the gold steps of ``dataset``'s first ``limit`` questions with each recipe (a
    label for the table, and the recipe) and save the table and one line per walk in ``out``
    (``walk-steps-DATASET-<time>``; the first recipe is saved as ``recipe.yaml``). Every recipe's
    expander is checked before any walk (a judge that asks an LLM is found at its recipe's
    first walk); the indexes come from the index cache that runs use (built
    into it where missing). ``changes``: the ``--set`` the recipes were given, for the table."""
    from chainrag.data.datasets import dataset_slug, load_dataset

    if not recipes:
        raise JudgeProbeError("walk-steps needs at least one recipe")
    for _, recipe in recipes:
        walkable(recipe)
    labels = [label for label, _ in recipes]
    if len(set(labels)) != len(labels):
        raise JudgeProbeError(f"recipes given twice: {', '.join(labels)}")
    examples = with_decompositions(load_dataset(dataset, limit), dataset)
    models, cache = ModelStore(), IndexCache()
    walks: list[StepWalk] = []
    for label, recipe in recipes:
        for example in counted(examples, progress, f"walking {label}"):
            walks.extend(
                attrs.evolve(w, recipe=label) for w in walk(recipe, example, models, cache)
            )
    text = table(walks, labels, dataset, changes)
    return save_probes(out / f"walk-steps-{dataset_slug(dataset)}", text, recipes[0][1], walks)
