"""What one question's page is made of: the question with every run's record of it, its gold
evidence at the run's level, and the lists of units (sentences or chunks) with gold marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from chainrag.core.notes import MethodNotes
from chainrag.core.types import QAExample, StepTrace
from chainrag.data.metrics import GoldKey, Level
from chainrag.report.runs import Run
from chainrag.run.record import RunRecord
from chainrag.view.evidence import GoldItem, gold_cover, gold_evidence, retrieved
from chainrag.view.html import el, esc
from chainrag.view.sources import Unavailable, Units

SHOW_UNITS = 12
"""Units listed before the rest of a list folds away."""


@attrs.frozen
class Answered:
    """One run's record of a question, with what its part of the page needs.

    Attributes:
        key: The run's key in the page's filters (its name, unique per dataset).
        labels: Answer variant -> its label in the report (``ChainRAG (AnsInt)``).
        units: The index's units for this question, or why they are not shown.
    """

    key: str
    run: Run
    record: RunRecord
    labels: Mapping[str, str]
    units: Units | Unavailable

    @property
    def chain(self) -> MethodNotes | None:
        """What the record says of a method that rewrites and integrates as ChainRAG does
        (its notes with their rewriting), whose steps the page explains in full; else None."""
        notes = self.record.trace.notes
        return notes if notes is not None and notes.rewriting is not None else None


@attrs.frozen
class Question:
    """A question as the page shows it: its number on the page, the dataset's record of it
    (or why there is none) and every run's answer."""

    number: int
    dataset: str
    qid: str
    example: QAExample | Unavailable
    answered: tuple[Answered, ...]

    @property
    def first(self) -> RunRecord:
        return self.answered[0].record

    @property
    def anchor(self) -> str:
        return f"q-{self.number}"


@attrs.frozen
class Gold:
    """A question's gold evidence as one run's units cover it (``cover``: unit -> items; None
    when the units or the dataset's record are not available)."""

    level: Level
    items: tuple[GoldItem, ...]
    cover: Mapping[int, frozenset[GoldKey]] | None


def gold_for(question: Question, answered: Answered) -> Gold | None:
    """The gold evidence as ``answered``'s units cover it (None without the dataset)."""
    example = question.example
    if isinstance(example, Unavailable):
        return None
    level, items = gold_evidence(example)
    units = answered.units
    cover = None
    if isinstance(units, Units):
        cover = gold_cover(example, units.units, level, [i.key for i in items])
    return Gold(level, items, cover)


def found_items(gold: Gold, steps: Sequence[StepTrace]) -> set[GoldKey]:
    """The gold items the steps' units cover (empty without the cover)."""
    if gold.cover is None:
        return set()
    return {k for u in retrieved(steps) for k in gold.cover.get(u, ())}


# --------------------------------------------------------------------------- units


def unit_text(units: Units | Unavailable, unit: int) -> str:
    if isinstance(units, Unavailable):
        return ""
    if 0 <= unit < len(units.units):
        return units.units[unit].text
    return f"(unit {unit} is not in the index found: it has {len(units.units)})"


def unit_item(unit: int, units: Units | Unavailable, gold: Gold | None, mark: str = "") -> str:
    """One unit as a list item: its number, passage title and text; gold marked."""
    is_gold = gold is not None and gold.cover is not None and unit in gold.cover
    classes = "unit" + (" gold" if is_gold else "") + (f" {mark}" if mark else "")
    title = ""
    if isinstance(units, Units) and 0 <= unit < len(units.units):
        title = el("span", esc(units.units[unit].title), class_="title")
    star = el("span", "★", class_="star", title="gold evidence") if is_gold else ""
    note = el("span", esc(mark), class_="mark") if mark else ""
    body = f'<span class="uid">[{unit}]</span>{star}{note} {title} {esc(unit_text(units, unit))}'
    return el("li", body, class_=classes, data_unit=unit)


def unit_list(
    units_shown: Sequence[int],
    units: Units | Unavailable,
    gold: Gold | None,
    marks: Mapping[int, str] | None = None,
    what: str = "units",
) -> str:
    """The units as a list; past :data:`SHOW_UNITS` the rest folds into a ``<details>``."""
    marks = marks or {}
    items = [unit_item(u, units, gold, marks.get(u, "")) for u in units_shown]
    if isinstance(units, Unavailable):  # numbers only (and marks): one line
        shown = (f"[{u} {marks[u]}]" if u in marks else f"[{u}]" for u in units_shown)
        return el("p", esc(" ".join(shown)), class_="numbers")
    head = el("ol", "".join(items[:SHOW_UNITS]), class_="units")
    if len(items) <= SHOW_UNITS:
        return head
    n_gold = sum(1 for u in units_shown[SHOW_UNITS:] if gold and gold.cover and u in gold.cover)
    more = f"{len(items) - SHOW_UNITS} more {what}" + (f" ({n_gold} gold)" if n_gold else "")
    rest = el("ol", "".join(items[SHOW_UNITS:]), class_="units", start=SHOW_UNITS + 1)
    return head + el("details", el("summary", esc(more)) + rest, class_="more")


# --------------------------------------------------------------------------- one question
