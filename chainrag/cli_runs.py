"""The ``chainrag run`` and ``chainrag report`` commands (attached to :mod:`chainrag.cli`)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from chainrag.data import POOLED
from chainrag.errors import ChainragError, Interrupted, signal_name

DATASET_HELP = (
    "musique, hotpotqa, 2wiki (dev sets); pooled:NAME for a dev set over one pool of all its "
    "questions' passages (seed 002's shared store); or longbench:PATH for a LongBench jsonl file."
)
CONCURRENCY_HELP = (
    "Questions in flight at once (default: the recipe's llm.concurrency); LLM requests stay "
    "at 1 for the local server."
)
ALL_QUESTIONS_HELP = (
    "Score each run on all of its questions, not only on those every run of the dataset answered."
)
INDEX_HELP = (
    "Answer every question over this prebuilt corpus index (chainrag index ... --out DIR; the "
    "shared-corpus setting) instead of over its own passages; runs go to "
    "OUT/<dataset>@<corpus sources>/. Retrieval is scored against the gold passages' titles."
)
PLOTS_HELP = (
    "Folder for the PNG plots (default: plots/ beside --out, else inside the first run "
    "folder given)."
)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.secho(f"FAIL {message}", fg="red", err=True)
    return typer.Exit(code)


def check_cache_mode(cache_mode: str) -> None:
    """Exit 2 with a clear message unless ``cache_mode`` is one the LLM cache knows."""
    if cache_mode not in ("use", "bypass", "refresh"):
        raise _fail(f"--cache-mode must be use, bypass or refresh, not {cache_mode!r}", 2)


def dataset_slug(dataset: str) -> str:
    """The run folder name of a dataset: its name, ``pooled-<name>`` or ``longbench-<stem>``."""
    if dataset.startswith(POOLED):
        return "pooled-" + dataset.removeprefix(POOLED)
    if dataset.startswith("longbench:"):
        return "longbench-" + Path(dataset.removeprefix("longbench:")).stem
    return dataset


def run_slug(dataset: str, shared: Any = None) -> str:
    """The folder of a dataset's runs; over a corpus index ``DATASET@CORPUS`` (the corpus named
    by its sources, so that runs over a graph and a chunk index of one corpus sit together)."""
    if shared is None:
        return dataset_slug(dataset)
    from chainrag.corpus.store import corpus_label

    return f"{dataset_slug(dataset)}@{corpus_label(shared.manifest['sources'])}"


class _Bar:
    """A tqdm bar fed by :func:`chainrag.evaluate.run_recipe`'s progress callback."""

    def __init__(self, desc: str) -> None:
        from tqdm import tqdm

        self._tqdm = tqdm
        self._bar: Any = None
        self._desc = desc

    def __call__(self, done: int, total: int, tally: Any) -> None:
        if self._bar is None:
            self._bar = self._tqdm(total=total, initial=done, desc=self._desc, unit="q")
        self._bar.n = done
        self._bar.set_postfix(tally.postfix(), refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run(
    recipes: Annotated[list[Path], typer.Argument(help="Method recipes to run, one run each.")],
    dataset: Annotated[
        str,
        typer.Option(help=DATASET_HELP),
    ],
    limit: Annotated[
        int | None, typer.Option(min=1, help="Only the first N questions (default: all).")
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help=CONCURRENCY_HELP),
    ] = None,
    out: Annotated[Path, typer.Option(help="Runs go to OUT/<dataset>/<recipe name>/.")] = Path(
        "runs"
    ),
    cache_mode: Annotated[
        str, typer.Option(help="LLM response cache: use, bypass or refresh.")
    ] = "use",
    report: Annotated[bool, typer.Option(help="Print the report of these runs at the end.")] = True,
    index: Annotated[Path | None, typer.Option(help=INDEX_HELP)] = None,
) -> None:
    """Answer a dataset's questions with each recipe; one JSON line per question in a run
    directory. Run the same command again to continue a stopped run: finished questions are
    kept, a torn last line is repaired, only the rest is run."""
    from chainrag.data import dataset_path, load_dataset
    from chainrag.index import IndexCache
    from chainrag.llm import open_llm
    from chainrag.paths import cache_root
    from chainrag.recipe import load_recipe
    from chainrag.report import find_runs, markdown
    from chainrag.runner import check_runnable

    check_cache_mode(cache_mode)
    try:
        loaded = [(path, load_recipe(path)) for path in recipes]
        for _, recipe in loaded:
            check_runnable(recipe)
        names = [r.name for _, r in loaded]
        if len(set(names)) != len(names):
            raise _fail(f"two recipes share a name ({', '.join(names)}); each run needs its own")
        dataset_file, _ = dataset_path(dataset)
        examples = load_dataset(dataset, limit)
        _check_ids(examples, dataset)
    except ChainragError as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"{len(examples)} questions of {dataset}; {len(loaded)} recipe(s); runs in {out}/")
    groups: dict[Any, list[tuple[Path, Any]]] = {}
    for path, recipe in loaded:
        groups.setdefault(recipe.llm, []).append((path, recipe))
    folders, failed = [], 0
    index_cache = IndexCache()
    try:
        with sigterm_as_interrupt():
            for spec, members in groups.items():
                managed = spec.kind == "local_gguf"
                width = concurrency or spec.concurrency
                if managed and width > 1:
                    typer.echo(f"note: {width} questions in flight, 1 LLM request at a time")
                if managed:
                    typer.echo(f"starting the local {spec.model} server…")
                with open_llm(spec, cache_path=cache_root() / "llm-cache.sqlite",
                              cache_mode=cache_mode) as llm:  # type: ignore[arg-type]  # fmt: skip
                    for path, recipe in members:
                        shared = _open_shared(recipe, index) if index else None
                        folder = out / run_slug(dataset, shared) / recipe.name
                        folders.append(folder)
                        result = _run_one(
                            recipe, path, folder, dataset, dataset_file, examples, llm,
                            width=width, slots=1 if managed else width, cache=index_cache,
                            shared=shared,
                        )  # fmt: skip
                        failed += result.failed
    except ChainragError as exc:
        raise _fail(
            f"{exc}\n(finished questions are kept; run the same command to resume)"
        ) from None
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM outside a recipe's questions
        raise _interrupted(signal_name(exc)) from None
    if report:
        typer.echo("")
        typer.echo(markdown(find_runs(folders)))
    if failed:
        raise _fail(f"{failed} question(s) failed (see errors.jsonl in the run directories); "
                    "run the same command again to retry them")  # fmt: skip


def _open_shared(recipe: Any, folder: Path) -> Any:
    """The corpus index at ``folder`` as ``recipe`` searches it; its ``index:`` must be the one
    the index was built with."""
    from chainrag.corpus.build import index_digest
    from chainrag.corpus.store import CorpusIndex, CorpusIndexError, read_manifest

    manifest = read_manifest(folder)
    if recipe.index is None or index_digest(recipe.index) != manifest["recipe_digest"]:
        raise CorpusIndexError(
            f"recipe {recipe.name!r}: its index: section is not the one {folder} was built with "
            f"({manifest['recipe_digest']}); build an index with this recipe (chainrag index "
            "--recipe ... --out ...) or run a recipe with that index: section"
        )
    weights = recipe.retrieval.edge_weights if recipe.retrieval else None
    return CorpusIndex.open(folder, recipe.index.embedder, weights or None)


def _run_one(
    recipe: Any, path: Path, folder: Path, dataset: str, dataset_file: Path,
    examples: Sequence[Any], llm: Any, *, width: int, slots: int, cache: Any, shared: Any = None,
) -> Any:  # fmt: skip
    """Run one recipe into ``folder`` and record the session's end, interrupted or not."""
    from chainrag.evaluate import run_recipe
    from chainrag.runs import RunDir, locked

    with locked(folder):
        run_dir = RunDir(folder)
        about = _index_identity(shared) if shared is not None else None
        run_dir.start(recipe, path, dataset, dataset_file, index=about)
        bar = _Bar(f"{folder.parent.name}/{recipe.name}")
        try:
            result = run_recipe(
                recipe, examples, run_dir, llm, concurrency=width, llm_slots=slots,
                cache=cache, index=shared, progress=bar,
            )  # fmt: skip
        finally:
            bar.close()
        run_dir.finish_session(result.summary())
    _say_result(folder, result)
    if result.interrupted:
        raise _interrupted(result.interrupted)
    return result


def _index_identity(shared: Any) -> dict[str, Any]:
    m = shared.manifest
    keys = ("recipe_digest", "sources", "corpus_sha256", "counts")
    return {"folder": str(shared.folder)} | {k: m[k] for k in keys}


def _interrupted(name: str) -> typer.Exit:
    typer.secho(f"\ninterrupted ({name}): finished questions are kept; run the same command "
                "to resume", fg="yellow", err=True)  # fmt: skip
    return typer.Exit(128 + signal.Signals[name].value)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`~chainrag.errors.Interrupted`, a
    KeyboardInterrupt, so it ends a run as Ctrl-C does (a managed server is stopped by its
    ``with`` block either way)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _check_ids(examples: Sequence[Any], dataset: str) -> None:
    from chainrag.data import DatasetError

    seen: set[str] = set()
    if examples and not any(e.passages for e in examples):
        raise DatasetError(
            f"{dataset}: its questions carry no passages of their own (a shared-corpus set); "
            "runs answer each question over its own passages"
        )
    for example in examples:
        if example.qid in seen:
            raise DatasetError(f"{dataset}: question id {example.qid!r} occurs twice; "
                               "runs key their lines by question id")  # fmt: skip
        seen.add(example.qid)


def _say_result(folder: Path, result: Any) -> None:
    parts = [f"{result.answered} answered"]
    if result.skipped:
        parts.append(f"{result.skipped} already done")
    if result.failed:
        parts.append(f"{result.failed} failed")
    if result.torn_bytes:
        parts.append(f"torn last line repaired ({result.torn_bytes} bytes)")
    typer.echo(f"{folder}: {', '.join(parts)} in {result.seconds:.0f} s")


def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or folders holding runs.")],
    out: Annotated[Path | None, typer.Option(help="Also write the markdown to this file.")] = None,
    plots: Annotated[
        Path | None,
        typer.Option(help=PLOTS_HELP),
    ] = None,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Skip the plots.")] = False,
    all_questions: Annotated[
        bool,
        typer.Option("--all-questions", help=ALL_QUESTIONS_HELP),
    ] = False,
) -> None:
    """Tables per dataset comparing runs (F1, EM, Recall@k, calls, tokens, seconds per
    question) beside the paper's Table 1, and PNG plots."""
    from chainrag.report import find_runs, markdown
    from chainrag.report import plots as draw

    try:
        found = find_runs(runs)
    except ChainragError as exc:
        raise _fail(str(exc)) from None
    text = markdown(found, common=not all_questions)
    typer.echo(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"written to {out}")
    if not no_plots:
        folder = plots or ((out.parent / "plots") if out is not None else runs[0] / "plots")
        for path in draw(found, folder, common=not all_questions):
            typer.echo(f"plot: {path}")
