"""The whole page: runs read from their folders, grouped by dataset and question, written into
the template (``page.html`` with ``page.css`` and ``page.js`` inlined: one file that needs no
network to view).

    runs, notes = read_runs([Path("docs/runs/musique")])
    html = render(runs, notes, Examples(), Indexes())

A folder that is not a run of this version (an older format, a damaged line) is left out with
a note saying so on the page, never an error that stops the others.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path

import attrs

from chainrag.index.build import IndexCache
from chainrag.report.figures import plots as report_plots
from chainrag.report.runs import Run, comparisons, load_run, rows_of
from chainrag.run.files import RunError
from chainrag.run.folder import RUN_FILE
from chainrag.view.answered import Answered, Question
from chainrag.view.html import esc
from chainrag.view.overview import overview, question_list
from chainrag.view.question import question_section
from chainrag.view.sources import Examples, Indexes, Unavailable


def run_folders(path: Path) -> list[Path]:
    """``path`` if it is a run folder, else the run folders below it (sorted); a RunError
    naming it if it is not a folder or holds no run."""
    if not path.is_dir():
        raise RunError(f"{path}: no such run directory")
    if (path / RUN_FILE).is_file():
        return [path]
    found = sorted(p.parent for p in path.rglob(RUN_FILE))
    if not found:
        raise RunError(f"{path}: no {RUN_FILE} in it or below it")
    return found


def read_runs(paths: Iterable[Path]) -> tuple[list[Run], list[str]]:
    """The runs in ``paths`` (each a run folder or a folder holding runs), and a note for each
    folder left out: one this version cannot read (an older format), an experiment's folder
    (``chainrag experiment recurring``) or one with no answered question yet."""
    runs, notes = [], []
    for path in paths:
        for folder in run_folders(path):
            try:
                run = load_run(folder)
            except RunError as exc:
                notes.append(
                    f"{folder}: not shown — a run this version of chainrag cannot read "
                    f"(an older format?): {exc}"
                )
                continue
            if run.meta.experiment is not None:
                notes.append(
                    f"{folder}: not shown — the {run.meta.experiment} experiment's folder "
                    "(its results are its table.md)"
                )
                continue
            if not run.records:
                notes.append(f"{folder}: not shown — no answered question yet")
                continue
            runs.append(run)
    return runs, notes


def _keys(runs: Sequence[Run]) -> dict[Path, str]:
    """Each run's key in the page's filters: its name, or name@folder when its dataset has two
    runs of that name."""
    keys: dict[Path, str] = {}
    seen: set[tuple[str, str]] = set()
    for run in runs:
        mine = (run.dataset, run.name)
        keys[run.folder] = run.name if mine not in seen else f"{run.name}@{run.folder}"
        seen.add(mine)
    return keys


def questions_of(runs: Sequence[Run], examples: Examples, indexes: Indexes) -> list[Question]:
    """Every question the runs answered, dataset by dataset in the runs' order, each with every
    run's record of it."""
    keys = _keys(runs)
    labels = {run.folder: {r.variant: r.label for r in rows_of(run)} for run in runs}
    grouped: dict[tuple[str, str], list[Answered]] = {}
    first_run: dict[tuple[str, str], Run] = {}
    for run in runs:
        for record in run.records:
            at = (run.dataset, record.id)
            first_run.setdefault(at, run)
            example = examples.example(run, record.id)
            units = (
                indexes.units(run, example)
                if not isinstance(example, Unavailable)
                else Unavailable(f"the dataset cannot say which index: {example.reason}")
            )
            grouped.setdefault(at, []).append(
                Answered(keys[run.folder], run, record, labels[run.folder], units)
            )
    out = []
    for n, ((dataset, qid), answered) in enumerate(grouped.items()):
        example = examples.example(first_run[(dataset, qid)], qid)
        out.append(Question(n, dataset, qid, example, tuple(answered)))
    return out


def plot_uris(runs: Sequence[Run]) -> tuple[dict[str, str], str | None]:
    """The report's plots as ``data:`` URIs by file name, and a note when they cannot be drawn
    (matplotlib missing)."""
    try:
        with tempfile.TemporaryDirectory() as folder:
            files = report_plots(runs, Path(folder))
            return {
                f.name: "data:image/png;base64," + base64.b64encode(f.read_bytes()).decode()
                for f in files
            }, None
    except ImportError as exc:
        return {}, f"plots not drawn: {exc} (install the models extra for matplotlib)"


def _asset(name: str) -> str:
    return resources.files("chainrag.view").joinpath("assets", name).read_text(encoding="utf-8")


@attrs.frozen
class Page:
    """What :func:`render` writes, counted: questions, runs and notes."""

    html: str
    questions: int
    runs: int
    notes: tuple[str, ...]


def render(
    runs: Sequence[Run],
    notes: Sequence[str],
    examples: Examples,
    indexes: Indexes,
    *,
    plots: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Page:
    """The page for ``runs``; ``notes`` (runs left out) are shown on the overview."""
    questions = questions_of(runs, examples, indexes)
    uris, plot_note = plot_uris(runs) if plots else ({}, None)
    all_notes = [*notes, *examples.notes.values(), *([plot_note] if plot_note else [])]
    sections = []
    for i, q in enumerate(questions):
        previous = questions[i - 1].anchor if i > 0 else None
        following = questions[i + 1].anchor if i + 1 < len(questions) else None
        sections.append(question_section(q, previous, following))
        if progress is not None:
            progress(i + 1, len(questions))
    title = "chainrag runs: " + ", ".join(dict.fromkeys(r.dataset for r in runs))
    body = "\n".join(
        [overview(comparisons(runs), uris, all_notes), question_list(questions), *sections]
    )
    html = (
        _asset("page.html")
        .replace("{{title}}", esc(title))
        .replace("{{css}}", _asset("page.css"))
        .replace("{{js}}", _asset("page.js"))
        .replace("{{body}}", body)
    )
    return Page(html, len(questions), len(runs), tuple(all_notes))


def write_view(
    paths: Sequence[Path],
    out: Path,
    *,
    build_index: bool = False,
    plots: bool = True,
    cache: IndexCache | None = None,
    progress: Callable[[str], None] | None = None,
) -> Page:
    """Write the page of the runs in ``paths`` to ``out`` (``chainrag view``); a RunError
    when no folder holds a run it can show. ``build_index`` builds the indexes missing from
    the cache (loading the recipes' models); ``progress`` hears what takes time."""
    runs, notes = read_runs(paths)
    if not runs:
        raise RunError("no run to show: " + "; ".join(notes))
    indexes = Indexes(cache, build=build_index, progress=progress)
    page = render(runs, notes, Examples(), indexes, plots=plots)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page.html, encoding="utf-8")
    return page
