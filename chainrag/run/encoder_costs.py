"""What a run's remote encoders would take: embedding tokens and rerank searches a question, and
dollars at litellm's price, for ``chainrag run --estimate`` (:mod:`chainrag.run.estimate`).

    found = encoder_estimates(recipe, records, examples, 300)   # an EncoderEstimate each
    sampled, models = unpaid_encoders(recipe)     # a sample without --yes: no paid encoder

Each remote encoder of the recipe (a ``litellm`` embedder or reranker,
:class:`~chainrag.protocols.parts.RemoteEncoder`) is estimated from one of two bases, and the
estimate says which:

* **measured**: the measured questions' records hold its stages' ``encoder_usage`` with texts
  sent to the provider. Each question's tokens and searches are what it sent, plus its texts the
  store held at the run's own rate (tokens or searches per text sent), so that the figure is a
  run from an empty store's, as the LLM's figures assume no answer from the cache.
* **modelled**, where the records hold none (a run made before records held it, or a replay
  whose every value came from the store): a question's passages embedded once (their
  characters / :data:`~chainrag.llm.pacing.CHARS_PER_TOKEN` tokens), and each of its queries
  (the question, and each step that retrieved: its rewritten or decomposed sub-question)
  embedded once and ranked once (one search).

Dollars: ``input_cost_per_token`` times tokens plus ``input_cost_per_query`` times searches, from
litellm's bundled price map (:func:`~chainrag.llm.encoders.encoder_price`: ``text-embedding-
3-small`` $0.02 per million tokens, ``rerank-english-v3.0`` $2 per 1,000 searches); None where it
has no price. A model at ``api_base`` (a server of one's own) costs 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import attrs

from chainrag.core.parts import parts
from chainrag.core.types import EncoderUsage, QAExample
from chainrag.llm.encoders import EncoderPrice, encoder_price
from chainrag.llm.pacing import CHARS_PER_TOKEN
from chainrag.protocols.parts import RemoteEncoder
from chainrag.recipes.overrides import Override, apply
from chainrag.recipes.recipe import Recipe, structure
from chainrag.recipes.structure import unstructure
from chainrag.run.extrapolation import EncoderEstimate, mean_interval
from chainrag.run.meta import RunIdentity
from chainrag.run.plan import PlannedRun
from chainrag.run.record import RunRecord

RERANK = "rerank"
"""The stage a reranker's work is counted under (the others embed)."""


def price_of_encoder(encoder: RemoteEncoder) -> EncoderPrice | None:
    """The price of ``encoder``'s work: 0 at a server of one's own (``api_base``), else
    litellm's (None: unknown)."""
    if encoder.api_base is not None:
        return EncoderPrice(0.0, 0.0)
    return encoder_price(encoder.model)


def is_paid_encoder(encoder: RemoteEncoder) -> bool:
    """Whether ``encoder``'s requests may cost money: a provider's model (no ``api_base`` of
    one's own) whose price is unknown or above 0 (the LLM's rule,
    :func:`chainrag.run.estimate.is_paid`)."""
    price = price_of_encoder(encoder)
    return price is None or price.per_token > 0 or price.per_search > 0


def unpaid_encoders(recipe: Recipe) -> tuple[Recipe, list[str]]:
    """``recipe`` with each paid remote encoder (:func:`is_paid_encoder`) replaced by one that
    costs nothing — an embedder by ``hashed_bow``, a reranker by ``none`` — for a sample that
    ``--estimate`` answers without ``--yes`` (its records then hold no usage of those encoders,
    whose figures are modelled); and the models replaced. ``recipe`` itself where none is paid."""
    changes, models = [], []
    for path, part in parts(recipe):
        if isinstance(part, RemoteEncoder) and is_paid_encoder(part):
            local = {"kind": "none" if RERANK in part.stages() else "hashed_bow"}
            changes.append(Override(tuple(path.split(".")), local, f"{path}={local}"))
            models.append(part.model)
    if not changes:
        return recipe, []
    source = f"{recipe.name}, its paid encoders replaced"
    return structure(apply(unstructure(recipe), changes), source), models


def measured_work(
    records: Sequence[RunRecord], stages: Sequence[str]
) -> list[tuple[float, float]] | None:
    """Each record's (tokens, searches) over ``stages`` as from an empty store: what it sent,
    plus its stored texts at the records' own tokens and searches per text sent; None where no
    record sent a text of these stages (nothing to measure a text by)."""
    each = [_summed(r, stages) for r in records]
    sent = sum(u.sent for u in each)
    if sent == 0:
        return None
    per_token = sum(u.tokens for u in each) / sent
    per_search = sum(u.searches for u in each) / sent
    return [(u.tokens + u.stored * per_token, u.searches + u.stored * per_search) for u in each]


def _summed(record: RunRecord, stages: Sequence[str]) -> EncoderUsage:
    found = dict(record.trace.encoder_usage)
    return sum((found.get(s, EncoderUsage()) for s in stages), EncoderUsage())


def queries_of(record: RunRecord) -> list[str]:
    """The queries a question sent to retrieval, as the model counts them: the question, then
    each step's that retrieved (its rewritten form where it was rewritten), a step a knowledge
    reservoir answered left out."""
    steps = [s.rewritten or s.question for s in record.trace.steps
             if s.retrieved and not s.from_memory]  # fmt: skip
    return [record.question, *steps]


def modelled_work(
    records: Sequence[RunRecord], examples: Mapping[str, QAExample], stages: Sequence[str]
) -> list[tuple[float, float]]:
    """Each record's (tokens, searches) over ``stages`` by the module's per-question model."""
    out: list[tuple[float, float]] = []
    for record in records:
        queries = queries_of(record)
        example = examples.get(record.id)
        passages = sum(len(p.text) for p in example.passages) if example is not None else 0
        tokens = 0.0
        if "embed passages" in stages:
            tokens += passages / CHARS_PER_TOKEN
        if "embed queries" in stages:
            tokens += sum(len(q) for q in queries) / CHARS_PER_TOKEN
        out.append((math.ceil(tokens), float(len(queries)) if RERANK in stages else 0.0))
    return out


def encoder_estimate(
    path: str,
    encoder: RemoteEncoder,
    records: Sequence[RunRecord],
    examples: Mapping[str, QAExample],
    questions: int,
) -> EncoderEstimate:
    """``encoder``'s estimate over ``questions`` questions from the measured ``records``."""
    stages = encoder.stages()
    work = measured_work(records, stages)
    basis: Literal["measured", "modelled"] = "measured"
    if work is None:
        work, basis = modelled_work(records, examples, stages), "modelled"
    tokens = mean_interval([t for t, _ in work])
    searches = mean_interval([s for _, s in work])
    price = price_of_encoder(encoder)
    dollars = None
    if price is not None:
        dollars = mean_interval([price.dollars(t, s) for t, s in work]).times(questions)
    return EncoderEstimate(path, encoder.model, stages, tokens, searches, tokens.mean * questions,
                           searches.mean * questions, dollars, basis, price)  # fmt: skip


def encoder_estimates(
    recipe: Recipe, records: Sequence[RunRecord], examples: Sequence[QAExample], questions: int
) -> tuple[EncoderEstimate, ...]:
    """An :class:`EncoderEstimate` per distinct remote encoder of ``recipe`` (by endpoint
    identity, at the first path naming it), over ``questions`` questions."""
    by_id = {e.qid: e for e in examples}
    found: dict[str, EncoderEstimate] = {}
    for path, part in parts(recipe):
        if isinstance(part, RemoteEncoder) and part.identity() not in found:
            found[part.identity()] = encoder_estimate(path, part, records, by_id, questions)
    return tuple(found.values())


def without_paid_encoders(run: PlannedRun, say: Callable[[str], None]) -> PlannedRun:
    """``run`` with its recipe's paid remote encoders replaced by local ones
    (:func:`~chainrag.run.encoder_costs.unpaid_encoders`), its identity following, so that its
    sample has a folder of its own; ``say`` is told which. ``run`` itself where none is paid."""
    recipe, models = unpaid_encoders(run.recipe)
    if not models:
        return run
    say(f"{run.label}: the sample embeds and ranks with local stand-ins (hashed_bow, none) "
        f"instead of {', '.join(models)}, whose figures are modelled (with --yes, they answer "
        "the sample)")  # fmt: skip
    identity = attrs.evolve(run.identity, recipe_digest=RunIdentity.digest(recipe))
    return attrs.evolve(run, recipe=recipe, identity=identity)
