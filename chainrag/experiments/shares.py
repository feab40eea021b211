"""The table the probe experiments print: per group of probes, their count, a few means and
the share of probes with a property (the judge said "yes", the filter kept the item)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import attrs

P = TypeVar("P")


def grouped(
    items: Sequence[P], group: Callable[[P], str], groups: Sequence[str]
) -> list[tuple[str, list[P]]]:
    """(group, its items in their order) for each of ``groups`` that has items, in that order."""
    out = []
    for name in groups:
        mine = [item for item in items if group(item) == name]
        if mine:
            out.append((name, mine))
    return out


def share_table(
    probes: Sequence[P],
    group: Callable[[P], str],
    groups: Sequence[str],
    means: Sequence[tuple[str, Callable[[P], float], str]],
    hit: Callable[[P], bool],
    header: tuple[str, str],
) -> tuple[list[str], dict[str, float]]:
    """Markdown rows, one per group that has probes, and each such group's share of hits (%).

    Args:
        group: The group of a probe; ``groups`` orders the rows.
        means: (column, value of a probe, format) for each mean column, e.g.
            ``("words", lambda p: p.words, ".0f")``.
        hit: The property whose share is the last column.
        header: The first and last column's names.
    """
    first, last = header
    lines = [
        "| " + " | ".join([first, "probes", *(name for name, _, _ in means), last]) + " |",
        "|" + "---|" * (len(means) + 3),
    ]
    rate = {}
    for name, mine in grouped(probes, group, groups):
        n = len(mine)
        rate[name] = 100 * sum(hit(p) for p in mine) / n
        cells = [f"{sum(value(p) for p in mine) / n:{spec}}" for _, value, spec in means]
        lines.append("| " + " | ".join([name, str(n), *cells, f"{rate[name]:.1f}"]) + " |")
    return lines, rate


def discrimination(rate: dict[str, float], high: str, low: str, verb: str, who: str) -> str:
    """The line that contrasts two groups' shares, e.g. ``kept(gold) − kept(distractor)``."""
    return (
        f"Discrimination, {verb}({high}) − {verb}({low}): {rate[high] - rate[low]:+.1f} points "
        f"(a perfect {who}: +100)."
    )


@attrs.frozen
class Shares(Generic[P]):
    """How a probe experiment tabulates its probes: the columns of :func:`share_table` and the
    two groups whose shares :func:`discrimination` contrasts.

    Attributes:
        group: The group of a probe; ``groups`` orders the rows.
        groups: The groups, in the order of the rows.
        means: (column, value of a probe, format) for each mean column.
        hit: The property whose share is the last column.
        header: The first and last column's names.
        contrast: (high group, low group, verb, who) for the discrimination line, e.g.
            ``("gold", "distractor", "kept", "filter")``.
    """

    group: Callable[[P], str]
    groups: tuple[str, ...]
    means: tuple[tuple[str, Callable[[P], float], str], ...]
    hit: Callable[[P], bool]
    header: tuple[str, str]
    contrast: tuple[str, str, str, str]


def probe_table(
    title: str, probes: Sequence[P], shares: Shares[P], notes: Sequence[str] = ()
) -> str:
    """A probe experiment's table: the title, the share table's rows, then a closing paragraph
    of the notes and the discrimination line (when both of its groups have probes).

    Args:
        title: The first line, e.g. ``"Sufficiency judge llm on musique (30 questions)"``.
        notes: Lines that open the closing paragraph.
    """
    rows, rate = share_table(
        probes, shares.group, shares.groups, shares.means, shares.hit, shares.header
    )
    high, low, verb, who = shares.contrast
    closing = list(notes)
    if high in rate and low in rate:
        closing.append(discrimination(rate, high, low, verb, who))
    lines = [title, "", *rows]
    if closing:
        lines.append("\n" + "\n".join(closing))
    return "\n".join(lines)
