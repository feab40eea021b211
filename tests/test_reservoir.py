"""The knowledge reservoir: persistence across restarts, concurrent writers, matching."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrag.core.types import KnowledgeItem
from chainrag.index.reservoir import Reservoir, ReservoirError

from .processes import write_at_once


def _vec(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def test_matches_best_first_and_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    first = Reservoir(path)
    items = (KnowledgeItem("Paris is in France.", "Paris"), KnowledgeItem("It is big.", "Paris"))
    paris = np.stack([_vec(1, 0, 0), _vec(1, 0, 0)])  # each item's title embedding
    assert first.add(items, paris, embedder="e") == 2
    assert first.add(items, paris, embedder="e") == 0  # stored once, whoever finds it again
    first.add((KnowledgeItem("Ann is a poet.", "Ann"),), _vec(0, 1, 0)[None], embedder="e")
    with pytest.raises(ValueError, match=r"2 items need one title embedding each"):
        first.add(items, _vec(1, 0, 0)[None], embedder="e")  # one embedding for two items
    first.close()
    again = Reservoir(path)
    assert len(again) == 3
    match = again.match(_vec(0.9, 0.1, 0), embedder="e")
    assert [i.text for i in match.items] == ["Paris is in France.", "It is big.", "Ann is a poet."]
    assert match.similarities[0] == pytest.approx(0.9 / np.hypot(0.9, 0.1), abs=1e-6)
    assert np.all(np.diff(match.similarities) <= 0)
    assert again.match(_vec(1, 0, 0), embedder="other").items == ()  # other embedder: unseen
    assert again.match(_vec(1, 0), embedder="e").items == ()  # other dimension: unseen
    assert len(again.match(_vec(1, 0, 0), embedder="e", limit=1).items) == 1


def _writer(path: str, worker: int) -> None:
    reservoir = Reservoir(path)
    for i in range(25):
        item = KnowledgeItem(f"fact {worker}-{i}", f"t{worker}")
        reservoir.add((item,), _vec(worker + 1, i, 1)[None], embedder="e")


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    Reservoir(path).close()
    write_at_once(_writer, path)
    assert len(Reservoir(path)) == 100


def test_not_a_reservoir_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(ReservoirError, match=r"bad\.sqlite: not a usable reservoir"):
        Reservoir(bad)


@given(st.lists(st.lists(st.floats(-1, 1, width=32), min_size=3, max_size=3), max_size=12))
def test_similarities_are_cosines_sorted(tmp_path_factory: pytest.TempPathFactory,
                                         keys: list[list[float]]) -> None:  # fmt: skip
    reservoir = Reservoir(tmp_path_factory.mktemp("r") / "m.sqlite")
    for i, key in enumerate(keys):
        reservoir.add((KnowledgeItem(f"t{i}", f"title {i}"),), _vec(*key)[None], embedder="e")
    match = reservoir.match(_vec(1, 2, 3), embedder="e")
    assert len(match.items) == len(match.similarities) <= 20
    assert np.all(match.similarities <= 1 + 1e-5) and np.all(match.similarities >= -1 - 1e-5)
    assert np.all(np.diff(match.similarities) <= 1e-7)
