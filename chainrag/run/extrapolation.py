"""An estimate's figures: measured questions scaled up to a run (:func:`extrapolate`), with
95% intervals (:func:`mean_interval`), wall time at a concurrency (:func:`wall_seconds`), prices
(:func:`price_of`), and the table ``chainrag run --estimate`` prints (:func:`table`). Pure
arithmetic over records: which questions are measured, and answering a sample, is
:mod:`chainrag.run.estimate`'s part.

    basis = Basis("run", folder, len(records))
    estimate = extrapolate(records, 300, width=1, slots=1, price=price_of(spec),
                           run="musique/ansint", spec=spec, basis=basis)
    print(table([estimate]))
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import attrs

from chainrag.llm.backend import TokenPrice, token_price
from chainrag.llm.encoders import EncoderPrice
from chainrag.recipes.recipe import LLMSpec
from chainrag.run.record import RunRecord


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
    answered partly from the response cache); with ``answered_by`` set, by another LLM than the
    run's (a stored run of the recipe, a sample answered by the local model), whose tokens
    were ``counted`` as said there and whose seconds are not the run's."""

    kind: Literal["sample", "run"]
    folder: Path
    measured: int
    failed: int = 0
    left_out: int = 0
    answered_by: str | None = None
    counted: str = ""

    def __str__(self) -> str:
        by = f" by {self.answered_by}" if self.answered_by else ""
        if self.kind == "sample":
            failed = f"; {self.failed} failed, not counted" if self.failed else ""
            said = (f"a sample of {self.measured + self.failed} question(s) answered one at a "
                    f"time{by} in {self.folder}{failed}")  # fmt: skip
        else:
            left = f"; {self.left_out} answered from the cache left out" if self.left_out else ""
            said = f"the {self.measured} question(s) already answered{by} in {self.folder}{left}"
        return f"{said}; tokens {self.counted}" if self.counted else said


@attrs.frozen
class EncoderEstimate:
    """What one remote encoder would take over a run (:mod:`chainrag.run.encoder_costs`).

    Attributes:
        path: Where the recipe names it (``index.embedder``).
        model: Its model string.
        stages: The ``encoder_usage`` stages its work is counted under.
        tokens_each, searches_each: Embedding tokens and rerank searches a question, with
            their 95% intervals.
        tokens, searches: Expected totals over the run's questions.
        dollars: Expected total in US dollars (95% interval), None where the price is unknown.
        basis: ``measured`` (the records' encoder usage) or ``modelled`` (see the module).
        price: litellm's price, None where its map has none (a server of one's own: 0).
    """

    path: str
    model: str
    stages: tuple[str, ...]
    tokens_each: Spread
    searches_each: Spread
    tokens: float
    searches: float
    dollars: Spread | None
    basis: Literal["measured", "modelled"]
    price: EncoderPrice | None


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
        prompt_each, completion_each: Tokens a question, with their 95% intervals.
        dollars: Expected total in US dollars, None where the price is unknown.
        wall_s: Expected wall time of the run; None where the measured questions were
            answered by another LLM, whose seconds are not this one's.
        basis: The measured questions the figures are scaled up from.
        encoders: Each remote encoder's embedding tokens, rerank searches and dollars
            (:class:`EncoderEstimate`); empty for a recipe
            without one.
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
    prompt_each: Spread
    completion_each: Spread
    dollars: Spread | None
    wall_s: Spread | None
    basis: Basis
    encoders: tuple[EncoderEstimate, ...] = ()


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
    scale: float = 1.0,
) -> Estimate:
    """The measured ``records`` scaled up to ``questions`` questions (see the module docstring);
    ``price`` None is a model litellm has no price for. Each record's tokens are multiplied by
    ``scale`` (counts made by another tokenizer, converted to the model's); the records' seconds
    are the run's only if ``basis`` says no other LLM answered them."""
    if not records:
        raise ValueError("extrapolate needs at least one measured question")
    calls = [r.usage.calls + r.usage.cache_hits for r in records]
    prompt = [r.usage.prompt_tokens * scale for r in records]
    completion = [r.usage.completion_tokens * scale for r in records]
    dollars = None
    if price is not None:
        spent = [price.dollars(p, c) for p, c in zip(prompt, completion, strict=True)]
        dollars = mean_interval(spent).times(questions)
    wall = None
    if basis.answered_by is None:
        seconds = mean_interval([r.seconds for r in records])
        llm_seconds = mean_interval([r.usage.latency_s for r in records])
        wall = wall_seconds(seconds, llm_seconds, questions, width, slots)
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
        prompt_each=mean_interval(prompt),
        completion_each=mean_interval(completion),
        dollars=dollars,
        wall_s=wall,
        basis=basis,
    )


def price_of(spec: LLMSpec) -> TokenPrice | None:
    """The price of the recipe's LLM: 0 for a local model, else litellm's (None: unknown)."""
    return TokenPrice(0.0, 0.0) if spec.kind == "local_gguf" else token_price(spec.model)


# --------------------------------------------------------------------------- the table


def table(estimates: Sequence[Estimate]) -> str:
    """The estimates as a markdown table, each followed below by what it was scaled up from:
    tokens a question, dollars and wall time of the whole run, each with its 95% interval."""
    lines = [
        "| run | model | questions | LLM calls | prompt tokens a question | completion tokens a "
        "question | $ the run (95% interval) | wall time (95% interval) | concurrency |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for e in estimates:
        flight = f"{e.width}" + (f" (LLM: {e.slots})" if e.slots != e.width else "")
        wall = "not measured" if e.wall_s is None else _range(e.wall_s, _duration)
        lines.append(
            f"| {e.run} | {e.model} | {e.questions:,} | {_amount(e.calls)} | "
            f"{_range(e.prompt_each, _amount)} | {_range(e.completion_each, _amount)} | "
            f"{_dollars(e)} | {wall} | {flight} |"
        )
    lines.append("")
    lines += [f"- {e.run}: estimated from {e.basis}" for e in estimates]
    lines.append(
        "- Wall time: questions x max(seconds a question took / questions in flight, its LLM "
        "seconds / LLM requests in flight); not measured where another LLM answered the "
        "measured questions. Figures assume no answer comes from the cache."
    )
    if any(e.encoders for e in estimates):
        lines += ["", *encoder_table(estimates)]
    return "\n".join(lines)


def encoder_table(estimates: Sequence[Estimate]) -> list[str]:
    """The runs' remote encoders as a markdown table (embedding tokens and rerank searches a
    question, dollars the run, each with its 95% interval, and whether measured or modelled),
    then the whole plan's totals, LLM and encoders together."""
    lines = [
        "| run | encoder | model | embedding tokens a question | rerank searches a question "
        "| $ the run (95% interval) | from |",
        "|---|---|---|--:|--:|--:|---|",
    ]
    for e in estimates:
        for c in e.encoders:
            embeds = any(s != "rerank" for s in c.stages)
            tokens = _range(c.tokens_each, _amount) if embeds else "–"
            searches = _range(c.searches_each, _searches) if "rerank" in c.stages else "–"
            lines.append(f"| {e.run} | {c.path} | {c.model} | {tokens} | {searches} | "
                         f"{_encoder_dollars(c)} | {c.basis} |")  # fmt: skip
    found = [c for e in estimates for c in e.encoders]
    known = [c.dollars.mean for c in found if c.dollars is not None]
    llm = [e.dollars.mean for e in estimates if e.dollars is not None]
    unknown = " (some at an unknown price, not counted)" if len(known) < len(found) else ""
    llm_unknown = (
        " (LLM calls at an unknown price not counted)" if len(llm) < len(estimates) else ""
    )
    lines += [
        "",
        f"- The plan's encoders: {_amount(sum(c.tokens for c in found))} embedding tokens, "
        f"{_amount(sum(c.searches for c in found))} rerank searches, "
        f"{_money(math.fsum(known))}{unknown}; with its LLM calls, "
        f"{_money(math.fsum(known) + math.fsum(llm))}{llm_unknown}.",
        "- Encoders: measured from the records' encoder usage, a question's texts the store "
        "held counted as sent (a run from an empty store); modelled where the records hold "
        "none: a question's passages and each query embedded once (characters / 4 tokens), "
        "each query ranked once (one search). Prices are litellm's (a server at api_base: $0).",
    ]
    return lines


def _searches(x: float) -> str:
    return f"{x:.1f}" if x < 100 else _amount(x)


def _encoder_dollars(c: EncoderEstimate) -> str:
    return "unknown price" if c.dollars is None else _range(c.dollars, _money)


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
