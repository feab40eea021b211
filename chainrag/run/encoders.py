"""The remote encoders ``run.json`` records (:class:`~chainrag.run.meta.EncoderRecord`): each
embedding model and reranker a recipe reaches over HTTP, its model, the endpoint identities it
was reached at, and how many of its texts were sent to the provider or found in the store,
summed over the run's records, so that a reader sees whether a replay needed a provider.

    encoders = encoder_records(recipe, meta.encoders)    # at a session's start
    encoders = counted(encoders, records)                # at its end, over the run's records

Layer: the record side of ``run``: never the LLM layer nor the methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.endpoint import access_changes
from chainrag.core.parts import parts
from chainrag.core.types import EncoderUsage
from chainrag.protocols.parts import RemoteEncoder
from chainrag.recipes.recipe import Recipe
from chainrag.run.meta import EncoderRecord
from chainrag.run.record import RunRecord


def encoder_records(
    recipe: Recipe, before: Sequence[EncoderRecord] = ()
) -> tuple[EncoderRecord, ...]:
    """Each distinct remote encoder of ``recipe`` (one per endpoint identity, at the first path
    that names it), carrying ``before``'s record of the same path on: its counts, and its
    endpoints with this one added where a session reaches it elsewhere (``api_base`` is not
    part of the digest, so a run may resume at another server)."""
    earlier = {e.path: e for e in before}
    found: dict[str, EncoderRecord] = {}
    for path, part in parts(recipe):
        if not isinstance(part, RemoteEncoder) or part.identity() in found:
            continue
        now = EncoderRecord(path, part.model, (part.identity(),), part.stages())
        old = earlier.get(path)
        if old is not None and old.model == now.model:
            endpoints = tuple(dict.fromkeys((*old.endpoints, *now.endpoints)))
            now = attrs.evolve(old, endpoints=endpoints, stages=now.stages)
        found[part.identity()] = now
    return tuple(found.values())


def stage_totals(records: Iterable[RunRecord]) -> dict[str, EncoderUsage]:
    """The records' remote encoder work summed by stage (``embed passages``, ``rerank``)."""
    totals: dict[str, EncoderUsage] = {}
    for record in records:
        for stage, usage in record.trace.encoder_usage:
            totals[stage] = totals.get(stage, EncoderUsage()) + usage
    return totals


def counted(
    encoders: Sequence[EncoderRecord], records: Iterable[RunRecord]
) -> tuple[EncoderRecord, ...]:
    """``encoders`` with their requests, texts sent and texts found in the store recounted over
    ``records`` (the run's, every session's: a resumed run adds its questions), each the sum of
    its stages."""
    totals = stage_totals(records)
    out = []
    for encoder in encoders:
        usage = sum((totals.get(s, EncoderUsage()) for s in encoder.stages), EncoderUsage())
        out.append(attrs.evolve(encoder, requests=usage.requests, sent=usage.sent,
                                stored=usage.stored))  # fmt: skip
    return tuple(out)


def encoder_access_changes(
    folder: Path, before: Mapping[str, Mapping[str, Any]], now: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """A line for each remote encoder this session reaches otherwise than the folder's latest
    session that recorded them (another ``api_base``, more requests in flight…); a path the
    earlier session did not record is not compared."""
    lines = []
    for path, fields in now.items():
        if path not in before:
            continue
        changed = access_changes(before[path], fields, sorted({*before[path], *fields}))
        if changed:
            lines.append(f"note: {folder} resumes with {path} {', '.join(changed)}: how an "
                         "encoder is reached changes no vector or score, so the run goes on "
                         "(run.json records each session's)")  # fmt: skip
    return lines
