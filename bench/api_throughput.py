"""Throughput against an API-like LLM: is chainrag's own CPU work the bottleneck?

    .venv/bin/python bench/api_throughput.py [--recipes chainrag/ansint.yaml baselines/naive.yaml]
        [--datasets musique long:musique] [--limit 30] [--concurrency 1 4 16 64]
        [--latency fixed:1] [--bursts 60:2] [--baseline 61e250e] [--sides old new] [--repeat 1]
        [--stores cold warm] [--encoders local remote] [--embed-latency fixed:0.2]
        [--rerank-latency fixed:0.3] [--out FILE]

Starts the one stand-in server (``chainrag standin``, in its own process: its CPU is not
counted) with the latency given (``fixed:S``, or ``lognormal:MEDIAN:P99``, e.g. 1 s median and a
5 s 99th percentile) and 429 bursts (``EVERY_S:FOR_S``), and answers every prompt with
``standin_reply``. Then, for each code side — this checkout ("new") and the commit
``--baseline`` ("old", exported with ``git archive`` into a temporary folder) — each recipe,
dataset and ``--concurrency``, runs ``chainrag run RECIPE --dataset D --limit N --llm
openai/stand-in --api-base URL --concurrency C`` in a fresh process, with the recipe's own
encoders (``--encoders local``) or with the embedder and the seed reranker on the stand-in too
(``remote``: ``--embedder openai/stand-in-embed --reranker cohere/stand-in-rerank``, their
``api_base`` the stand-in's, answered at ``--embed-latency`` and ``--rerank-latency``), and
prints per store:

* ``cold``: from an empty ``$CHAINRAG_CACHE``, every question's index built;
* ``warm``: over the vector store a first run of the same cell filled (not measured), the LLM
  cache not used (``--cache-mode bypass``): the second recipe or the rerun over the same
  questions, where no index build loads the embedder and the CPU floor of a cold store no longer
  caps the ratio to the latency bound;

and for each:

* questions a minute (wall time of the whole process, start-up included);
* CPU seconds a question: user + sys of the chainrag process (``os.wait4``) and of the processes
  it leaves behind (spaCy's workers' fork server, waited for here as their subreaper: see
  :class:`ProcessTree`), start-up included;
* peak RSS: of the process and all its descendants together, polled every 0.1 s (at least the
  process's own ``ru_maxrss``);
* the latency-bound ideal: every remote call of each question in sequence — its LLM calls
  (its record's usage) × the stand-in's mean latency, its embedding and rerank requests (its
  record's encoder usage) × theirs — summed over the run ÷ the concurrency, but never less than
  the question that takes longest so; and the ratio ideal ÷ wall (1.0: chainrag adds nothing to
  the remote calls' time);
* the CPU floor: the run's CPU seconds ÷ the cores, the wall time its own work needs at the
  very least; where it exceeds the ideal, the CPU bounds the run, not the LLM;
* the top stages by CPU: a sampler in the chainrag process (every 20 ms, every thread, a
  thread waiting on a socket, a lock or a sleep not counted) attributes each sample to the
  innermost stage on its stack (split, ner, embed, edges, rerank, store, llm client, ...);
* the top waits: the share of the questions' time (their threads' samples) spent waiting in a
  stage: for the LLM's reply (expected), or on a lock (the response cache's, the records').

``--repeat 3`` runs each cell three times and prints the median. Results as JSON lines in
``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
SERVER = ["-m", "chainrag.cli", "standin"]  # this checkout (PYTHONPATH), whichever side is run

SAMPLER = ROOT / "bench" / "stage_sampler.py"
CORES = len(os.sched_getaffinity(0))


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def mean_latency(spec: str) -> float:
    """The stand-in's mean seconds an answer for ``--latency`` ``spec``."""
    kind, *numbers = spec.split(":")
    values = [float(n) for n in numbers]
    if kind == "fixed":
        return values[0]
    median, p99 = values
    sigma = math.log(p99 / median) / 2.326
    return median * math.exp(sigma**2 / 2)


@contextmanager
def standin(latencies: list[str], bursts: str, folder: Path, rate: str = "") -> Iterator[str]:
    """The stand-in server in its own process, answering an LLM request, an embedding and a
    rerank at ``latencies``' paces (429 over ``rate``, ``N:WINDOW``, where given); yields its
    ``api_base``."""
    port_file = folder / "port"
    llm, embed, rerank = latencies
    args = [sys.executable, *SERVER, "--port", "0", "--latency", llm, "--embed-latency", embed,
            "--rerank-latency", rerank, "--port-file", str(port_file)]  # fmt: skip
    if bursts:
        args += ["--bursts", bursts]
    if rate:
        args += ["--rate", rate]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if port_file.is_file() and port_file.read_text():
                break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)


def export(rev: str, folder: Path) -> Path:
    """The tree of commit ``rev`` in ``folder`` (``git archive``: no worktree is registered)."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def records(out_dir: Path, name: str = "predictions.jsonl") -> list[dict[str, Any]]:
    """Every record of the run folders under ``out_dir`` (answered, or ``errors.jsonl``)."""
    found = []
    for path in out_dir.rglob(name):
        found += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return found


def calls_of(record: dict[str, Any]) -> int:
    usage = record.get("usage") or {}
    return int(usage.get("calls", 0)) + int(usage.get("cache_hits", 0))


def encoder_requests(record: dict[str, Any]) -> tuple[int, int]:
    """The question's embedding requests (passages and queries) and its rerank requests."""
    stages = record.get("encoder_usage") or {}
    embeds = sum(int(stages.get(s, {}).get("requests", 0))
                 for s in ("embed passages", "embed queries"))  # fmt: skip
    return embeds, int(stages.get("rerank", {}).get("requests", 0))


@attrs.frozen
class Latencies:
    """The stand-in's mean seconds an LLM reply, an embedding and a rerank take."""

    llm: float
    embed: float = 0.0
    rerank: float = 0.0

    def remote_seconds(self, record: dict[str, Any]) -> float:
        """The question's remote calls, one after another, each at its mean latency."""
        embeds, reranks = encoder_requests(record)
        return calls_of(record) * self.llm + embeds * self.embed + reranks * self.rerank


ENCODERS = {
    "local": [],
    "remote": ["--embedder", "openai/stand-in-embed", "--reranker", "cohere/stand-in-rerank",
               "--set", "index.embedder.dimensions=384"],
}  # fmt: skip
"""``chainrag run``'s options for each ``--encoders``: the recipe's own, or both on the
stand-in (the embedder at MiniLM's 384 dimensions; ``api_base`` added by :func:`encoder_args`)."""


def encoder_args(encoders: str, api_base: str) -> list[str]:
    """``chainrag run``'s options that put the run's encoders where ``encoders`` says."""
    if encoders == "local":
        return []
    return [*ENCODERS[encoders],
            "--set", f"index.embedder.api_base={json.dumps(api_base)}",
            "--set", f"retrieval.seed.reranker.api_base={json.dumps(api_base)}"]  # fmt: skip


PAGE = os.sysconf("SC_PAGE_SIZE")
PR_SET_CHILD_SUBREAPER = 36


class ProcessTree:
    """The processes of one ``chainrag run``: its peak resident memory summed over the process
    and all its descendants (spaCy's workers, their fork server), read from ``/proc`` every
    0.1 s; and the CPU of the descendants ``os.wait4`` of the run does not count. The spaCy
    workers are children of a fork server that the run never waits for: this process is made
    their subreaper, so the fork server, orphaned when the run ends, is waited for here and its
    CPU (its own and its workers') counted with the run's."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_mib, self._stop = pid, 0.0, threading.Event()
        self.seen: set[int] = set()  # the run's descendants, as polled
        self._poller = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> ProcessTree:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self._poller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._poller.join()

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            pages, below = 0, descendants(self.pid)
            self.seen |= below
            for pid in below | {self.pid}:
                with contextlib.suppress(OSError, ValueError, IndexError):
                    pages += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            self.peak_mib = max(self.peak_mib, pages * PAGE / 2**20)

    def orphans_cpu(self, timeout: float = 30.0) -> float:
        """User + sys seconds of the run's descendants left to this process when it ended
        (waited for here, each within ``timeout``)."""
        total, deadline = 0.0, time.monotonic() + timeout
        left = [c for c, p in parents().items() if p == os.getpid() and c in self.seen]
        for pid in left:
            while time.monotonic() < deadline:
                done, _, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    total += usage.ru_utime + usage.ru_stime
                    break
                time.sleep(0.05)
        return total


def parents() -> dict[int, int]:
    """Each process's parent, from ``/proc``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def descendants(pid: int) -> set[int]:
    """The processes below ``pid``."""
    children: dict[int, list[int]] = {}
    for child, parent in parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def fill_store(args: list[str], env: dict[str, str], work: Path) -> None:
    """The unmeasured run of a ``warm`` cell, which fills the stores the measured one reads."""
    fill = [*args, "--out-dir", str(work / "fill")]
    filled = subprocess.run(fill, env={**env, "BENCH_STAGES": str(work / "fill.json")},
                            cwd=work, capture_output=True, text=True, check=False)  # fmt: skip
    if filled.returncode != 0:
        raise RuntimeError(f"the run that fills the store failed ({filled.returncode}) "
                           f"in {work}:\n{filled.stderr[-2000:]}")  # fmt: skip


def timed(args: list[str], env: dict[str, str], work: Path) -> tuple[float, float, float, int]:
    """``args`` run in ``work``: its wall seconds, its process tree's CPU seconds and peak
    MiB (:class:`ProcessTree`), and its exit code; its stderr in ``work/stderr.txt``."""
    start = time.perf_counter()
    child = subprocess.Popen(args, env=env, cwd=work, stdout=subprocess.DEVNULL,
                             stderr=(work / "stderr.txt").open("w"))  # fmt: skip
    with ProcessTree(child.pid) as tree:
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime + tree.orphans_cpu()
    peak = max(usage.ru_maxrss / 1024, tree.peak_mib)
    return wall, cpu, peak, os.waitstatus_to_exitcode(status)


def one_run(code: Path, recipe: str, dataset: str, limit: int, concurrency: int,
            api_base: str, latency: Latencies, work: Path, store: str = "cold",
            encoders: str = "local") -> dict[str, Any]:  # fmt: skip
    """One ``chainrag run`` in a fresh process; what the table shows. ``store``: ``cold``, from
    an empty cache; ``warm``, over the stores a first run (not measured) filled, the LLM cache
    bypassed; ``encoders``: a key of :data:`ENCODERS`."""
    cache, out, stages = work / "cache", work / "runs", work / "stages.json"
    limited = ["--limit", str(limit)] if limit else []
    args = [sys.executable, str(SAMPLER), "run", str(code / "recipes" / recipe),
            "--dataset", dataset, *limited, "--llm", "openai/stand-in",
            "--api-base", api_base, "--concurrency", str(concurrency), "--no-report",
            *encoder_args(encoders, api_base)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(code), "CHAINRAG_CACHE": str(cache),
           "OPENAI_API_KEY": "stand-in", "BENCH_STAGES": str(stages),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
    if store == "warm":
        fill_store(args, env, work)
        args += ["--cache-mode", "bypass"]
    wall, cpu, peak, returncode = timed([*args, "--out-dir", str(out)], env, work)
    answered = records(out)
    if not answered:
        tail = (work / "stderr.txt").read_text()[-2000:]
        raise RuntimeError(f"chainrag run failed ({returncode}) in {work}:\n{tail}")
    calls = [calls_of(r) for r in answered]
    remote = [latency.remote_seconds(r) for r in answered]
    ideal = max(sum(remote) / concurrency, max(remote))
    embeds, reranks = zip(*(encoder_requests(r) for r in answered), strict=True)
    sampled = json.loads(stages.read_text()) if stages.is_file() else {}
    question_samples = sampled.get("question_samples", 0) or 1
    waits = {k: v / question_samples for k, v in sampled.get("waits", {}).items()}
    return {"questions": len(answered), "wall_s": wall, "cpu_s": cpu,
            "cpu_per_q": cpu / len(answered), "q_per_min": 60 * len(answered) / wall,
            "peak_mib": peak,
            "calls_per_q": sum(calls) / len(answered),
            "embed_requests_per_q": sum(embeds) / len(answered),
            "rerank_requests_per_q": sum(reranks) / len(answered),
            "ideal_s": ideal, "floor_s": cpu / CORES, "ratio": ideal / wall,
            "stages": sampled.get("cpu", {}), "waits": waits,
            "errors": len(records(out, "errors.jsonl")), "exit": returncode}  # fmt: skip


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over repeated runs (the stages of the median-CPU run)."""
    middle = sorted(runs, key=lambda r: r["cpu_s"])[len(runs) // 2]
    keys = [k for k, v in runs[0].items() if isinstance(v, int | float)]
    return {**middle, **{k: statistics.median(r[k] for r in runs) for k in keys}}


def top_stages(stages: dict[str, int], n: int = 4) -> str:
    total = sum(stages.values()) or 1
    ranked = sorted(stages.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{name} {100 * count / total:.0f}%" for name, count in ranked)


def top_waits(waits: dict[str, float], n: int = 3) -> str:
    """The ``n`` stages questions waited in longest, as shares of the questions' time."""
    ranked = sorted(waits.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{name} {100 * share:.0f}%" for name, share in ranked) or "–"


def options() -> argparse.Namespace:
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", nargs="+",
                        default=["chainrag/ansint.yaml", "baselines/naive.yaml"],
                        help="recipe files under recipes/ (default: %(default)s)")  # fmt: skip
    parser.add_argument("--datasets", nargs="+", default=["musique", "long:musique"],
                        help="dataset names or slices, e.g. 'musique[60:80]' "
                             "(default: %(default)s)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=30,
                        help="questions a run; 0: the dataset's slice as given "
                             "(default: %(default)s)")  # fmt: skip
    parser.add_argument(
        "--concurrency",
        type=int,
        nargs="+",
        default=[1, 4, 16, 64],
        help="questions in flight, one run each (default: %(default)s)",
    )
    parser.add_argument("--latency", default="fixed:1",
                        help="the stand-in's seconds a reply: fixed:S or lognormal:MEDIAN:P99 "
                             "(default: %(default)s)")  # fmt: skip
    parser.add_argument("--bursts", default="", help="EVERY_S:FOR_S of 429s (none by default)")
    parser.add_argument("--encoders", nargs="+", choices=list(ENCODERS), default=["local"],
                        help="local: the recipe's own; remote: the embedder and the seed "
                             "reranker on the stand-in too (default: %(default)s)")  # fmt: skip
    parser.add_argument("--embed-latency", default="fixed:0.2",
                        help="the stand-in's seconds an embedding, as --latency "
                             "(default: %(default)s)")  # fmt: skip
    parser.add_argument("--rerank-latency", default="fixed:0.3",
                        help="the stand-in's seconds a rerank, as --latency "
                             "(default: %(default)s)")  # fmt: skip
    parser.add_argument("--baseline", default="61e250e",
                        help="the old side's commit, run beside this checkout; '' for none "
                             "(default: %(default)s)")  # fmt: skip
    parser.add_argument("--sides", nargs="+", choices=["old", "new"], default=["old", "new"],
                        help="which code sides run (default: both)")  # fmt: skip
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs a cell; the table shows their median (default: %(default)s)",
    )
    parser.add_argument("--stores", nargs="+", choices=["cold", "warm"], default=["cold", "warm"],
                        help="cold: from an empty cache; warm: over the stores a first run "
                             "filled, the LLM cache not used (default: both)")  # fmt: skip
    parser.add_argument(
        "--out", type=Path, default=None, help="a JSON-lines file each cell's runs are appended to"
    )
    return parser.parse_args()


def table_row(
    recipe: str, dataset: str, concurrency: int, store: str, side: str, r: dict[str, Any],
    encoders: str = "local",
) -> str:  # fmt: skip
    """A cell's line of the table (``r``: its median run)."""
    return (f"| {recipe:<22} | {dataset:<12} | {concurrency:>4} | {store:<5} | {side:<4} | "
            f"{encoders:<8} | "
            f"{r['q_per_min']:>6.1f} | {r['cpu_per_q']:>7.2f} | {r['peak_mib']:>8.0f} | "
            f"{r['ideal_s']:>7.1f} | {r['floor_s']:>11.1f} | {r['wall_s']:>7.1f} | "
            f"{r['ratio']:>5.2f} | {top_stages(r['stages'])} | {top_waits(r['waits'])} |"
            + (f" ({r['errors']} questions failed)" if r["errors"] else "")
            + (f" (exit code {r['exit']})" if r["exit"] else ""))  # fmt: skip


def main() -> None:
    args = options()
    work = Path(tempfile.mkdtemp(prefix="api-throughput-"))
    sides = {"new": ROOT} if "new" in args.sides else {}
    if args.baseline and "old" in args.sides:
        sides = {"old": export(args.baseline, work / "old"), **sides}
    latency = Latencies(mean_latency(args.latency), mean_latency(args.embed_latency),
                        mean_latency(args.rerank_latency))  # fmt: skip
    print(f"stand-in latency {args.latency} (mean {latency.llm:.2f} s; embeddings "
          f"{args.embed_latency}, reranks {args.rerank_latency}), bursts "
          f"{args.bursts or 'none'}; {CORES} cores; load average before: "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    header = (f"| {'recipe':<22} | {'dataset':<12} | {'conc':>4} | {'store':<5} | {'side':<4} | "
              f"{'encoders':<8} | {'q/min':>6} | "
              f"{'CPU s/q':>7} | {'peak MiB':>8} | {'ideal s':>7} | {'CPU floor s':>11} | "
              f"{'wall s':>7} | {'ratio':>5} | top stages by CPU | "
              "top waits (question time) |")  # fmt: skip
    print(header)
    print("|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|")
    grid = itertools.product(args.recipes, args.datasets, args.concurrency, args.stores,
                             args.encoders, sides.items())  # fmt: skip
    latencies = [args.latency, args.embed_latency, args.rerank_latency]
    with standin(latencies, args.bursts, work) as api_base:
        for recipe, dataset, concurrency, store, encoders, (side, code) in grid:
            runs = []
            for i in range(args.repeat):
                cell = work / f"{side}-{recipe.replace('/', '_')}-"\
                    f"{dataset.replace(':', '_')}-{concurrency}-{store}-{encoders}-{i}"  # fmt: skip
                cell.mkdir(parents=True)
                note(f"running {side} {recipe} {dataset} c={concurrency} {store} {encoders} "
                     f"#{i + 1}")  # fmt: skip
                runs.append(one_run(code, recipe, dataset, args.limit, concurrency,
                                    api_base, latency, cell, store, encoders))  # fmt: skip
            r = median_of(runs)
            print(table_row(recipe, dataset, concurrency, store, side, r, encoders), flush=True)
            if args.out is not None:
                row = {"recipe": recipe, "dataset": dataset, "side": side,
                       "concurrency": concurrency, "store": store, "latency": args.latency,
                       "encoders": encoders, "embed_latency": args.embed_latency,
                       "rerank_latency": args.rerank_latency,
                       "bursts": args.bursts, "runs": runs, "median": r}  # fmt: skip
                with args.out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
