"""A process's CPU turns for index builds, a question's own build served before a build ahead.

    BUILDS = Turns(cores())
    with BUILDS:                  # a question's own build: its turn before any build ahead's
        ...
    ahead = BUILDS.behind()       # a build ahead of its question (run/ahead.py)
    with ahead:                   # a turn only while no question's own build waits for one
        ...
    ahead.promote()               # its question has come and waits for it: served as its own

A question waiting for its own index is on its run's critical path; a build ahead uses the
cores while the questions in flight wait on the network, and must not delay a question that
could build. A turn given back while a remote embedder waits (:func:`~chainrag.index.build.
given_back`) is taken again in the same order.

Layer: index; imports nothing of chainrag.
"""

from __future__ import annotations

import threading


class Turns:
    """``turns`` turns, taken by a question's own build (:meth:`acquire`) before a build ahead
    (:meth:`behind`'s) that waits at the same time. Like a semaphore: ``with turns:`` holds one;
    :meth:`release` gives one back."""

    def __init__(self, turns: int) -> None:
        self._free = turns
        self._first_waiting = 0  # own builds waiting for a turn
        self._changed = threading.Condition()

    def acquire(self, blocking: bool = True) -> bool:
        """Take a turn for a question's own build (at once if ``blocking`` is false: whether
        one was free)."""
        return self._take(None, blocking)

    def release(self) -> None:
        with self._changed:
            self._free += 1
            self._changed.notify_all()

    def __enter__(self) -> Turns:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def behind(self) -> Behind:
        """A handle that takes these turns for a build ahead of its question."""
        return Behind(self)

    def _take(self, ahead: Behind | None, blocking: bool) -> bool:
        with self._changed:
            first = ahead is None
            self._first_waiting += first
            try:
                while self._free == 0 or (ahead is not None and ahead.waits_behind()):
                    if not blocking:
                        return False
                    self._changed.wait()
            finally:
                self._first_waiting -= first
            self._free -= 1
            return True

    def _promoted(self) -> None:
        with self._changed:
            self._changed.notify_all()


class Behind:
    """A build ahead's hold on a :class:`Turns`: a turn only while no question's own build
    waits for one, until :meth:`promote`."""

    def __init__(self, turns: Turns) -> None:
        self._turns = turns
        self._promoted = False

    def waits_behind(self) -> bool:
        """Whether a free turn goes to a question's own build first (the turns' lock held)."""
        return not self._promoted and self._turns._first_waiting > 0

    def promote(self) -> None:
        """Its question waits for it now: from now on it takes turns as a question's own."""
        self._promoted = True
        self._turns._promoted()

    def acquire(self, blocking: bool = True) -> bool:
        return self._turns._take(self, blocking)

    def release(self) -> None:
        self._turns.release()

    def __enter__(self) -> Behind:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
