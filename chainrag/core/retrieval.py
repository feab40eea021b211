"""What retrieval derives from an index, kept apart from the model store and bounded.

:class:`IndexData` holds what is derived from an index (a BM25 index of its texts, a vector
index of its embeddings) for as long as the index lives and at most for ``size`` indexes, the
least recently used dropped first. The model store keeps models, which outlive every index;
per-index data there grew for a whole run and, keyed by ``id()``, could be found again by a
new index at a dead one's address. (A recipe's retrieval bound to an index is
:class:`chainrag.context.Retriever`.)

Layer: core.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class IndexData:
    """Data derived from indexes, per index, bounded (see the module docstring).

    ``get(index, key, build)`` returns what ``build()`` made for ``index`` under ``key``,
    building it the first time. An index is held weakly where it can be (its data goes when
    it does), else strongly until the bound drops it.
    """

    def __init__(self, size: int = 8) -> None:
        if size < 1:
            raise ValueError(f"IndexData size must be at least 1, got {size}")
        self.size = size
        self._slots: OrderedDict[int, tuple[Callable[[], Any], dict[Hashable, Any]]] = OrderedDict()
        self._lock = threading.RLock()  # a dead index's callback may run while it is held

    def get(self, index: object, key: Hashable, build: Callable[[], T]) -> T:
        with self._lock:
            data = self._slot(index)
            if key in data:
                found: T = data[key]
                return found
        made = build()  # outside the lock: another index's data need not wait for it
        with self._lock:
            kept: T = self._slot(index).setdefault(key, made)
            return kept

    def _slot(self, index: object) -> dict[Hashable, Any]:
        n = id(index)
        slot = self._slots.get(n)
        if slot is None or slot[0]() is not index:
            try:
                ref: Callable[[], Any] = weakref.ref(index, self._dropper(n))
            except TypeError:  # not weakly referable: held until the bound drops it
                ref = lambda: index  # noqa: E731
            slot = (ref, {})
            self._slots[n] = slot
            while len(self._slots) > self.size:
                self._slots.popitem(last=False)
        self._slots.move_to_end(n)
        return slot[1]

    def _dropper(self, n: int) -> Callable[[weakref.ref[Any]], None]:
        """The callback that drops index ``n``'s data when the index dies (unless a new index
        has its address by then)."""

        def drop(_: weakref.ref[Any]) -> None:
            with self._lock:
                slot = self._slots.get(n)
                if slot is not None and slot[0]() is None:
                    del self._slots[n]

        return drop

    def __len__(self) -> int:
        return len(self._slots)

    def __deepcopy__(self, memo: dict[int, Any]) -> IndexData:
        """Shared, never copied, as the model store is."""
        return self
