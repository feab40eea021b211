"""A plan's LLMs checked before its first question (:mod:`chainrag.llm.preflight`).

    check_plan(plan)            # raises LLMUnavailableError: a missing key, a refused endpoint
    for line in plan_warnings(plan): print(line)   # --dry-run, --estimate: no call

Where a run will certainly make a live request — it has questions left and the response cache
holds no answer of its endpoint, or the cache is bypassed — :func:`check_plan` checks the model,
its credentials and its endpoint (one one-token request) before anything runs, and a failure
records nothing. Where the cache holds answers of the endpoint (its identity,
:func:`chainrag.llm.endpoint_identity`: the model and where it is served, not the model's name
alone, which another server may answer to), a run may need no live request at all (a replay
needs neither key nor network), so the same checks wait for the first live request
(:class:`~chainrag.llm.preflight.CheckedLLM`), and stop the run there just as well. Each remote
encoder of the recipes (a ``litellm`` embedder or reranker) is checked by the same rule, one
smallest request, unless the store holds values computed at its endpoint.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

from chainrag.core.errors import LLMUnavailableError
from chainrag.core.parts import parts
from chainrag.core.paths import llm_cache_path
from chainrag.llm import check_llm, endpoint_identity, managed_prompt_cache
from chainrag.llm.cache import ResponseCache
from chainrag.llm.preflight import credentials_problem, model_problem
from chainrag.protocols.parts import RemoteEncoder
from chainrag.recipes.recipe import LLMSpec
from chainrag.run.plan import PlannedRun, RunPlan


def _specs(runs: tuple[PlannedRun, ...]) -> dict[LLMSpec, PlannedRun]:
    """Each distinct ``llm:`` of ``runs`` with its first run."""
    found: dict[LLMSpec, PlannedRun] = {}
    for run in runs:
        found.setdefault(run.recipe.llm, run)
    return found


def live_certain(spec: LLMSpec, cache_mode: str) -> bool:
    """Whether a run of ``spec`` with questions left will make a live request for sure: the
    cache is bypassed or refreshed, or it holds no answer of the endpoint's identity."""
    if cache_mode != "use":
        return True
    path = llm_cache_path()
    if not path.is_file():
        return True
    cache = ResponseCache(path)
    try:
        return not cache.holds_endpoint(endpoint_identity(spec))
    finally:
        cache.close()


def check_plan(plan: RunPlan) -> frozenset[LLMSpec]:
    """Check every LLM of the runs with questions left whose first question will make a live
    request (:func:`live_certain`), and every remote encoder whose values the store lacks, all
    at once (each check waits on its endpoint: in turn, a run's start waited for the sum); raise
    the first :class:`~chainrag.core.errors.LLMUnavailableError` in that order, else return the
    LLMs checked (the run does not check them again)."""
    left = tuple(r for r in plan.runs if r.state.kind in ("new", "resumes"))
    checked = [
        spec
        for spec, run in _specs(left).items()
        if managed_prompt_cache(spec) is None and live_certain(spec, run.job.cache_mode)
    ]
    checks = [functools.partial(check_llm, spec, call=True) for spec in checked]
    checks += [
        functools.partial(encoder.check_endpoint, call=True)
        for encoder in remote_encoders(left).values()
        if not encoder.stored_before()
    ]
    with ThreadPoolExecutor(max(1, len(checks)), thread_name_prefix="check") as pool:
        futures = [pool.submit(check) for check in checks]
    for future in futures:
        future.result()
    return frozenset(checked)


def remote_encoders(runs: tuple[PlannedRun, ...]) -> dict[str, RemoteEncoder]:
    """Each distinct remote encoder (embedder, reranker) of ``runs``' recipes, by its endpoint
    identity: checked as the LLM is, by the same rule, unless the store holds its values."""
    found: dict[str, RemoteEncoder] = {}
    for run in runs:
        for _, part in parts(run.recipe):
            if isinstance(part, RemoteEncoder):
                found.setdefault(part.identity(), part)
    return found


def plan_warnings(plan: RunPlan) -> list[str]:
    """What the environment lacks for the plan's LLMs (a key by name, a model litellm cannot
    route), as ``warning:`` lines; no call."""
    lines = []
    for spec in _specs(plan.runs):
        for problem in (model_problem(spec), credentials_problem(spec)):
            if problem is not None:
                lines.append(f"warning: {problem}; the run would stop before its first live "
                             "request")  # fmt: skip
    for encoder in remote_encoders(plan.runs).values():
        try:
            encoder.check_endpoint(call=False)
        except LLMUnavailableError as exc:
            lines.append(f"warning: {exc}; the run would stop before its first question")
    return lines
