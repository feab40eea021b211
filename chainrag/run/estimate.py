"""A run's cost and time, estimated before it is made: ``chainrag run ... --estimate [N]``.

    estimates = estimate_grid(plan, sample=5)     # an Estimate per planned run
    print(table(estimates))

The estimate executes the run's plan (:mod:`chainrag.run.plan`) beside the run: for each
planned run it chooses the questions to measure and answers a sample where it needs one; the
scaling up and the table are :mod:`chainrag.run.extrapolation`'s. For each recipe x dataset the
figures of some answered questions are scaled up to the run's questions:

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
  by :func:`wall_seconds`, at the run's concurrency; each remote encoder's embedding tokens,
  rerank searches and dollars (:mod:`chainrag.run.encoder_costs`: measured from the records'
  encoder usage, else modelled per question).
* **How sure.** Dollars and wall time carry the 95% interval of their mean per question
  (Student's t over the measured questions, so none from one question): what the rest of the
  run costs if its questions are like the measured ones.
* **Without paying** (``pay=False``, ``--estimate`` without ``--yes``). A paid model
  (:func:`is_paid`) is never called: where its run folder does not hold enough questions, its
  tokens come from a stored run of the recipe but its ``llm:`` on the dataset
  (:mod:`chainrag.run.stored`; a local model's counts converted to the model's tokenizer,
  :func:`converted`), else from a sample the local model answers (:func:`local_recipe`), its
  tokens counted with the model's tokenizer (:mod:`chainrag.llm.tokens`); wall time is then not
  measured. Nor is a paid remote encoder (``pay_encoders=False``): a sample is answered with
  local ones in its place, and its figures are modelled.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import random
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import attrs

from chainrag.core.context import ModelStore
from chainrag.core.errors import ChainragError, Interrupted
from chainrag.core.paths import cache_root
from chainrag.index.build import IndexCache
from chainrag.llm.backend import TokenPrice
from chainrag.llm.tokens import LOCAL_RATIO, ProviderCounted, ProviderTokenizer, provider_tokenizer
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import LLMSpec, Recipe
from chainrag.run.encoder_costs import encoder_estimates, without_paid_encoders
from chainrag.run.extrapolation import Basis as Basis  # re-exported
from chainrag.run.extrapolation import Estimate as Estimate  # re-exported
from chainrag.run.extrapolation import Spread as Spread  # re-exported
from chainrag.run.extrapolation import extrapolate, price_of
from chainrag.run.extrapolation import mean_interval as mean_interval  # re-exported
from chainrag.run.extrapolation import table as table  # re-exported
from chainrag.run.extrapolation import wall_seconds as wall_seconds  # re-exported
from chainrag.run.files import RunError
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.jobs import (
    Progress,
    RunOptions,
    by_llm,
    in_flight,
    open_job_llm,
    open_shared,
    run_into,
)
from chainrag.run.meta import LLMIdentity, RunIdentity
from chainrag.run.plan import Job, PlannedRun, RunPlan
from chainrag.run.question import warm_up
from chainrag.run.record import RunRecord
from chainrag.run.stored import SHIPPED_RUNS, stored_roots, stored_runs

SAMPLE = 5
"""Questions answered for an estimate unless told otherwise."""

SEED = 0
"""The seed of the sample's shuffle."""

Q = TypeVar("Q")
"""A question (a dataset's example, or the record of one answered)."""


class EstimateError(ChainragError):
    """No estimate can be made as asked; the message names the run and says why."""


# --------------------------------------------------------------------------- the questions


def sample_questions(examples: Sequence[Q], n: int) -> list[Q]:
    """``n`` of ``examples`` (all of them if fewer), in dataset order: the first ``n`` of the
    examples shuffled with :data:`SEED`, so that a larger ``n`` keeps a smaller one's."""
    if n < 1:
        raise EstimateError(f"an estimate needs at least 1 question to answer, not {n}")
    order = list(range(len(examples)))
    random.Random(SEED).shuffle(order)  # noqa: S311 - a sample, not cryptography
    return [examples[i] for i in sorted(order[:n])]


def sample_folder(run: PlannedRun, counted_by: str = "") -> Path:
    """Where a sample of ``run`` is answered: ``$CHAINRAG_CACHE/estimates/<run>-<key>``, the
    key a hash of the recipe's digest, the dataset and its file's fingerprint and the corpus
    index (the run's identity), so that a changed recipe or file gets a folder of its own, and
    of ``counted_by``, the tokenizer that counted its tokens where it is not the LLM's own."""
    known = run.identity
    about = [known.recipe_digest, known.dataset, known.dataset_fingerprint]
    if known.index is not None:
        about.append(json.dumps(known.index.key(), sort_keys=True, default=str))
    if counted_by:
        about.append(counted_by)
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
    counted_by: str = "",
) -> tuple[list[RunRecord], Basis]:
    """:func:`sample_questions` of ``run`` answered one at a time with ``llm()`` into
    :func:`sample_folder` (``counted_by``: see there), and their records. What the folder holds
    is kept: when it holds every sampled question, nothing is answered and ``llm`` is not
    called. Before the first is answered, :func:`~chainrag.run.question.warm_up` loads the
    models its index and seeds need (without the LLM), so the first question's seconds carry
    no model loading, which a run pays once, not per question. Ctrl-C or SIGTERM ends it as it
    ends a run."""
    folder = sample_folder(run, counted_by)
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
        options = RunOptions(cache=cache, shared=shared, progress=progress, models=models,
                             identity=run.identity)  # fmt: skip
        session = run_into(run.recipe, run.recipe_path, folder, run.data.name, chosen, llm(),
                           options)  # fmt: skip
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
    pay: bool = True,
    roots: Sequence[Path] = (),
    say: Callable[[str], None] = lambda _: None,
    pay_encoders: bool = True,
) -> Estimate:
    """The estimate of a planned run (see the module docstring): from its folder's answered
    questions, else from ``sample`` questions answered with ``llm()`` (called only then: a
    managed server is not started for nothing). Without ``pay``, a run whose LLM is paid
    (:func:`is_paid`) is estimated by :func:`unpaid_measure`, ``llm()`` being the local
    model (:func:`local_recipe`). Without ``pay_encoders``, a sample is answered with the
    recipe's paid remote encoders replaced (:func:`without_paid_encoders`)."""
    n = min(sample, len(run.data.examples))
    found: tuple[Sequence[RunRecord], Basis] | None = measured_run(run, n)
    scale = 1.0
    if found is None and not pay and is_paid(run.recipe.llm):
        found, scale = unpaid_measure(run, llm, n, roots, cache=cache, progress=progress,
                                      say=say, pay_encoders=pay_encoders)  # fmt: skip
    elif found is None:
        sampled = run if pay_encoders else without_paid_encoders(run, say)
        found = answer_sample(sampled, llm, n, cache=cache, progress=progress)
    records, basis = found
    width, slots = in_flight(run.recipe.llm, run.job.concurrency)
    questions = len(run.data.examples)
    estimate = extrapolate(records, questions, width=width, slots=slots,
                           price=price_of(run.recipe.llm), run=run.label, spec=run.recipe.llm,
                           basis=basis, scale=scale)  # fmt: skip
    encoders = encoder_estimates(run.recipe, records, run.data.examples, questions)
    return attrs.evolve(estimate, encoders=encoders)


# --------------------------------------------------------------------------- without paying


def local_recipe(recipe: Recipe) -> Recipe:
    """``recipe`` answered by the embedded local model (:class:`LLMSpec`'s default), sampled
    as the recipe says (temperature, completion limit, seed)."""
    spec = recipe.llm
    local = attrs.evolve(LLMSpec(), temperature=spec.temperature, max_tokens=spec.max_tokens,
                         seed=spec.seed)  # fmt: skip
    return attrs.evolve(recipe, llm=local)


def converted(answered_by: LLMIdentity, tokenizer: ProviderTokenizer) -> tuple[float, str]:
    """The factor that turns the token counts of a run answered by ``answered_by`` into
    ``tokenizer``'s, and how the counts were made: the model's own counts as they are; a local
    model's (Qwen2.5's tokenizer) at :data:`~chainrag.llm.tokens.LOCAL_RATIO`; any other's as
    they are, said plainly."""
    if answered_by.kind == "litellm" and answered_by.model == tokenizer.model:
        return 1.0, f"counted by {tokenizer.model} when it answered"
    counted = f"counted by {answered_by.model}'s tokenizer"
    ratio = LOCAL_RATIO.get(tokenizer.encoding) if answered_by.kind == "local_gguf" else None
    if ratio is None:
        return 1.0, f"{counted}, not converted to {tokenizer}"
    return ratio, (f"{counted}, converted to {tokenizer} at {ratio:.3f} tokens per token "
                   "(measured by scripts/token_ratio.py)")  # fmt: skip


def unpaid_measure(
    run: PlannedRun,
    local: Callable[[], LLM],
    n: int,
    roots: Sequence[Path],
    *,
    cache: IndexCache | None = None,
    progress: Progress | None = None,
    say: Callable[[str], None] = lambda _: None,
    pay_encoders: bool = True,
) -> tuple[tuple[Sequence[RunRecord], Basis], float]:
    """The measured questions of a paid run, found without a paid call, and the factor that
    turns their tokens into the run's model's: the run folder of the recipe but its ``llm:``
    on the dataset with the most questions, under ``roots`` (:func:`~chainrag.run.stored.
    stored_runs`), converted by :func:`converted`; else ``n`` questions answered by the local
    model ``local()`` into an estimate folder of their own, their prompts and completions
    counted with the run's model's tokenizer (without ``pay_encoders``, its paid remote
    encoders replaced: :func:`without_paid_encoders`); ``say`` is told why, before it is
    answered."""
    tokenizer = provider_tokenizer(run.recipe.llm.model)
    found = stored_runs(run.recipe, run.identity, run.folder.parent.name, roots)
    if found:
        best = found[0]
        scale, counted = converted(best.llm, tokenizer)
        basis = Basis("run", best.folder, len(best.records), left_out=best.left_out,
                      answered_by=best.llm.model, counted=counted)  # fmt: skip
        return (best.records, basis), scale
    recipe = local_recipe(run.recipe)
    say(f"{run.label}: no stored run of this recipe on {run.data.name} under "
        f"{', '.join(map(str, roots)) or 'no folder'}, so the local {recipe.llm.model} answers "
        f"{n} sample question(s) to count their tokens (with --yes, {run.recipe.llm.model} "
        "answers them)")  # fmt: skip
    identity = attrs.evolve(run.identity, recipe_digest=RunIdentity.digest(recipe))
    planned = attrs.evolve(run, recipe=recipe, identity=identity)
    if not pay_encoders:
        planned = without_paid_encoders(planned, say)
    records, basis = answer_sample(planned, lambda: ProviderCounted(local(), tokenizer), n,
                                   cache=cache, progress=progress,
                                   counted_by=tokenizer.encoding)  # fmt: skip
    counted = f"counted by {tokenizer} over the texts of the sample"
    return (records, attrs.evolve(basis, answered_by=recipe.llm.model, counted=counted)), 1.0


def estimate_grid(
    plan: RunPlan,
    sample: int = SAMPLE,
    *,
    pay: bool = True,
    roots: Sequence[Path] | None = None,
    progress: Progress | None = None,
    say: Callable[[str], None] = lambda _: None,
    pay_encoders: bool = True,
) -> list[Estimate]:
    """An estimate per planned run, dataset by dataset, beside the run (the same plan, nothing
    read again); recipes with the same ``llm:`` share one LLM, opened (a managed server
    started) only if a sample needs it. Without ``pay``, a paid LLM is never called: its runs
    are measured on the runs of their recipes under ``roots`` (default:
    :func:`~chainrag.run.stored.stored_roots`: ``--out-dir``, the working folder's
    ``docs/runs``, the package's), else on a sample the local model answers. Without
    ``pay_encoders``, a paid remote encoder is never called either: a sample is answered with
    local ones in its place, and its figures are modelled."""
    plan.check()
    estimates: list[Estimate] = []
    cache = IndexCache()
    for group in plan.groups():
        for members in by_llm(group):
            with contextlib.ExitStack() as stack:
                job = attrs.evolve(members[0].job, cache_mode="bypass")
                spec = members[0].recipe.llm
                if not pay and is_paid(spec):
                    spec = local_recipe(members[0].recipe).llm
                llm = _on_demand(stack, spec, job, say)
                for run in members:
                    found = stored_roots(run.job.out, SHIPPED_RUNS) if roots is None else roots
                    estimates.append(estimate_run(run, llm, sample=sample, cache=cache,
                                                  progress=progress, pay=pay, roots=found,
                                                  say=say, pay_encoders=pay_encoders))  # fmt: skip
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
