"""The report's PNG plots: :func:`plots` draws each of them from the report's rows, one
function per figure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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


def f1_by_method(main: Sequence[Row], datasets: Sequence[str]) -> Any:
    """One bar per method a dataset has, grouped by dataset; a method keeps its colour (None
    without rows)."""
    if not main:
        return None
    plt = _pyplot()
    labels = list(dict.fromkeys(r.label for r in main))
    palette = [plt.get_cmap("tab20")(i) for i in range(20)]
    colour = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(main) + 4), 4))
    x, ticks, named = 0, [], set()
    for d in datasets:
        here = sorted((r for r in main if r.dataset == d), key=lambda r: labels.index(r.label))
        first = x
        for r in here:
            ax.bar(x, r.f1, 0.8, color=colour[r.label],
                   label=None if r.label in named else r.label)  # fmt: skip
            named.add(r.label)
            x += 1
        ticks.append(((first + x - 1) / 2, d))
        x += 1  # a gap between datasets
    ax.set_xticks([t for t, _ in ticks], [d for _, d in ticks])
    ax.set_ylabel("F1 (%)")
    ax.set_title("F1 by method and dataset")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def f1_against_calls(shown: Sequence[Row], datasets: Sequence[str]) -> Any:
    """F1 against LLM calls per question, one panel per dataset (three to a row, shared axes),
    so that the labels of one dataset's methods do not land on another's (None without rows)."""
    on_plot = [d for d in datasets if any(r.dataset == d for r in shown)]
    if not on_plot:
        return None
    cols = min(3, len(on_plot))
    lines = -(-len(on_plot) // cols)
    fig, axes = _pyplot().subplots(lines, cols, figsize=(4.8 * cols, 3.6 * lines), sharex=True,
                                   sharey=True, squeeze=False)  # fmt: skip
    for i, ax in enumerate(axes.flat):
        if i >= len(on_plot):
            ax.set_visible(False)
            continue
        points = [r for r in shown if r.dataset == on_plot[i]]
        ax.scatter([r.calls for r in points], [r.f1 for r in points])
        for r in points:
            ax.annotate(r.label, (r.calls, r.f1), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")  # fmt: skip
        ax.set_title(on_plot[i], fontsize=9)
        ax.grid(alpha=0.3)
        if i % cols == 0:
            ax.set_ylabel("F1 (%)")
        if i + cols >= len(on_plot):  # the lowest panel of its column
            ax.set_xlabel("LLM calls per question")
    fig.suptitle("F1 against LLM calls")
    return fig


def ablation_bars(ablation: Sequence[Row]) -> Any:
    """F1 and EM of the full method and each ablation, per dataset and integration, like the
    paper's Figures 4–5 (None without rows)."""
    if not ablation:
        return None
    names = ["full", *[a for a in ABLATIONS if any(r.run == a for r in ablation)]]
    ablated = list(dict.fromkeys(r.dataset for r in ablation))
    groups = [(d, v) for d in ablated for v in ("ansint", "cxtint")]
    n = {d: max(r.n for r in ablation if r.dataset == d) for d in ablated}
    width = 0.8 / len(names)
    fig, axes = _pyplot().subplots(1, 2, figsize=(10, 4))
    for ax, metric in zip(axes, ("f1", "em"), strict=True):
        for i, name in enumerate(names):
            runs_named = ("ansint", "cxtint") if name == "full" else (name,)
            values = [
                next((getattr(r, metric) for r in ablation if r.run in runs_named
                      and r.dataset == d and r.variant == v), 0.0)
                for d, v in groups
            ]  # fmt: skip
            ax.bar([x + i * width for x in range(len(groups))], values, width,
                   label=name.replace("no_", "w/o "))  # fmt: skip
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))],
                      [f"{d} (n={n[d]})\n{PRETTY[v][10:-1]}" for d, v in groups],
                      fontsize=7)  # fmt: skip
        ax.set_ylabel(f"{metric.upper()} (%)")
        ax.set_title(f"Ablations, {metric.upper()} (cf. the paper's Figures 4–5)")
    axes[0].legend(fontsize=7)
    return fig


def k_sweep(sweep: Sequence[Row]) -> Any:
    """F1 against k seed sentences, a line per dataset and answer, like the paper's Figure 7
    (None without rows)."""
    if not sweep:
        return None
    fig, ax = _pyplot().subplots(figsize=(6, 4))
    for dataset, variant in dict.fromkeys((r.dataset, r.variant) for r in sweep):
        curve = sorted((int(r.run[1:]), r.f1) for r in sweep
                       if r.dataset == dataset and r.variant == variant)  # fmt: skip
        ax.plot(*zip(*curve, strict=True), marker="o", label=f"{dataset} {variant}")
    ax.set_xlabel("k seed sentences")
    ax.set_ylabel("F1 (%)")
    ax.set_title("F1 against k (cf. the paper's Figure 7)")
    ax.legend(fontsize=8)
    return fig


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return path
