"""The table the probe experiments print: per group of probes, their count, a few means and
the share of probes with a property (the judge said "yes", the filter kept the item)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

P = TypeVar("P")


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
    for name in groups:
        mine = [p for p in probes if group(p) == name]
        if not mine:
            continue
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
