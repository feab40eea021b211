"""What lets a session stop at once on a second signal: its question pool, which it can leave
behind, and its signals held while a question's line is written.

    with QuestionPool(4) as pool:
        future = pool.submit(answer, example)
        ...
        pool.abandon()   # a second Ctrl-C: neither the pool's end nor the exit waits for it

    with signals_held():  # a Ctrl-C here is raised as the block ends
        write_the_line()

Layer: run; imports nothing of chainrag.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


class QuestionPool(Executor):
    """At most ``workers`` questions at once, each on one of that many daemon threads.

    It is a thread pool whose end can leave its calls in flight behind (:meth:`abandon`):
    where a ``concurrent.futures.ThreadPoolExecutor``'s end, and the interpreter's exit, wait
    for every call, a second Ctrl-C stops a session at once however long its questions in
    flight would take (a local model's: minutes).
    """

    def __init__(self, workers: int) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._threads = [
            threading.Thread(target=self._work, name=f"question_{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        self._abandoned = False
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        self._calls.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def _work(self) -> None:
        while (item := self._calls.get()) is not None:
            future, call = item
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued
            try:
                result = call()
            except BaseException as exc:  # the future holds it, as a ThreadPoolExecutor's does
                future.set_exception(exc)
            else:
                future.set_result(result)

    def abandon(self) -> None:
        """Wait for no call in flight any more: the pool's end returns at once, and, its
        threads being daemons, the interpreter's exit does not wait for them either."""
        self._abandoned = True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Let the threads end once the calls queued are done (``cancel_futures``: those not
        started are cancelled first, by their owner); ``wait``: until they have, unless the
        pool was :meth:`abandon`-ed."""
        for _ in self._threads:
            self._calls.put(None)
        if wait and not self._abandoned:
            for thread in self._threads:
                thread.join()


def notice(line: str) -> None:
    """A line the person who sent a signal reads at once, on standard error, on a line of its
    own: where progress bars may be on screen (tqdm imported), through tqdm, which clears them,
    writes the line and draws them again below it (a plain print landed at the end of the
    bar's line)."""
    bars = sys.modules.get("tqdm")
    if bars is not None:
        bars.tqdm.write(line, file=sys.stderr)
        sys.stderr.flush()
        return
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM wait: a signal that arrives is raised as the block
    ends, as its handler raises it (KeyboardInterrupt, :class:`Interrupted`), so that a
    question's line is written and counted whole or not at all. A signal whose handler is the
    system's (terminate) or ignored is left as it is; outside the main thread, where no handler
    runs, nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    raising = {sig: handler for sig in (signal.SIGINT, signal.SIGTERM)
               if callable(handler := signal.getsignal(sig))}  # fmt: skip
    for sig in raising:
        signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in raising.items():
            signal.signal(sig, handler)
        for signum in caught[:1]:
            raising[signal.Signals(signum)](signum, None)  # raises as the signal would have
