"""``chainrag`` with a sampler of where its CPU goes, by stage: bench/api_throughput.py's runner.

    BENCH_STAGES=stages.json python bench/stage_sampler.py run RECIPE ...

Every 20 ms every thread's stack is read (``sys._current_frames``). A running one counts for
the innermost stage on its stack (:data:`STAGES`), an embedding for whoever asked for it
(``cpu``). A question's thread waiting (on a socket, a lock, a queue: its innermost Python
frame is in :data:`IDLE_FILES`, :data:`IDLE_FUNCS` or :data:`IDLE_LEAVES`) counts for the stage
it waits in (``waits``: the share of the questions' time a lock or a reply holds them). The
counts go to ``$BENCH_STAGES`` as JSON when the command ends. A C call that waits without
such a frame counts as running for the Python function that made it: py-spy would tell them
apart, this needs nothing installed.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import sys
import threading
from types import CodeType, FrameType

STAGES = [  # (part of the frame's file, function or "", label): the innermost match wins
    ("chainrag/components/index/spacy_workers.py", "", "spaCy workers"),
    ("chainrag/components/index/spacy_nlp.py", "SpacySentences.__call__", "split (spaCy)"),
    ("chainrag/components/index/spacy_nlp.py", "SpacyNER.__call__", "ner (spaCy)"),
    ("chainrag/components/index/spacy_nlp.py", "load", "model loading"),
    ("chainrag/components/index/embedders.py", "load", "model loading"),  # _model's loader
    ("chainrag/components/index/embedders.py", "", "embed"),
    ("chainrag/components/retrieval/rerankers.py", "DenseRerank.__call__", "dense rerank"),
    ("chainrag/components/index/remote_embedders.py", "", "remote embedder"),
    ("chainrag/components/retrieval/remote_rerankers.py", "", "remote reranker"),
    ("chainrag/components/index/edges.py", "", "edges"),
    ("chainrag/components/index/key_entities.py", "", "key entities"),
    ("chainrag/components/retrieval/retrievers.py", "", "seed retrieval"),
    ("chainrag/components/retrieval/expanders.py", "", "graph expansion"),
    ("chainrag/core/text_store.py", "", "vector/annotation store"),
    ("chainrag/index/graph.py", "", "index save/load"),
    ("chainrag/llm/cache.py", "", "LLM response cache"),
    ("chainrag/llm/pacing.py", "", "LLM pacing"),
    ("litellm/", "", "LLM client (litellm)"),
    ("httpx/", "", "LLM client (litellm)"),
    ("openai/", "", "LLM client (litellm)"),
    ("chainrag/run/folder.py", "", "run records"),
    ("chainrag/run/files.py", "", "run records"),
    ("chainrag/core/progress.py", "", "progress bar"),
    ("tqdm/", "", "progress bar"),
    ("chainrag/data/", "", "dataset loading"),
    ("chainrag/run/question.py", "searchable_index", "index build (its turn)"),
    ("chainrag/methods/", "", "method (other)"),
    ("chainrag/components/", "", "components (other)"),
    ("<frozen importlib", "", "imports"),
]
IDLE_FILES = ("socket.py", "ssl.py", "selectors.py", "threading.py", "queue.py",
              "concurrent/futures/thread.py",  # a pool's worker waiting for work
              "multiprocessing/connection.py",  # a reply from a worker process
              "multiprocessing/forkserver.py")  # a worker forked by the fork server  # fmt: skip
IDLE_FUNCS = {"wait", "sleep", "select", "poll", "recv_into", "readinto", "acquire", "accept",
              "_wait_for_tstate_lock", "join", "recv"}  # fmt: skip
IDLE_LEAVES = {("chainrag/run/interrupts.py", "_work"): None,
               ("httpcore/_backends/sync.py", "read"): "LLM reply"}  # fmt: skip
"""(file, function) of a leaf frame that waits in C, and what it waits for: a question pool's
worker in its queue's ``get`` (no question: a question it runs has frames below it); an LLM
request for its reply, in the socket's ``recv``."""
counts: collections.Counter[str] = collections.Counter()
"""Samples of threads running (or ready to run: a thread waiting for the GIL is counted where it
waits) by stage."""
waits: collections.Counter[str] = collections.Counter()
"""Samples of questions' threads waiting (a lock, an event, a socket), by the stage waiting."""
question_samples = 0
"""Samples of questions' threads (``question_N``), running or waiting: the denominator of a
wait's share of the questions' time."""


def caller(frame: FrameType | None) -> str:
    """Who asked for an embedding: the dense reranker, a query's retrieval, else an index build."""
    while frame is not None:
        name = frame.f_code.co_filename
        if "rerankers.py" in name:
            return "embed (dense rerank)"
        if "judges.py" in name or "retrievers.py" in name:
            return "embed (query)"
        frame = frame.f_back
    return "embed (index build)"


def state(leaf: FrameType) -> tuple[bool, str | None]:
    """(waiting, stage) of a thread whose innermost frame is ``leaf``: its stage while it runs,
    what it waits in while it waits (None: a pool's worker without a question)."""
    code = leaf.f_code
    for (file, func), waiting_for in IDLE_LEAVES.items():
        if code.co_filename.endswith(file) and code.co_name == func:
            return True, waiting_for
    if code.co_name in IDLE_FUNCS or code.co_filename.endswith(IDLE_FILES):
        return True, label(leaf)
    return False, label(leaf)


def within(func: str, code: CodeType) -> bool:
    """Whether ``code`` is the function ``func`` ("": any) by qualified or plain name, or a
    function or generator expression nested in it (``SpacyNER.__call__.<locals>.<genexpr>``)."""
    name = code.co_qualname
    return func in ("", name, code.co_name) or name.startswith(func + ".<locals>.")


def label(leaf: FrameType) -> str:
    """The innermost stage on the stack whose innermost frame is ``leaf``."""
    frame: FrameType | None = leaf
    while frame is not None:
        code = frame.f_code
        for part, func, stage in STAGES:
            if part in code.co_filename and within(func, code):
                return caller(frame) if stage == "embed" else stage
        frame = frame.f_back
    return f"other ({where(leaf)})"


def where(leaf: FrameType) -> str:
    """The innermost chainrag module on the stack, else the leaf's package."""
    frame: FrameType | None = leaf
    while frame is not None:
        name = frame.f_code.co_filename
        if "/chainrag/" in name:
            module = name.rsplit("/chainrag/", 1)[1].removesuffix(".py")
            return "chainrag." + module.replace("/", ".")
        frame = frame.f_back
    name = leaf.f_code.co_filename
    return name.rsplit("site-packages/", 1)[1].split("/")[0] if "site-packages/" in name else name


STOP = threading.Event()


def sample() -> None:
    global question_samples
    me = threading.get_ident()
    while not STOP.wait(0.02):
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            try:
                waiting, stage = state(frame)
            except Exception as err:  # a sample lost, never the sampler
                waiting, stage = False, f"unsampled ({type(err).__name__})"
            if stage is None:
                continue
            question = names.get(ident, "").startswith("question_")
            question_samples += question
            if not waiting:
                counts[stage] += 1
            elif question:
                waits[stage] += 1


def dump(sampler: threading.Thread) -> None:
    """Stop sampling (before the interpreter tears threads down) and write the counts."""
    STOP.set()
    sampler.join()
    with open(os.environ["BENCH_STAGES"], "w") as fh:
        json.dump({"cpu": counts, "waits": waits, "question_samples": question_samples}, fh)


if __name__ == "__main__":
    sys.path.pop(0)  # bench/ itself: chainrag comes from $PYTHONPATH
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    atexit.register(dump, sampler)
    from chainrag.cli import entry

    sys.argv = ["chainrag", *sys.argv[1:]]
    entry()
