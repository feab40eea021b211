"""Questions' indexes built ahead of their turn, while the questions in flight wait on the network.

A run with more questions than it has in flight starts a question when one before it ends, and
the new question then builds its index (split, NER, embeddings, edges: CPU work) before its
first LLM call. With a remote LLM the cores meanwhile sit idle: the questions in flight wait for
replies. :class:`BuildsAhead` builds the indexes of the questions queued next in those idle
turns, at most ``depth`` beyond the questions started, each taking a build turn only while no
question's own build waits for one (:meth:`~chainrag.index.turns.Turns.behind`):

    ahead = BuildsAhead(build, examples, BUILDS, skip=16, depth=16, threads=2)
    built = ahead.take(example)   # as its question starts: its build (waited for if under way),
                                  # or None where none has begun (the question builds its own)
    ahead.stop()                  # the ones not begun are not (as a with block ends, too)

A build ahead is the same build as the question's own (same index, its remote requests counted
for the question): a question's record does not depend on where its index was built (what a
build finds in the stores already depends, in any threaded run, on what other questions stored
first).
Layer: run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

from chainrag.core.types import QAExample
from chainrag.index.turns import Behind, Turns

B = TypeVar("B")


class BuildsAhead(Generic[B]):
    """``build(example, turn)`` for ``examples`` after the first ``skip`` (those start at once),
    in their order, on ``threads`` daemon threads, at most ``depth`` beyond the questions that
    have started (:meth:`take`), each build's turns taken behind the questions' own
    (``turns.behind()``)."""

    def __init__(
        self,
        build: Callable[[QAExample, Behind], B],
        examples: Sequence[QAExample],
        turns: Turns,
        *,
        skip: int,
        depth: int,
        threads: int,
    ) -> None:
        self._build, self._examples, self._turns = build, list(examples), turns
        self._order = {example.qid: i for i, example in enumerate(self._examples)}
        self._slots: dict[int, tuple[Future[B], Behind]] = {}
        self._next, self._started, self._depth = skip, 0, depth
        self._gone: set[int] = set()  # the examples whose questions have started
        self._stopped = False
        self._changed = threading.Condition()
        for i in range(max(1, threads)):
            threading.Thread(target=self._work, name=f"build_ahead_{i}", daemon=True).start()

    def take(self, example: QAExample) -> B | None:
        """What ``example``'s build ahead gave (waited for where it is under way, then served as
        a question's own build), or raised; None where none has begun: it never will, and the
        question builds its own index. Called as each question starts."""
        with self._changed:
            i = self._order.get(example.qid, -1)
            self._started += 1
            self._gone.add(i)
            self._changed.notify_all()
            slot = self._slots.pop(i, None)
        if slot is None:
            return None
        future, turn = slot
        if future.cancel():
            return None
        turn.promote()
        return future.result()

    def __enter__(self) -> BuildsAhead[B]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Begin no more builds (those under way end on their own)."""
        with self._changed:
            self._stopped = True
            for future, _ in self._slots.values():
                future.cancel()
            self._changed.notify_all()

    def _claim(self) -> tuple[int, Future[B], Behind] | None:
        """The next example to build and its slot, once it is within ``depth`` of the questions
        started; None when there is none left or the builds were stopped."""
        with self._changed:
            while not self._stopped:
                while self._next in self._gone:
                    self._next += 1
                if self._next >= len(self._examples):
                    return None
                if self._next < self._started + self._depth:
                    i, self._next = self._next, self._next + 1
                    future: Future[B] = Future()
                    self._slots[i] = (future, self._turns.behind())
                    return i, future, self._slots[i][1]
                self._changed.wait()
            return None

    def _work(self) -> None:
        while (claimed := self._claim()) is not None:
            i, future, turn = claimed
            if not future.set_running_or_notify_cancel():
                continue  # its question came first
            try:
                future.set_result(self._build(self._examples[i], turn))
            except BaseException as exc:  # its question raises it, as its own build would
                future.set_exception(exc)
