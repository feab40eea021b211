"""Where an encoder runs: ``device: auto | cpu | cuda``.

The embedder (``flag_model``), the rerankers (``flag_reranker``, ``cross_encoder``) and the NLI
filter (``nli_cross_encoder``) take a ``device`` field: ``auto`` (the default) is the GPU when
torch sees one and the CPU otherwise; ``cpu`` and ``cuda`` are that device, and ``cuda`` on a
machine without one is an error naming the component. Every device computes in fp32.

The device says where a model computes, not what: it is a *placement* field, left out of
recipe digests and cache keys (:func:`chainrag.recipes.structure.identity`), so a recipe has one
digest on a laptop and on a GPU machine and every key made before the field existed stays
valid. What each encoder resolved to is recorded instead (:func:`resolved_devices`): in
``run.json``'s session and in a corpus index's manifest. Vectors from cpu and cuda agree to a
cosine of 0.999 or more, not bit for bit (docs/benchmarks.md), so cached embeddings made on a
GPU are keyed apart from the CPU's (:func:`cache_devices`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.parts import parts

PLACEMENT = "placement"
"""The metadata key of a component field that says where it computes, not what (``device``):
left out of :func:`chainrag.recipes.structure.identity`, the form digests and cache keys are
made of."""

PLACED = {PLACEMENT: True}
"""The metadata of a placement field: ``device: Device = attrs.field(default="auto",
metadata=PLACED)``."""

Device = Literal["auto", "cpu", "cuda"]
Resolved = Literal["cpu", "cuda"]

_GPU_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia", "/dev/dxg")
"""Where a CUDA GPU shows itself before torch is imported (Linux, WSL): a machine with none of
them is answered "cpu" for ``auto`` without importing torch."""


class DeviceError(ChainragError, RuntimeError):
    """An encoder asked for a device this machine does not have."""


@functools.cache
def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU (torch is imported only where a GPU may be present)."""
    if "torch" not in sys.modules and not any(Path(p).exists() for p in _GPU_FILES):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def cores() -> int:
    """CPU cores this process may run on (its affinity where the system tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def resolve(device: Device, who: str) -> Resolved:
    """The device ``device`` stands for on this machine; ``who`` names the component in the
    error for ``cuda`` where there is none."""
    if device == "cpu":
        return "cpu"
    if cuda_available():
        return "cuda"
    if device == "cuda":
        raise DeviceError(
            f"{who} has device: cuda, but torch sees no CUDA GPU on this machine; "
            "set its device to auto (a GPU when there is one) or cpu"
        )
    return "cpu"


def placed(component: object, path: str) -> Iterator[tuple[str, Any]]:
    """Every component inside ``component`` (itself included) with a ``device`` placement
    field, with its path from ``path`` (``index.embedder``, ``method.retrieval.reranker``)."""
    for where, part in parts(component, path):
        fields = attrs.fields(type(part))
        if any(f.name == "device" and f.metadata.get(PLACEMENT) for f in fields):
            yield where, part


def resolved_devices(component: object, path: str) -> dict[str, Resolved]:
    """``{path: device}`` of every encoder inside ``component``, as resolved here: what
    run.json and an index manifest record."""
    return {where: resolve(found.device, where) for where, found in placed(component, path)}


def cache_devices(component: object) -> list[str]:
    """The resolved devices of the encoders inside ``component`` other than the CPU: what a
    cache key adds, so that vectors made on a GPU are not served for a CPU's (and a CPU's keys
    are those made before devices existed)."""
    found = resolved_devices(component, "")
    return [f"{where}={device}" for where, device in found.items() if device != "cpu"]
