"""A run's cost and time, estimated before it is made: ``chainrag run ... --estimate [N]``.

    estimates = estimate_grid(grid, sample=5)     # an Estimate per recipe x dataset
    print(table(estimates))

For each recipe x dataset the figures of some answered questions are scaled up to the run's
questions:

* **Which questions.** The run's own folder, read and never written, when it already holds at
  least N questions of this recipe and dataset answered by real calls (a question answered
  partly from the response cache is left out: a cached answer has no tokens or time to
  measure); otherwise a sample of N of the run's questions (:func:`sample_questions`: the
  questions shuffled with ``random.Random(0)``, the first N taken, so a larger N keeps the
  smaller one's questions) answered one at a time into an estimate folder of their own,
  :func:`sample_folder` — never the run folder, so the run is not half-started, and kept, so
  that asking again answers nothing twice. The sample's calls bypass the response cache: each
  is made and measured, none is written.
* **What is scaled.** LLM calls, prompt and completion tokens per question (means) times the
  run's questions; dollars at litellm's price for the recipe's model (the price map bundled with
  litellm; a model it has no price for is ``unknown price``, a local model costs 0); wall time
  by :func:`wall_seconds`, at the run's concurrency.
* **How sure.** Dollars and wall time carry the 95% interval of their mean per question
  (Student's t over the measured questions, so none from one question): what the rest of the
  run costs if its questions are like the measured ones.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import random
import signal
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import attrs

from chainrag.core.context import ModelStore
from chainrag.core.errors import ChainragError, Interrupted
from chainrag.core.paths import cache_root
from chainrag.core.types import QAExample
from chainrag.index.build import IndexCache
from chainrag.llm.backend import TokenPrice, token_price
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import LLMSpec, Recipe
from chainrag.run.files import RunError
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.jobs import Progress, by_llm, in_flight, open_job_llm, open_shared, run_into
from chainrag.run.plan import Job, PlannedData, PlannedRun, RunPlan, plan_run
from chainrag.run.question import warm_up
from chainrag.run.record import RunRecord

SAMPLE = 5
"""Questions answered for an estimate unless told otherwise."""

SEED = 0
"""The seed of the sample's shuffle."""


class EstimateError(ChainragError):
    """No estimate can be made as asked; the message names the run and says why."""


@attrs.frozen
class Spread:
    """A figure with the low and high ends of its 95% interval (all three equal where there is
    no interval to give)."""

    mean: float
    low: float
    high: float

    def times(self, factor: float) -> Spread:
        return Spread(self.mean * factor, self.low * factor, self.high * factor)


@attrs.frozen
class Basis:
    """Where an estimate's figures come from: a ``sample`` answered into ``folder`` (``failed``
    of its questions failed) or the ``run`` folder's answered questions (``left_out`` of them
    answered partly from the response cache)."""

    kind: Literal["sample", "run"]
    folder: Path
    measured: int
    failed: int = 0
    left_out: int = 0

    def __str__(self) -> str:
        if self.kind == "sample":
            failed = f"; {self.failed} failed, not counted" if self.failed else ""
            return (f"a sample of {self.measured + self.failed} question(s) answered one at a "
                    f"time in {self.folder}{failed}")  # fmt: skip
        left = f"; {self.left_out} answered from the cache left out" if self.left_out else ""
        return f"the {self.measured} question(s) already answered in {self.folder}{left}"


@attrs.frozen
class Estimate:
    """What one recipe over one dataset is expected to take.

    Attributes:
        run: ``<dataset folder>/<recipe name>``, as the run's progress bar names it.
        model: The recipe's LLM.
        pricing: ``local`` (costs 0), ``litellm`` (its price map) or ``unknown``.
        questions: The run's questions.
        width: Questions in flight; ``slots``: LLM requests in flight.
        calls, prompt_tokens, completion_tokens: Expected totals over the run's questions.
        dollars: Expected total in US dollars, None where the price is unknown.
        wall_s: Expected wall time of the run.
        basis: The measured questions the figures are scaled up from.
    """

    run: str
    model: str
    pricing: Literal["local", "litellm", "unknown"]
    questions: int
    width: int
    slots: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    dollars: Spread | None
    wall_s: Spread
    basis: Basis


# --------------------------------------------------------------------------- the arithmetic


def mean_interval(values: Sequence[float]) -> Spread:
    """The mean of ``values`` with its 95% interval (Student's t; the low end is at least 0,
    as every figure here is). One value has no interval: its three ends are the value."""
    if not values:
        raise ValueError("mean_interval of no values")
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return Spread(mean, mean, mean)
    from scipy import stats

    t = float(stats.t.ppf(0.975, len(values) - 1))
    half = t * statistics.stdev(values) / math.sqrt(len(values))
    return Spread(mean, max(0.0, mean - half), mean + half)


def wall_seconds(
    seconds: Spread, llm_seconds: Spread, questions: int, width: int, slots: int
) -> Spread:
    """The wall time of ``questions`` questions, ``width`` at a time with at most ``slots`` LLM
    requests in flight, from the seconds a question takes and the LLM seconds it spends:
    ``questions x max(seconds / width, llm_seconds / slots)``. The second term is the managed
    local server (1 slot), which answers one request at a time whatever the width."""

    def wall(question_s: float, llm_s: float) -> float:
        return questions * max(question_s / width, llm_s / slots)

    return Spread(
        wall(seconds.mean, llm_seconds.mean),
        wall(seconds.low, llm_seconds.low),
        wall(seconds.high, llm_seconds.high),
    )


def extrapolate(
    records: Sequence[RunRecord],
    questions: int,
    *,
    width: int,
    slots: int,
    price: TokenPrice | None,
    run: str,
    spec: LLMSpec,
    basis: Basis,
) -> Estimate:
    """The measured ``records`` scaled up to ``questions`` questions (see the module docstring);
    ``price`` None is a model litellm has no price for."""
    if not records:
        raise ValueError("extrapolate needs at least one measured question")
    calls = [r.usage.calls + r.usage.cache_hits for r in records]
    prompt = [r.usage.prompt_tokens for r in records]
    completion = [r.usage.completion_tokens for r in records]
    dollars = None
    if price is not None:
        spent = [price.dollars(p, c) for p, c in zip(prompt, completion, strict=True)]
        dollars = mean_interval(spent).times(questions)
    seconds = mean_interval([r.seconds for r in records])
    llm_seconds = mean_interval([r.usage.latency_s for r in records])
    local = spec.kind == "local_gguf"
    return Estimate(
        run=run,
        model=spec.model,
        pricing="local" if local else ("litellm" if price is not None else "unknown"),
        questions=questions,
        width=width,
        slots=slots,
        calls=questions * statistics.fmean(calls),
        prompt_tokens=questions * statistics.fmean(prompt),
        completion_tokens=questions * statistics.fmean(completion),
        dollars=dollars,
        wall_s=wall_seconds(seconds, llm_seconds, questions, width, slots),
        basis=basis,
    )


def price_of(spec: LLMSpec) -> TokenPrice | None:
    """The price of the recipe's LLM: 0 for a local model, else litellm's (None: unknown)."""
    return TokenPrice(0.0, 0.0) if spec.kind == "local_gguf" else token_price(spec.model)


# --------------------------------------------------------------------------- the questions


def sample_questions(examples: Sequence[QAExample], n: int) -> list[QAExample]:
    """``n`` of ``examples`` (all of them if fewer), in dataset order: the first ``n`` of the
    examples shuffled with :data:`SEED`, so that a larger ``n`` keeps a smaller one's."""
    if n < 1:
        raise EstimateError(f"an estimate needs at least 1 question to answer, not {n}")
    order = list(range(len(examples)))
    random.Random(SEED).shuffle(order)  # noqa: S311 - a sample, not cryptography
    return [examples[i] for i in sorted(order[:n])]


def sample_folder(run: PlannedRun) -> Path:
    """Where a sample of ``run`` is answered: ``$CHAINRAG_CACHE/estimates/<run>-<key>``, the
    key a hash of the recipe's digest, the dataset and its file's fingerprint and the corpus
    index (the run's identity), so that a changed recipe or file gets a folder of its own."""
    known = run.identity
    about = [known.recipe_digest, known.dataset, known.dataset_fingerprint]
    if known.index is not None:
        about.append(json.dumps(known.index.key(), sort_keys=True, default=str))
    key = hashlib.sha256("\n".join(about).encode("utf-8")).hexdigest()[:12]
    return cache_root() / "estimates" / f"{run.label}-{key}"


def measured_run(run: PlannedRun, at_least: int) -> tuple[list[RunRecord], Basis] | None:
    """The questions of ``run``'s folder answered by real calls only, if there are at least
    ``at_least``; None otherwise, or if there is no run there. A folder the plan refused (of
    another recipe or dataset file) is a RunError, as the run itself would be. Reads, never
    writes."""
    if run.state.kind == "refused":
        raise RunError(run.state.reason)
    if not (run.folder / RUN_FILE).is_file():
        return None
    records, _ = RunDir(run.folder).records()
    measured = [r for r in records if r.usage.cache_hits == 0]
    if len(measured) < max(1, at_least):
        return None
    return measured, Basis("run", run.folder, len(measured), left_out=len(records) - len(measured))


def answer_sample(
    run: PlannedRun,
    llm: Callable[[], LLM],
    n: int,
    *,
    cache: IndexCache | None = None,
    progress: Progress | None = None,
) -> tuple[list[RunRecord], Basis]:
    """:func:`sample_questions` of ``run`` answered one at a time with ``llm()`` into
    :func:`sample_folder`, and their records. What the folder holds is kept: when it holds
    every sampled question, nothing is answered and ``llm`` is not called. Before the first
    is answered, :func:`~chainrag.run.question.warm_up` loads the models its index and seeds
    need (without the LLM), so the first question's seconds carry no model loading, which a
    run pays once, not per question. Ctrl-C or SIGTERM ends it as it ends a run."""
    folder = sample_folder(run)
    chosen = sample_questions(run.data.examples, n)
    wanted = {e.qid for e in chosen}

    def answered() -> list[RunRecord]:
        if not (folder / RUN_FILE).is_file():
            return []
        return [r for r in RunDir(folder).records()[0] if r.id in wanted]

    done = {r.id for r in answered()}
    if len(done) < len(chosen):
        shared = open_shared(run.recipe, run.job.index) if run.job.index else None
        models = ModelStore()
        warm_up(run.recipe, next(e for e in chosen if e.qid not in done), models, shared)
        session = run_into(run.recipe, run.recipe_path, folder, run.data.name, chosen, llm(),
                           width=1, slots=1, cache=cache, shared=shared, progress=progress,
                           models=models, identity=run.identity)  # fmt: skip
        if session.interrupted:
            raise Interrupted(signal.Signals[session.interrupted])
        if session.stopped is not None:  # the managed server died twice
            raise session.stopped
    records = answered()
    if not records:
        raise EstimateError(
            f"{run.label}: none of the {len(chosen)} sampled question(s) was answered, so there "
            f"is nothing to scale up (see {folder / 'errors.jsonl'})"
        )
    return records, Basis("sample", folder, len(records), failed=len(chosen) - len(records))


# --------------------------------------------------------------------------- runs


def estimate_run(
    run: PlannedRun,
    llm: Callable[[], LLM],
    *,
    sample: int = SAMPLE,
    cache: IndexCache | None = None,
    progress: Progress | None = None,
) -> Estimate:
    """The estimate of a planned run (see the module docstring): from its folder's answered
    questions, else from ``sample`` questions answered with ``llm()`` (called only then: a
    managed server is not started for nothing)."""
    n = min(sample, len(run.data.examples))
    found = measured_run(run, n)
    if found is None:
        found = answer_sample(run, llm, n, cache=cache, progress=progress)
    records, basis = found
    width, slots = in_flight(run.recipe.llm, run.job.concurrency)
    return extrapolate(records, len(run.data.examples), width=width, slots=slots,
                       price=price_of(run.recipe.llm), run=run.label, spec=run.recipe.llm,
                       basis=basis)  # fmt: skip


def estimate_recipe(
    recipe: Recipe,
    recipe_path: Path,
    job: Job,
    examples: Sequence[QAExample],
    llm: Callable[[], LLM],
    *,
    sample: int = SAMPLE,
    cache: IndexCache | None = None,
    progress: Progress | None = None,
) -> Estimate:
    """The estimate of ``recipe`` over ``job.dataset``'s ``examples``, planned here
    (:func:`~chainrag.run.plan.plan_run`) and estimated by :func:`estimate_run`."""
    planned = plan_run(job, recipe, PlannedData.read(job.dataset, examples))
    return estimate_run(attrs.evolve(planned, recipe_path=recipe_path), llm, sample=sample,
                        cache=cache, progress=progress)  # fmt: skip


def estimate_grid(
    plan: RunPlan,
    sample: int = SAMPLE,
    *,
    progress: Progress | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> list[Estimate]:
    """An estimate per planned run, dataset by dataset, beside the run (the same plan, nothing
    read again); recipes with the same ``llm:`` share one LLM, opened (a managed server
    started) only if a sample needs it."""
    plan.check()
    estimates: list[Estimate] = []
    cache = IndexCache()
    for group in plan.groups():
        for members in by_llm(group):
            with contextlib.ExitStack() as stack:
                job = attrs.evolve(members[0].job, cache_mode="bypass")
                llm = _on_demand(stack, members[0].recipe.llm, job, say)
                for run in members:
                    estimates.append(estimate_run(run, llm, sample=sample, cache=cache,
                                                  progress=progress))  # fmt: skip
    return estimates


def _on_demand(
    stack: contextlib.ExitStack, spec: LLMSpec, job: Job, say: Callable[[str], None]
) -> Callable[[], LLM]:
    """The LLM of ``spec``, opened on the first call and closed with ``stack``."""

    @functools.cache
    def opened() -> LLM:
        llm, _, _ = stack.enter_context(open_job_llm(spec, job, say))
        return llm

    return opened


# --------------------------------------------------------------------------- the table


def table(estimates: Sequence[Estimate]) -> str:
    """The estimates as a markdown table, each followed below by what it was scaled up from."""
    lines = [
        "| run | model | questions | LLM calls | prompt tokens | completion tokens | $ "
        "(95% interval) | wall time (95% interval) | concurrency |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for e in estimates:
        flight = f"{e.width}" + (f" (LLM: {e.slots})" if e.slots != e.width else "")
        lines.append(
            f"| {e.run} | {e.model} | {e.questions:,} | {_amount(e.calls)} | "
            f"{_amount(e.prompt_tokens)} | {_amount(e.completion_tokens)} | {_dollars(e)} | "
            f"{_range(e.wall_s, _duration)} | {flight} |"
        )
    lines.append("")
    lines += [f"- {e.run}: estimated from {e.basis}" for e in estimates]
    lines.append(
        "- Wall time: questions x max(seconds a question took / questions in flight, its LLM "
        "seconds / LLM requests in flight); figures assume no answer comes from the cache."
    )
    return "\n".join(lines)


def _amount(x: float) -> str:
    """``2,417``, ``48.3k``, ``1.21M``."""
    if x >= 1e6:
        return f"{x / 1e6:.3g}M"
    if x >= 1e5:
        return f"{x / 1e3:.3g}k"
    return f"{x:,.0f}"


def _money(x: float) -> str:
    """``$1,234.56``; below a dollar three significant digits, never an exponent."""
    if x >= 1 or x <= 0:
        return f"${x:,.2f}" if x else "$0"
    return f"${x:.{2 - math.floor(math.log10(x))}f}"


def _dollars(e: Estimate) -> str:
    if e.dollars is None:
        return "unknown price"
    if e.pricing == "local":
        return "$0 (local)"
    return _range(e.dollars, _money)


def _duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``3.4 h``, ``2.1 d``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _range(spread: Spread, show: Callable[[float], str]) -> str:
    if spread.low == spread.high:
        return show(spread.mean)
    return f"{show(spread.mean)} ({show(spread.low)}–{show(spread.high)})"


# --------------------------------------------------------------------------- paid samples


@attrs.frozen
class PaidSample:
    """A sample the estimate would answer with a paid API: the run, how many questions are
    still to answer, the model and its price (None: litellm has none)."""

    run: str
    questions: int
    model: str
    price: TokenPrice | None

    def line(self) -> str:
        if self.price is None:
            cost = "at a price litellm's map does not have"
        else:
            cost = (f"at ${self.price.prompt * 1e6:.2f} / ${self.price.completion * 1e6:.2f} "
                    "per million prompt / completion tokens")  # fmt: skip
        return (f"{self.run}: would answer {self.questions} sample question(s) with "
                f"{self.model}, {cost}")  # fmt: skip


def is_paid(spec: LLMSpec) -> bool:
    """Whether ``spec``'s calls may cost money: a provider's model (no ``api_base`` of one's
    own) whose price is unknown or above 0."""
    if spec.kind == "local_gguf" or spec.api_base is not None:
        return False
    price = price_of(spec)
    return price is None or price.prompt > 0 or price.completion > 0


def paid_samples(plan: RunPlan, sample: int = SAMPLE) -> list[PaidSample]:
    """The samples :func:`estimate_grid` would answer with a paid API, read from the run and
    sample folders without a call."""
    found = []
    for run in plan.runs:
        if not is_paid(run.recipe.llm):
            continue
        n = min(sample, len(run.data.examples))
        if measured_run(run, n) is not None:
            continue
        folder = sample_folder(run)
        wanted = {e.qid for e in sample_questions(run.data.examples, n)}
        left = n
        if (folder / RUN_FILE).is_file():
            left -= len({r.id for r in RunDir(folder).records()[0]} & wanted)
        if left > 0:
            spec = run.recipe.llm
            found.append(PaidSample(run.label, left, spec.model, price_of(spec)))
    return found
