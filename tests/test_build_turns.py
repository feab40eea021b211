"""A question's index build holds one of the run's CPU build turns (``run/question.py``
``BUILDS``) for its CPU work, and gives it back while a remote embedder waits on the network, so
that another question builds meanwhile; a local embedder's work keeps the turn."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from chainrag.components.index.linear_adapter import LinearAdapter
from chainrag.context import StageContext
from chainrag.data.datasets import load_dataset
from chainrag.index.build import build_index, waits_on_network
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.recipes.recipe import IndexSpec
from chainrag.standin.server import FakeOpenAI, serve

ROOT = Path(__file__).resolve().parents[1]


def spec_of(recipe_file: str, embedder: str) -> IndexSpec:
    recipe = load_changed(ROOT / recipe_file, parse_all([f"index.embedder={embedder}"]))
    assert recipe.index is not None
    return recipe.index


def turn_free(turns: threading.Semaphore) -> bool:
    """Whether a turn of ``turns`` can be taken now (it is then given back at once)."""
    if turns.acquire(blocking=False):
        turns.release()
        return True
    return False


def watching(turns: threading.Semaphore, seen: list[bool]) -> Callable[[], float]:
    """The stand-in's encoder latency: none, noting whether the turn was free meanwhile."""

    def latency() -> float:
        seen.append(turn_free(turns))
        return 0.0

    return latency


@pytest.mark.parametrize("recipe_file", ["recipes/index/sentence_graph.yaml",
                                         "recipes/index/chunks.yaml"])  # fmt: skip
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_remote_embedder_gives_the_turn_back_while_it_waits(
    recipe_file: str, wrapped: bool, tmp_path: Path
) -> None:
    turns, seen = threading.BoundedSemaphore(1), []
    adapter = tmp_path / "adapter.npz"
    LinearAdapter.identity(64).save(adapter)
    fake = FakeOpenAI([], encoder_latency=watching(turns, seen))
    example = load_dataset("musique", 1)[0]
    with serve(fake) as base:
        remote = {"kind": "litellm", "model": "openai/standin-embed", "api_base": base,
                  "dimensions": 64}  # fmt: skip
        embedder = json.dumps(
            {"kind": "linear_adapter", "base": remote, "path": str(adapter)} if wrapped else remote
        )
        spec = spec_of(recipe_file, embedder)
        assert waits_on_network(spec.embedder)  # an adapter's remote base too
        index, report = build_index(example.passages, spec, StageContext(), turns=turns)
    assert seen and all(seen)  # the turn was free during every embedding request
    assert turn_free(turns) and not report.cached and len(index) > 0  # given back at the end


def test_a_local_embedder_keeps_the_turn_through_the_build() -> None:
    turns = threading.BoundedSemaphore(1)
    spec = spec_of("recipes/index/chunks.yaml", "{kind: hashed_bow, dim: 64}")
    assert not waits_on_network(spec.embedder)
    seen: list[bool] = []
    real = type(spec.embedder).__call__

    def noting(self: object, *args: object, **kwargs: object) -> object:
        seen.append(turn_free(turns))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    example = load_dataset("musique", 1)[0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(spec.embedder), "__call__", noting)
        build_index(example.passages, spec, StageContext(), turns=turns)
    assert seen == [False] and turn_free(turns)
