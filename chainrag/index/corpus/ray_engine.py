"""The Ray engine: a corpus build's encoding stages as Ray Data ``map_batches`` over actors.

    engine = RayEngine()        # RAY_ADDRESS joins a cluster; otherwise a local Ray
    build_corpus_index(sources, spec, out, ctx, engine=engine)

How a batch travels: the builder's lazy batch iterator is cut into windows of ``window``
batches; each window becomes one small Ray dataset of one row per batch, ``{seq, payload}``,
where ``payload`` is the pickled batch as bytes: an Arrow binary column carries any Python
object exactly, where letting Ray Data turn lists of attrs objects, tuples of mixed types or
float32 matrices into Arrow columns would change their types. ``map_batches`` runs one batch
per call (``batch_size=1``) on a fixed pool of actors (one CPU each), each of which builds its
own :class:`~chainrag.context.StageContext` once, so its models (spaCy, the embedder) load once for
the window, and returns ``{seq, ok, payload}``: the pickled result, or the exception, which is
raised again in the caller (caught in the actor, so Ray never retries a deterministic failure).

Order: the window's dataset asks Ray Data to preserve order (on its own copy of the
``DataContext``, never the process's), and :func:`in_order` checks the sequence numbers and
holds back whatever arrives early, so the order never rests on that option alone.

Memory: one window is in Ray at a time, so memory is bounded by the window, never the corpus.
Its actor pool ends with it (Ray Data's pools live as long as one dataset's execution), so each
window pays the actors' start and model loads again: measured on this 2-core machine under load,
4-7 s a window with the hashed embedder, 13-16 s with spaCy, against the minutes a default
window (64 batches of 512 passages, or of 4,096 sentences) takes to encode.

Remote workers must be able to import ``chainrag`` (install it on every node, or pass a
``runtime_env``). Layer: index. May import ``chainrag.context``,
``chainrag.core.errors`` and the types of ``chainrag.index.corpus.build``; ``ray`` and
``pyarrow`` only inside functions, so that the package imports without Ray.
"""

from __future__ import annotations

import os
import pickle
import traceback
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from chainrag.context import StageContext
from chainrag.core.errors import ChainragError
from chainrag.protocols.parts import InProcesses

if TYPE_CHECKING:
    from chainrag.index.corpus.build import Encoder
    from chainrag.recipes.recipe import IndexSpec

DEFAULT_WINDOW = 64
LOCAL_OBJECT_STORE_MB = 1024
"""Object store of a local Ray: a window's batches and results, with room to spare."""


class RayEngineError(ChainragError):
    """Ray cannot be started or joined."""


def _address() -> str | None:
    return os.environ.get("RAY_ADDRESS") or None


@attrs.frozen
class RayEngine:
    """Runs an encoding step as Ray Data ``map_batches`` over a pool of actors, in batch order.

    Attributes:
        address: The Ray cluster to join (default: ``RAY_ADDRESS``); None starts a local Ray
            with ``local_cpus`` CPUs, unless this process already runs Ray.
        actors: Actors in the pool, one CPU each (default: every CPU Ray has).
        window: Batches per Ray dataset: how far ahead of the caller the batch iterator is read.
        local_cpus: CPUs of a local Ray (default: this machine's).
    """

    address: str | None = attrs.field(factory=_address)
    actors: int | None = None
    window: int = DEFAULT_WINDOW
    local_cpus: int | None = None

    def map(self, fn: Encoder, spec: IndexSpec, batches: Iterable[Any]) -> Iterator[Any]:
        """``fn(ctx, spec, batch)`` of every batch, on the actors, yielded in batch order."""
        if self.window < 1 or (self.actors is not None and self.actors < 1):
            raise ValueError(f"window and actors must be positive ({self})")
        self.start()
        actors = self.actors or _cluster_cpus()
        for batch_window in windows(batches, self.window):
            yield from in_order(_run_window(fn, spec, batch_window, actors), len(batch_window))

    def start(self) -> None:
        """Join ``address``, or start a local Ray, unless this process already runs Ray."""
        import ray

        if ray.is_initialized():
            return
        try:
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                cpus = self.local_cpus or os.cpu_count() or 1
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                         object_store_memory=LOCAL_OBJECT_STORE_MB << 20)  # fmt: skip
        except ConnectionError as exc:
            raise RayEngineError(f"cannot join the Ray cluster at {self.address}: {exc}") from None


def windows(batches: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``batches`` in lists of ``size`` (the last may be shorter), read lazily."""
    window: list[Any] = []
    for batch in batches:
        window.append(batch)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window


def in_order(rows: Iterable[Mapping[str, Any]], n: int) -> Iterator[Any]:
    """The results of rows ``{seq, ok, payload}`` for seq ``0..n-1`` in that order, each as soon
    as every earlier one has arrived; a failed batch's exception is raised again here."""
    pending: dict[int, Mapping[str, Any]] = {}
    following = 0
    for row in rows:
        seq = int(row["seq"])
        if seq in pending or not following <= seq < n:
            raise RayEngineError(f"Ray returned batch {seq} twice or out of range (0..{n - 1})")
        pending[seq] = row
        while following in pending:
            yield _result(pending.pop(following))
            following += 1
    if following != n:
        raise RayEngineError(f"Ray returned {following + len(pending)} of {n} batches")


def _result(row: Mapping[str, Any]) -> Any:
    value = pickle.loads(row["payload"])  # noqa: S301  (our own workers' bytes, in memory)
    if row["ok"]:
        return value
    error, trace = value
    if error is None:
        raise RuntimeError(f"an encoding step failed on a Ray worker:\n{trace}")
    error.add_note(f"(raised on a Ray worker)\n{trace}")
    raise error


def _cluster_cpus() -> int:
    import ray

    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    return max(1, int(resources.get("CPU", 1)))


def _run_window(
    fn: Encoder, spec: IndexSpec, window: list[Any], actors: int
) -> Iterable[Mapping[str, Any]]:
    """One window as a Ray dataset of pickled batches, mapped on ``actors`` actors."""
    import ray.data

    rows = [{"seq": i, "payload": pickle.dumps(b, protocol=5)} for i, b in enumerate(window)]
    dataset = ray.data.from_items(rows, override_num_blocks=len(rows))
    dataset.context.execution_options.preserve_order = True  # this dataset's copy only
    dataset.context.enable_progress_bars = False
    dataset.context.print_on_execution_start = False
    mapped = dataset.map_batches(
        EncoderActor,
        fn_constructor_kwargs={"fn": fn, "spec": spec},
        batch_size=1,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=min(actors, len(rows))),
        num_cpus=1,
    )
    return mapped.iter_rows()


def in_one_process(spec: IndexSpec) -> IndexSpec:
    """``spec`` with its spaCy stages in the actor's own process: each actor holds one CPU of
    the cluster, so worker processes of its own would oversubscribe it (the sentences and
    mentions are the same either way)."""
    splitter, ner = spec.splitter, spec.ner
    if isinstance(splitter, InProcesses):
        splitter = attrs.evolve(splitter, processes=1, workers=0)
    if isinstance(ner, InProcesses):
        ner = attrs.evolve(ner, processes=1, workers=0)
    return attrs.evolve(spec, splitter=splitter, ner=ner)


class EncoderActor:
    """A Ray Data actor: its own context (models loaded once), one pickled batch per call."""

    def __init__(self, fn: Encoder, spec: IndexSpec) -> None:
        self.fn, self.spec, self.ctx = fn, in_one_process(spec), StageContext()

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa

        seqs, payloads, oks = [], [], []
        for seq, payload in zip(table["seq"].to_pylist(), table["payload"].to_pylist(),
                                strict=True):  # fmt: skip
            ok, value = self._encode(payload)
            seqs.append(seq)
            oks.append(ok)
            payloads.append(value)
        return pa.table({"seq": pa.array(seqs, pa.int64()), "ok": pa.array(oks, pa.bool_()),
                         "payload": pa.array(payloads, pa.large_binary())})  # fmt: skip

    def _encode(self, payload: bytes) -> tuple[bool, bytes]:
        try:
            batch = pickle.loads(payload)  # noqa: S301  (our own driver's bytes, in memory)
            return True, pickle.dumps(self.fn(self.ctx, self.spec, batch), protocol=5)
        except Exception as exc:
            trace = traceback.format_exc()
            try:
                return False, pickle.dumps((exc, trace), protocol=5)
            except Exception:
                return False, pickle.dumps((None, trace), protocol=5)
