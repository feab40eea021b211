"""The whole corpus index build, encoders included, stage by stage, on the real 2Wiki corpus.

    .venv/bin/python bench/index_build.py [--variant NAME=PATH=VALUE[,PATH=VALUE...] ...]
        [--recipe recipes/chainrag/ansint.yaml] [--sources 2wiki_hipporag_corpus dev:2wiki]
        [--graph-1m-s 342] [--out FILE] [--check-processes]
        [--standin-embed-latency fixed:0.5] [--standin-rate 3000:60]

What ``chainrag index RECIPE --corpus 2wiki_hipporag_corpus --corpus dev:2wiki`` does (23,308
sentences), once per variant, each in a fresh process into a fresh folder, side by side in one
run: seconds per stage — sentence splitting and NER (the build's one ``split`` stage, told apart
by timing the two components), embeddings, and the graph part (key entities and the edge
layers) — and the process's peak RSS. A variant is the recipe with ``--set`` changes (``base``:
none), e.g. ``two=index.splitter.processes=2,index.ner.processes=2``.

Each stage is extrapolated to 1M sentences as the README's encoder floor was: the encoders
linearly in sentences (their work is per sentence); the graph part is not linear (EC and the
k-NN search are not), so its 1M figure is bench/corpus_scale.py's measured one (``--graph-1m-s``:
342 s, the 2026-11-25 run on this machine, README), not an extrapolation. Every 1M figure is
labelled so.

With ``--standin-embed-latency`` the stand-in server runs beside the builds (in its own
process, its CPU not counted) and ``{standin}`` in a variant's changes is its URL, for a remote
embedder: ``remote=index.embedder={kind: litellm, model: openai/stand-in-embed, api_base:
'{standin}', tokens_per_minute: 1000000}`` (a change's value may hold commas inside braces).
The 1M figures then say nothing of a provider's limit: a slice's tokens fit in the first
minute's bucket of ``tokens_per_minute`` (the pacer lets a minute's tokens go at once).

``--check-processes``: the mentions (and sentences) of every variant's index compared with the
first one's, row for row: spaCy in worker processes must find what one process finds.

``--baseline REV``: each variant also built by the code of commit REV (``git archive``, its own
bench script as the worker), the two sides alternating, ``--repeat`` times each: a change's
figures beside the code before it, in one run (rows labelled ``old`` and ``new``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from api_throughput import export, standin  # noqa: E402
from helpers import note, status_mib  # noqa: E402

MILLION = 1_000_000


def worker(recipe: str, sets: list[str], sources: list[str], out: Path) -> dict[str, Any]:
    """Build the index in this process; seconds per stage and the peak RSS."""
    from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences
    from chainrag.index.corpus.indexing import build_from_recipe
    from chainrag.recipes.overrides import load_changed, parse_all

    spent = {"split": 0.0, "ner": 0.0}

    def timing(cls: Any, stage: str) -> None:
        call = cls.__call__

        def timed_call(self: Any, *args: Any) -> Any:
            start = time.perf_counter()
            try:
                return call(self, *args)
            finally:
                spent[stage] += time.perf_counter() - start

        cls.__call__ = timed_call

    timing(SpacySentences, "split")
    timing(SpacyNER, "ner")
    loaded = load_changed(recipe, parse_all(sets))
    start = time.perf_counter()
    build = build_from_recipe(loaded, sources, out)
    total = time.perf_counter() - start
    manifest = json.loads((out / "manifest.json").read_text())
    stages = manifest["stages"]
    graph = sum(s for name, s in stages.items() if name not in ("split", "embed"))
    return {
        "sentences": int(manifest["counts"]["sentences"]),
        "split_s": spent["split"],
        "ner_s": spent["ner"],
        "split_stage_s": stages["split"],
        "embed_s": stages["embed"],
        "graph_s": graph,
        "total_s": total,
        "peak_mib": status_mib("VmHWM"),
        "devices": manifest.get("devices"),
        "summary": str(build)[:200],
    }


def changes(text: str) -> list[str]:
    """A variant's ``PATH=VALUE`` changes: split at the commas outside braces and brackets."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(text + ","):
        depth += (char in "{[") - (char in "}]")
        if char == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [c for c in out if c]


def run(name: str, sets: list[str], args: argparse.Namespace, folder: Path,
        script: Path = Path(__file__)) -> dict[str, Any]:  # fmt: skip
    """One variant built by ``script``'s worker (this checkout's, or a baseline's) in a fresh
    process, into ``folder``/``name`` with a cache of its own."""
    out = folder / name
    command = [sys.executable, str(script), "--worker", str(out), args.recipe,
               json.dumps(sets), json.dumps(args.sources)]  # fmt: skip
    note(f"{name}: building {out} ({', '.join(sets) or 'the recipe as it is'})")
    env = {**os.environ, "CHAINRAG_CACHE": str(folder / f"{name}-cache"),  # a remote's store
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return row | {"variant": name, "sets": sets, "folder": str(out)}


def same_rows(a: Path, b: Path) -> dict[str, bool]:
    """Whether two indexes hold the same sentences and the same mentions, row for row."""
    out = {}
    for table, columns in (("sentences", "*"), ("mentions", "*")):
        rows = []
        for folder in (a, b):
            db = sqlite3.connect(f"file:{folder / 'corpus.sqlite'}?mode=ro", uri=True)
            rows.append(db.execute(f"SELECT {columns} FROM {table} ORDER BY rowid").fetchall())
            db.close()
        out[table] = rows[0] == rows[1]
        out[f"{table}_rows"] = len(rows[0])  # type: ignore[assignment]
    return out


def table(rows: list[dict[str, Any]], graph_1m: float) -> str:
    lines = [
        "| variant | sentences | split s | NER s | embed s | graph s | total s | peak RSS MiB "
        "| 1M: split + NER + embed, min (linear) | 1M: + graph (measured 1M), min |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        scale = MILLION / r["sentences"]
        name = f"{r['variant']} ({r['side']})" if "side" in r else r["variant"]
        encoders = (r["split_stage_s"] + r["embed_s"]) * scale / 60
        lines.append(
            f"| {name} | {r['sentences']:,} | {r['split_s']:.1f} | {r['ner_s']:.1f} | "
            f"{r['embed_s']:.1f} | {r['graph_s']:.1f} | {r['total_s']:.1f} | "
            f"{r['peak_mib']:,.0f} | {encoders:,.1f} | {encoders + graph_1m / 60:,.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipe", default=str(ROOT / "recipes" / "chainrag" / "ansint.yaml"))
    parser.add_argument("--sources", nargs="+", default=["2wiki_hipporag_corpus", "dev:2wiki"])
    parser.add_argument("--variant", action="append", default=None, metavar="NAME=SETS",
                        help="NAME=PATH=VALUE[,PATH=VALUE...]; repeatable (default: spaCy in "
                        "one process, and the recipe as it is)")  # fmt: skip
    parser.add_argument("--graph-1m-s", type=float, default=342.0)
    parser.add_argument("--out", type=Path, default=None, help="the rows as JSON")
    parser.add_argument("--keep", type=Path, default=None, help="keep the indexes here")
    parser.add_argument("--check-processes", action="store_true")
    parser.add_argument(
        "--standin-embed-latency",
        default="",
        help="start the stand-in, its embeddings answered at this pace "
        "(as chainrag standin --latency); {standin} in a variant is its URL",
    )
    parser.add_argument(
        "--standin-rate", default="", help="the stand-in's rate limit, N:WINDOW (none by default)"
    )
    parser.add_argument(
        "--baseline",
        default="",
        metavar="REV",
        help="also build each variant with commit REV's code, alternating",
    )
    parser.add_argument("--repeat", type=int, default=1, help="builds a variant and side")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        out, recipe, sets, sources = args.worker
        print(json.dumps(worker(recipe, json.loads(sets), json.loads(sources), Path(out))))
        return
    variants = args.variant or [
        "one=index.splitter.processes=1,index.ner.processes=1",
        "default=",
    ]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="index_build_"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    with contextlib.ExitStack() as stack:
        api_base = ""
        if args.standin_embed_latency:
            latencies = ["0", args.standin_embed_latency, args.standin_embed_latency]
            api_base = stack.enter_context(standin(latencies, "", folder, args.standin_rate))
        built([v.replace("{standin}", api_base) for v in variants], args, folder, rows)


def sides(args: argparse.Namespace, folder: Path) -> list[tuple[str, Path]]:
    """The code sides to build with: this checkout's worker, and ``--baseline``'s before it."""
    this = ("new", Path(__file__))
    if not args.baseline:
        return [this]
    old = export(args.baseline, folder / "baseline")
    return [("old", old / "bench" / "index_build.py"), this]


def built(resolved: list[str], args: argparse.Namespace, folder: Path,
          rows: list[dict[str, Any]]) -> None:  # fmt: skip
    """Each variant built in turn (``resolved``: with the stand-in's URL), by each code side
    alternately, ``--repeat`` times; the table printed."""
    try:
        labelled = len(code := sides(args, folder)) > 1 or args.repeat > 1
        for number, variant, (side, script) in itertools.product(
            range(args.repeat), resolved, code
        ):
            name, _, sets = variant.partition("=")
            where = f"{name}-{side}-{number}" if labelled else name
            row = run(where, changes(sets), args, folder, script) | {"variant": name}
            rows.append(row | ({"side": side, "repeat": number} if labelled else {}))
            print(table(rows[-1:], args.graph_1m_s), file=sys.stderr, flush=True)
        print(table(rows, args.graph_1m_s))
        if args.check_processes:
            for row in rows[1:]:
                same = same_rows(Path(rows[0]["folder"]), Path(row["folder"]))
                print(f"{row['variant']} against {rows[0]['variant']}: {same}")
                row["same_as_first"] = same
        if args.out:
            args.out.write_text(json.dumps(rows, indent=2) + "\n")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
