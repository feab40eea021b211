"""The analysis commands ``compare``, ``walks``, ``integration-gap`` and ``claims`` (attached
to :mod:`chainrag.cli.main`): the first three read run folders through
:mod:`chainrag.analysis` and print a markdown table (a folder that is not a run, or not a run
of the right kind, is one FAIL line naming it and exit 1); ``claims`` recomputes the results
page's figures (:mod:`chainrag.claims`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chainrag.cli.common import DETECT_HELP, fail, reports_errors

OVER_HELP = (
    "Pool these dataset folders (repeat: --over docs/runs/musique --over docs/runs/2wiki): BASE "
    "and RUNS are then run names inside each of them, and the questions of all are compared "
    "together (a question never pairs across datasets)."
)
FIRST_HELP = (
    "Only each run's first N questions (of each dataset folder, in the order the run answered "
    "them): the figures of runs as they stood at N, e.g. the first 15 of runs taken on to 30."
)


@reports_errors()
def compare(
    base: Annotated[str, typer.Argument(help="The run the others are compared with (a folder).")],
    runs: Annotated[list[str], typer.Argument(help="Run folders compared with BASE.")],
    over: Annotated[
        list[Path] | None, typer.Option("--over", metavar="DATASET_DIR", help=OVER_HELP)
    ] = None,
    base_answer: Annotated[
        str | None,
        typer.Option(
            help="Compare with this one of BASE's answers (ansint, cxtint, …), or 'best': on "
            "each dataset the one with the higher mean F1 over BASE's questions (chosen after "
            "the fact: the harder baseline). RUNS are compared on --answer."
        ),
    ] = None,
    answer: Annotated[
        str | None,
        typer.Option(help="Which answer of each RUN to compare (default: its primary answer)."),
    ] = None,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    first: Annotated[int | None, typer.Option(min=1, help=FIRST_HELP)] = None,
    detect: Annotated[float | None, typer.Option("--detect", metavar="D", help=DETECT_HELP)] = None,
) -> None:
    """Is a difference between runs more than noise? Each run against BASE on the questions
    both answered, per answer variant: mean F1, the difference with its 95% paired-bootstrap
    interval, the smallest difference the comparison could detect (80% power, two-sided 5%:
    the larger of the figure from the paired differences' spread at this n and the floor
    flipped answers set, marked ‡), questions better / worse / same, and the exact sign test.

    Every answer variant both runs hold is compared (ChainRAG's ansint and cxtint); a run with
    other variants is compared on its primary answer ("cxtint vs primary"); --base-answer and
    --answer choose one pair instead. With 30 questions
    one question is 3.3 points of EM: an interval that spans 0 says the runs are not told
    apart, and a detectable difference above the one hoped for says they could not have been.
    """
    from chainrag.analysis import compare_runs

    found = compare_runs(base, runs, over=over or (), base_answer=base_answer, answer=answer,
                         resamples=resamples, seed=seed, first=first, detect=detect)  # fmt: skip
    typer.echo(found.markdown())


GOLD_HELP = (
    "Also split the walks by where the question's missing gold paragraphs were: at the walk's "
    "seeds, or not (where the walk had to go on), with how many went past the first hop and "
    "reached one; reads the questions' indexes from the index cache."
)
BUILD_HELP = "With --gold: build an index missing from the cache (loads the recipe's models)."
LIST_HELP = (
    "With --gold: then one row per walk without the missing gold at its seeds (the question, the "
    "sub-question as searched, hops, the judge's verdicts and scores, whether it reached a "
    "missing gold paragraph, the sub-answer), to read why a walk stopped."
)

SHARED_HELP = (
    "Count only the questions every run answered (the ones compare pairs), e.g. a full run "
    "beside one of its first 15 questions."
)
WALKS_FIRST_HELP = (
    "Count only each run's first N questions (in the order it answered them), as compare "
    "--first does; with --shared, those of them every run answered."
)


@reports_errors()
def walks(
    runs: Annotated[list[Path], typer.Argument(help="ChainRAG run folders.")],
    gold: Annotated[bool, typer.Option("--gold", help=GOLD_HELP)] = False,
    build_index: Annotated[bool, typer.Option("--build-index", help=BUILD_HELP)] = False,
    listing: Annotated[bool, typer.Option("--list", help=LIST_HELP)] = False,
    shared: Annotated[bool, typer.Option("--shared", help=SHARED_HELP)] = False,
    first: Annotated[int | None, typer.Option(min=1, help=WALKS_FIRST_HELP)] = None,
) -> None:
    """What ChainRAG's graph walks did, one row per run: sub-questions per question, rewrites
    (and how many changed the text), the sufficiency judge's verdicts, walks by hops, words
    per walk, sub-questions not answered.

    A walk is one sub-question's expansion (seeds, then hops until the judge says "yes", the
    word budget is spent or nothing new is reachable); "unread" counts judge replies that were
    neither yes nor no (read as "no"), within "no".
    """
    from chainrag.analysis.walks import shared_questions, walks_table

    if build_index and not gold:
        raise fail("--build-index applies to --gold only", 2)
    if listing and not gold:
        raise fail("--list applies to --gold only", 2)
    only = shared_questions(runs, first) if shared else None
    typer.echo(walks_table(runs, only, first))
    if gold:
        from chainrag.analysis.gold_walks import gold_walks_table

        typer.echo("")
        typer.echo(gold_walks_table(runs, build_index=build_index, listing=listing, only=only,
                                    first=first,
                                    progress=lambda line: typer.echo(line, err=True)))  # fmt: skip


@reports_errors()
def integration_gap(
    run: Annotated[Path, typer.Argument(help="A ChainRAG run folder (AnsInt and CxtInt).")],
    right: Annotated[float, typer.Option(help="F1 at which an answer counts as right.")] = 0.5,
    listing: Annotated[bool, typer.Option("--list", help="One line per question too.")] = False,
) -> None:
    """Where AnsInt and CxtInt part ways: the run's questions counted by which integration is
    right and whether a sub-answer already holds the gold answer.

    A question CxtInt gets right and AnsInt wrong with no sub-answer holding the gold answer
    puts the gap down to the sub-answers; with one that holds it, to AnsInt's final call.
    """
    from chainrag.analysis import integration_gap as split

    typer.echo(split(run, right=right).markdown(listing=listing))


CLAIMS_CHECK_HELP = (
    "Write nothing: compare the claims file with the figures the repository's runs give, and "
    "the page's figures with the claims file, and exit 1 naming each that differs."
)


@reports_errors()
def claims(
    root: Annotated[
        Path, typer.Option(help="The repository's root (docs/runs, docs/probes, … under it).")
    ] = Path("."),
    out: Annotated[
        Path | None, typer.Option(help="The claims file (default: ROOT/docs/claims.json).")
    ] = None,
    page: Annotated[
        Path | None,
        typer.Option(help="The page its figures are written into (default: ROOT/docs/results.md)."),
    ] = None,
    check: Annotated[bool, typer.Option("--check", help=CLAIMS_CHECK_HELP)] = False,
) -> None:
    """Recompute every figure of docs/results.md's claims page from the stored runs, probes
    and reports into docs/claims.json (paired differences as compare gives them, with the
    difference each could detect), then write them into the page between its markers
    (<!--c:FORMAT:PATH-->figure<!--/c-->); --check compares instead of writing."""
    import json

    from chainrag.claims import CLAIMS_FILE, PAGE, differences, document, stale_page, write
    from chainrag.claims import write_page as fill_page

    path, shown = out or root / CLAIMS_FILE, page or root / PAGE
    if not check:
        typer.echo(f"written to {write(root, path)}")
        typer.echo(f"figures written into {fill_page(path, shown)}")
        return
    if not path.exists():
        raise fail(f"{path}: no claims file (make it with chainrag claims)")
    on_page = stale_page(path, shown)
    found = differences(json.loads(path.read_text(encoding="utf-8")), document(root))
    for line in [*found, *on_page]:
        typer.echo(line)
    typer.echo(f"{path}: " + (f"{len(found)} figure(s) differ from what the runs give"
                              if found else "every figure as the runs give it"))  # fmt: skip
    typer.echo(f"{shown}: " + (f"{len(on_page)} figure(s) differ from {path}"
                               if on_page else f"every figure as {path} gives it"))  # fmt: skip
    if found or on_page:
        raise fail("regenerate with chainrag claims")
