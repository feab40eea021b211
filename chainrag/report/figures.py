"""The report's PNG plots: :func:`plots` draws each of them from the report's rows, one
function per figure. Every F1 and EM is drawn with its 95% bootstrap interval (the rows'
:class:`~chainrag.report.stats.Interval`) as an error bar, and methods are told apart by a
legend outside the axes, never by labels placed beside the marks, so that no text overlaps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chainrag.report.paper import ABLATION_LABELS
from chainrag.report.runs import (
    ABLATIONS,
    GROUPS,
    MAIN_RECIPES,
    PRETTY,
    SEED_LABELS,
    Row,
    Run,
    comparisons,
    rows_of,
)
from chainrag.report.stats import Interval


def plots(runs: Sequence[Run], folder: Path, *, common: bool = True) -> list[Path]:
    """PNG plots in ``folder``: F1 by method and dataset, F1 against LLM calls per question,
    and — where ablation or k-sweep runs exist — bars like the paper's Figures 4–5 and a line
    like its Figure 7, each from the rows of its table in :func:`markdown` (with ``common``,
    on the questions that table's runs have in common). Returns the files written."""
    grouped: dict[str, list[Row]] = {group: [] for group in GROUPS}
    for table in comparisons(runs, common=common):
        grouped[table.group].extend(row for run in table.runs for row in rows_of(run))
    rows = [row for group in GROUPS for row in grouped[group]]
    if not rows:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    datasets = list(dict.fromkeys(r.dataset for r in rows))
    main = [r for r in grouped["main"] if r.run in MAIN_RECIPES or r.run in SEED_LABELS]
    shown = grouped["main"] or rows  # the ablations and the k sweep have their own plots
    figures: list[tuple[str, Callable[[], Any]]] = [
        ("f1_by_method.png", lambda: f1_by_method(main, datasets)),
        ("f1_vs_calls.png", lambda: f1_against_calls(shown, datasets)),
        ("ablations.png", lambda: ablation_bars(grouped["ablations"])),
        ("k_sweep.png", lambda: k_sweep(grouped["k sweep"])),
    ]
    written = []
    for name, draw in figures:  # each drawn and saved (and closed) before the next
        if (fig := draw()) is not None:
            written.append(_save(fig, folder / name))
    return written


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def yerr(means: Sequence[float], spreads: Sequence[Interval]) -> list[list[float]]:
    """Matplotlib's asymmetric error bars: each mean's distance to its interval's ends (never
    below 0)."""
    return [[max(0.0, m - s.low) for m, s in zip(means, spreads, strict=True)],
            [max(0.0, s.high - m) for m, s in zip(means, spreads, strict=True)]]  # fmt: skip


def dodge(values: Sequence[float], step: float) -> list[float]:
    """An offset for each value (in points) spreading equal values (to 0.1) ``step`` apart
    around 0, so that marks at the same place do not hide each other."""
    groups: dict[float, list[int]] = {}
    for i, value in enumerate(values):
        groups.setdefault(round(value, 1), []).append(i)
    out = [0.0] * len(values)
    for members in groups.values():
        for rank, i in enumerate(members):
            out[i] = step * (rank - (len(members) - 1) / 2)
    return out


def _shift(container: Any, points: float, fig: Any) -> None:
    """Move what an ``errorbar`` call drew ``points`` to the right on the page, after the axes
    took its data into their limits."""
    from matplotlib.transforms import ScaledTranslation

    offset = ScaledTranslation(points / 72, 0, fig.dpi_scale_trans)
    for artist in container.get_children():
        artist.set_transform(artist.get_transform() + offset)


MARKERS = "osD^vP*Xh<>p"


def _styles(labels: Sequence[str], colours: str = "tab20") -> dict[str, tuple[Any, str]]:
    """A colour (of the qualitative map ``colours``) and a marker per label, kept across
    panels and datasets; with tab10's ten colours, the marker tells the 11th label from the
    1st."""
    cmap = _pyplot().get_cmap(colours)
    return {label: (cmap(i % cmap.N), MARKERS[i % len(MARKERS)])
            for i, label in enumerate(labels)}  # fmt: skip


def f1_by_method(main: Sequence[Row], datasets: Sequence[str]) -> Any:
    """One bar per method a dataset has, with its 95% interval, grouped by dataset; a method
    keeps its colour, named in the legend (None without rows)."""
    if not main:
        return None
    plt = _pyplot()
    labels = list(dict.fromkeys(r.label for r in main))
    style = _styles(labels)
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(main) + 4), 4))
    x, ticks, named = 0, [], set()
    for d in datasets:
        here = sorted((r for r in main if r.dataset == d), key=lambda r: labels.index(r.label))
        first = x
        for r in here:
            ax.bar(x, r.f1, 0.8, color=style[r.label][0], yerr=yerr([r.f1], [r.f1_ci]),
                   capsize=2, error_kw={"elinewidth": 0.8, "ecolor": "0.2"},
                   label=None if r.label in named else r.label)  # fmt: skip
            named.add(r.label)
            x += 1
        ticks.append(((first + x - 1) / 2, d))
        x += 1  # a gap between datasets
    ax.set_xticks([t for t, _ in ticks], [d for _, d in ticks], fontsize=8)
    ax.set_ylabel("F1 (%), 95% interval")
    ax.set_title("F1 by method and dataset")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def f1_against_calls(shown: Sequence[Row], datasets: Sequence[str]) -> Any:
    """F1 (with its 95% interval) against LLM calls per question, one panel per dataset (three
    to a row, shared axes), a method a colour and marker named in one legend; marks of equal
    calls are drawn a few points apart (a ChainRAG run's two answers share their calls) (None
    without rows)."""
    on_plot = [d for d in datasets if any(r.dataset == d for r in shown)]
    if not on_plot:
        return None
    style = _styles(list(dict.fromkeys(r.label for r in shown)), "tab10")  # no pale colours
    cols = min(3, len(on_plot))
    lines = -(-len(on_plot) // cols)
    fig, axes = _pyplot().subplots(lines, cols, figsize=(4.2 * cols, 3.4 * lines), sharex=True,
                                   sharey=True, squeeze=False)  # fmt: skip
    handles: dict[str, Any] = {}
    for i, ax in enumerate(axes.flat):
        if i >= len(on_plot):
            ax.set_visible(False)
            continue
        points = [r for r in shown if r.dataset == on_plot[i]]
        for r, dx in zip(points, dodge([r.calls for r in points], 5.0), strict=True):
            colour, marker = style[r.label]
            handles[r.label] = ax.errorbar(r.calls, r.f1, yerr=yerr([r.f1], [r.f1_ci]),
                                           fmt=marker, color=colour, markersize=5, capsize=2,
                                           elinewidth=0.8)  # fmt: skip
            _shift(handles[r.label], dx, fig)
        ax.set_title(on_plot[i], fontsize=9)
        ax.grid(alpha=0.3)
        if i % cols == 0:
            ax.set_ylabel("F1 (%), 95% interval")
        if i + cols >= len(on_plot):  # the lowest panel of its column
            ax.set_xlabel("LLM calls per question")
    named = [label for label in style if label in handles]
    fig.legend([handles[label] for label in named], named, fontsize=7, loc="center left",
               bbox_to_anchor=(1.0, 0.5))  # fmt: skip
    fig.suptitle("F1 against LLM calls")
    return fig


MEASURES: tuple[tuple[str, Callable[[Row], tuple[float, Interval]]], ...] = (
    ("f1", lambda r: (r.f1, r.f1_ci)),
    ("em", lambda r: (r.em, r.em_ci)),
)
"""A row's measures, each by its name: the mean and its 95% interval."""


def ablation_bars(ablation: Sequence[Row]) -> Any:
    """F1 and EM (with their 95% intervals) of the full method and each ablation, per dataset
    and integration, like the paper's Figures 4–5; an ablation with no row for a group has no
    bar there (None without rows)."""
    if not ablation:
        return None
    names = ["full", *[a for a in ABLATIONS if any(r.run == a for r in ablation)]]
    ablated = list(dict.fromkeys(r.dataset for r in ablation))
    groups = [(d, v) for d in ablated for v in ("ansint", "cxtint")]
    n = {d: max(r.n for r in ablation if r.dataset == d) for d in ablated}
    width = 0.8 / len(names)
    fig, axes = _pyplot().subplots(1, 2, figsize=(10, 4.2))
    for ax, (metric, measure) in zip(axes, MEASURES, strict=True):
        for i, name in enumerate(names):
            runs_named = ("ansint", "cxtint") if name == "full" else (name,)
            found = [(x, r) for x, (d, v) in enumerate(groups) for r in ablation
                     if r.run in runs_named and r.dataset == d and r.variant == v]  # fmt: skip
            values = [measure(r)[0] for _, r in found]
            spreads = [measure(r)[1] for _, r in found]
            ax.bar([x + i * width for x, _ in found], values, width, yerr=yerr(values, spreads),
                   capsize=1.5, error_kw={"elinewidth": 0.7, "ecolor": "0.2"},
                   label=ABLATION_LABELS.get(name, name))  # fmt: skip
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))],
                      [f"{d} (n={n[d]})\n{PRETTY[v][10:-1]}" for d, v in groups],
                      fontsize=7)  # fmt: skip
        ax.set_ylabel(f"{metric.upper()} (%), 95% interval")
        ax.set_title(f"Ablations, {metric.upper()} (cf. the paper's Figures 4–5)", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="upper center", ncol=len(names),
               bbox_to_anchor=(0.5, 0.0))  # fmt: skip
    return fig


def k_sweep(sweep: Sequence[Row]) -> Any:
    """F1 (with its 95% interval) against k seed sentences, a line per dataset and answer,
    like the paper's Figure 7; the lines are drawn a few points apart so that their error bars
    do not hide each other (None without rows)."""
    if not sweep:
        return None
    fig, ax = _pyplot().subplots(figsize=(6, 4))
    curves = list(dict.fromkeys((r.dataset, r.variant) for r in sweep))
    for (dataset, variant), dx in zip(curves, dodge([0.0] * len(curves), 4.0), strict=True):
        points = sorted((int(r.run[1:]), r) for r in sweep
                        if r.dataset == dataset and r.variant == variant)  # fmt: skip
        f1s = [r.f1 for _, r in points]
        drawn = ax.errorbar([k for k, _ in points], f1s,
                            yerr=yerr(f1s, [r.f1_ci for _, r in points]), marker="o",
                            capsize=2, elinewidth=0.8, label=f"{dataset} {variant}")  # fmt: skip
        _shift(drawn, dx, fig)
    ax.set_xticks(sorted({int(r.run[1:]) for r in sweep}))
    ax.set_xlabel("k seed sentences")
    ax.set_ylabel("F1 (%), 95% interval")
    ax.set_title("F1 against k (cf. the paper's Figure 7)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # legends outside the axes included
    _pyplot().close(fig)
    return path
