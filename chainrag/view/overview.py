"""The page's first two views: the overview (per dataset, the methods side by side, as
``chainrag report`` scores them, and the report's plots) and the list of questions with every
run's answers, which the page's script filters.

The overview's columns are :data:`COLUMNS`, one :class:`Column` each: a column more (an
interval, say) is one entry more.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence

import attrs

from chainrag.report.runs import Comparison, Row, rows_of
from chainrag.report.stats import Interval
from chainrag.view.answered import Question
from chainrag.view.html import el, esc, num


@attrs.frozen
class Column:
    """A column of the overview's tables: its header, its cell for a row, and whether it holds
    a number (right-aligned)."""

    header: str
    cell: Callable[[Row], str]
    numeric: bool = True


def recall_column(key: str) -> Column:
    """The column of one Recall@k / Hit@k score (``recall@5`` -> ``R@5``)."""
    header = key.replace("recall", "R").replace("hit", "Hit")
    return Column(header, lambda r: num(r.recall.get(key, math.nan), 1))


def recall_columns(rows: Sequence[Row]) -> list[Column]:
    """One column per Recall@k / Hit@k the rows hold."""
    return [recall_column(k) for k in dict.fromkeys(k for r in rows for k in r.recall)]


def interval(spread: Interval) -> str:
    """A 95% bootstrap interval as the report prints it: ``[28.1, 56.2]``."""
    return f"[{num(spread.low, 1)}, {num(spread.high, 1)}]"


COLUMNS: tuple[Column, ...] = (
    Column("method", lambda r: esc(r.label), numeric=False),
    Column("n", lambda r: f"{r.n}" + (f" (+{r.failed} failed)" if r.failed else "")),
    Column("F1", lambda r: num(r.f1)),
    Column("F1 95%", lambda r: interval(r.f1_ci)),
    Column("EM", lambda r: num(r.em)),
    Column("EM 95%", lambda r: interval(r.em_ci)),
)
"""The columns before Recall@k; :data:`AFTER_RECALL` follow it."""

AFTER_RECALL: tuple[Column, ...] = (
    Column("calls/q", lambda r: num(r.calls, 1)),
    Column("tokens/q", lambda r: num(r.tokens, 0)),
    Column("s/q", lambda r: num(r.seconds, 1)),
)


def table(rows: Sequence[Row]) -> str:
    """The rows as an HTML table with :data:`COLUMNS`, the rows' Recall@k, then
    :data:`AFTER_RECALL`."""
    columns = [*COLUMNS, *recall_columns(rows), *AFTER_RECALL]
    head = "".join(el("th", esc(c.header)) for c in columns)
    body = "".join(
        el("tr", "".join(el("td", c.cell(r), class_="num" if c.numeric else None) for c in columns))
        for r in rows
    )
    return el("table", el("thead", el("tr", head)) + el("tbody", body), class_="overview")


def overview(tables: Sequence[Comparison], plots: Mapping[str, str], notes: Sequence[str]) -> str:
    """The overview view: notes (runs not shown and why), one table per dataset and group,
    then the plots (name -> a ``data:`` URI)."""
    parts = [el("h2", "Overview")]
    if notes:
        parts.append(el("ul", "".join(el("li", esc(n)) for n in notes), class_="notes"))
    parts.append(
        el(
            "p",
            "Rates in %; calls, tokens and seconds per question; R@k: recall of the "
            "gold evidence in the first k units retrieved. Each table is scored on the "
            "questions all its runs answered, as <code>chainrag report</code> scores "
            "it.",
            class_="meta",
        )
    )
    for t in tables:
        rows = [row for run in t.runs for row in rows_of(run)]
        if not rows:
            continue
        title = t.dataset if t.group == "main" else f"{t.dataset}: {t.group}"
        parts.append(el("h3", esc(title)) + table(rows))
    for name, uri in plots.items():
        parts.append(
            el("figure", f'<img src="{uri}" alt="{esc(name)}">' + el("figcaption", esc(name)))
        )
    return el("section", "\n".join(parts), class_="view", id="overview")


# --------------------------------------------------------------------------- the list


@attrs.frozen
class Method:
    """A run's answer variant as the list's filters name it: ``key`` (``run/variant``), its
    label and the datasets it answered."""

    key: str
    label: str
    datasets: tuple[str, ...]


def methods_of(questions: Sequence[Question]) -> list[Method]:
    """Every run-variant among the questions, in order of first appearance."""
    found: dict[str, tuple[str, list[str]]] = {}
    for q in questions:
        for a in q.answered:
            for variant in a.record.answers:
                key = f"{a.key}/{variant}"
                _, datasets = found.setdefault(key, (a.labels.get(variant, key), []))
                if q.dataset not in datasets:
                    datasets.append(q.dataset)
    return [Method(k, label, tuple(ds)) for k, (label, ds) in found.items()]


def _results(question: Question) -> dict[str, list[float]]:
    """run/variant -> [EM, F1] of one question, for the list's filters."""
    return {
        f"{a.key}/{variant}": [scored.em, scored.f1]
        for a in question.answered
        for variant, scored in a.record.answers.items()
    }


def _chips(question: Question) -> str:
    chips = []
    for a in question.answered:
        for variant, scored in a.record.answers.items():
            right = "right" if scored.em == 1.0 else "partly" if scored.f1 > 0 else "wrong"
            label = a.labels.get(variant, variant)
            chips.append(
                el(
                    "span",
                    f"{esc(scored.text) or '∅'} <b>{num(scored.f1)}</b>",
                    class_=f"chip {right}",
                    data_method=f"{a.key}/{variant}",
                    title=f"{label}: F1 {num(scored.f1)}, EM {num(scored.em)}",
                )
            )
    return " ".join(chips)


def question_row(question: Question) -> str:
    """One question's row in the list; its ``data-`` attributes feed the filters."""
    record = question.first
    answers = " ".join(
        t for a in question.answered for t in (s.text for s in a.record.answers.values())
    )
    text = " ".join([record.question, *record.gold, answers, question.qid]).lower()
    cells = [
        el("td", esc(question.dataset)),
        el("td", el("a", esc(record.question), href=f"#{question.anchor}")),
        el("td", esc(record.gold[0] if record.gold else "")),
        el("td", _chips(question), class_="chips"),
    ]
    return el(
        "tr",
        "".join(cells),
        class_="qrow",
        data_dataset=question.dataset,
        data_text=text,
        data_results=json.dumps(_results(question)),
        data_target=question.anchor,
    )


def _select(name: str, label: str, options: Sequence[tuple[str, str]]) -> str:
    body = "".join(el("option", esc(text), value=value) for value, text in options)
    return el("label", esc(label) + " " + el("select", body, id=name, name=name))


def question_list(questions: Sequence[Question]) -> str:
    """The questions view: the filters, then one row per question."""
    datasets = list(dict.fromkeys(q.dataset for q in questions))
    methods = methods_of(questions)
    method_options = [(m.key, f"{m.label} [{', '.join(m.datasets)}]") for m in methods]
    filters = [
        _select("f-dataset", "dataset", [("", "all"), *((d, d) for d in datasets)]),
        _select("f-method", "method", [("", "any"), *method_options]),
        _select(
            "f-outcome",
            "answer",
            [("", "any"), ("right", "right (EM 1)"), ("wrong", "wrong (EM 0)")],
        ),
        _select("f-versus", "disagrees with", [("", "–"), *method_options]),
        el(
            "label",
            "search " + el("input", type="search", id="f-text", placeholder="question, answer, id"),
        ),
        el("span", "", id="f-count", class_="count"),
    ]
    head = el("tr", "".join(el("th", h) for h in ("dataset", "question", "gold", "answers (F1)")))
    rows = "\n".join(question_row(q) for q in questions)
    return el(
        "section",
        el("h2", "Questions")
        + el(
            "p",
            "Right / wrong applies to the chosen method (any method when none is "
            "chosen); “disagrees with” keeps the questions where one of the two methods "
            "is right and the other not.",
            class_="meta",
        )
        + el("form", "".join(filters), class_="filters", id="filters")
        + el(
            "table", el("thead", head) + el("tbody", rows), class_="questions", id="question-list"
        ),
        class_="view",
        id="questions",
    )
