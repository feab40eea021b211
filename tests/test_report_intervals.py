"""The report's intervals: each row's F1 / EM with its 95% bootstrap interval, the paired
differences from a baseline (``--baseline``) with their interval and sign test, marked when
not beyond noise, and the plots' error bars. The hand-made runs have two questions, so the
bootstrap's outcomes can be enumerated: a resample's mean is the first score, the second, or
their mean, the first two with chance 1/4 each — far beyond the 2.5% tails — so the 95%
interval runs exactly from the lower score to the higher."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.container import BarContainer
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.errors import ChainragError
from chainrag.report import (
    Interval,
    against,
    find_runs,
    interval,
    markdown,
    paired,
    plots,
    rows_of,
    sign_test,
)
from chainrag.report.figures import dodge, f1_against_calls, f1_by_method, yerr
from chainrag.report.stats import (
    detectable,
    flip_floor,
    floor_needed,
    gain_to_pass,
    least_changes,
    questions_needed,
    rule_chance,
    z_values,
)

from .run_records import record, write_run


def stored(root: Path, dataset: str, name: str, f1s: dict[str, list[float]]) -> Path:
    """A run folder of recipe ``name`` whose question ``q{i}`` has F1 (= EM) ``f1s[v][i]``
    for each answer variant ``v``."""
    n = len(next(iter(f1s.values())))
    records = [record(f"q{i}", {v: f[i] for v, f in f1s.items()}) for i in range(n)]
    return write_run(root / dataset / name, records, dataset=dataset)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """NaiveRAG right by half on q0 and wrong on q1; ChainRAG's AnsInt right on both, its
    CxtInt right by half on both."""
    stored(tmp_path, "musique", "naive", {"naive": [0.5, 0.0]})
    stored(tmp_path, "musique", "ansint", {"ansint": [1.0, 1.0], "cxtint": [0.5, 0.5]})
    return tmp_path


# --------------------------------------------------------------------------- the statistics


def test_interval_of_equal_scores_is_that_score() -> None:
    assert interval([0.3] * 7) == Interval(pytest.approx(30.0), pytest.approx(30.0))


def test_interval_of_two_scores_runs_from_one_to_the_other() -> None:
    assert interval([0.0, 1.0]) == Interval(0.0, 100.0)
    assert interval([0.25, 0.75], resamples=500, seed=7) == Interval(25.0, 75.0)


def test_interval_is_the_seeded_percentile_bootstrap() -> None:
    """The interval is the 2.5th / 97.5th percentiles of the means of resamples drawn by
    numpy's generator seeded with 0: recomputed here step by step."""
    scores = [0.0, 0.2, 1.0, 0.6, 0.0, 1.0, 0.5]
    draws = np.random.default_rng(0).integers(0, 7, size=(10_000, 7))
    means = np.asarray(scores)[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    assert interval(scores) == Interval(float(100 * low), float(100 * high))
    assert interval(scores) == interval(list(scores))  # the same every time
    assert interval(scores, seed=1) != interval(scores)


def test_interval_refuses_no_scores_or_no_resamples() -> None:
    with pytest.raises(ValueError, match="no scores: an interval needs one question at least"):
        interval([])
    with pytest.raises(ValueError, match="resamples must be 1 or more, got 0"):
        interval([1.0], resamples=0)


def test_the_paired_difference_is_the_interval_of_the_differences() -> None:
    """One bootstrap for both: ``paired`` is :func:`interval` of other − base."""
    base, other = [0.0, 0.5, 1.0, 0.2, 0.0], [1.0, 0.5, 0.0, 0.6, 1.0]
    p = paired(base, other)
    spread = interval([b - a for a, b in zip(base, other, strict=True)])
    assert (p.low, p.high) == (spread.low, spread.high)
    assert (p.better, p.worse, p.same, p.p_sign) == (3, 1, 1, sign_test(3, 1))
    assert not p.beyond_noise
    assert paired([0.0, 0.5], [0.5, 1.0]).beyond_noise  # +50 on both: [+50, +50]


def test_power_is_the_normal_formula_for_paired_differences() -> None:
    """n = ((z_{1-a/2} + z_{1-b}) sd / delta)^2 and its inverse, at 80% power, two-sided 5%."""
    z_alpha, z_power = z_values()
    assert (round(z_alpha, 4), round(z_power, 4)) == (1.96, 0.8416)
    assert questions_needed(37.0, 3.0) == 1194  # ((1.95996 + 0.84162) x 37 / 3)^2 = 1193.9
    assert questions_needed(37.0, -3.0) == 1194 and questions_needed(0.0, 3.0) == 2
    assert abs(detectable(37.0, 90) - 2.801585 * 37.0 / 90**0.5) < 1e-5
    assert detectable(37.0, questions_needed(37.0, 3.0)) <= 3.0 < detectable(37.0, 1193)
    with pytest.raises(ValueError, match="delta"):
        questions_needed(37.0, 0.0)


def test_a_paired_difference_carries_its_spread_and_power() -> None:
    base, other = [0.0, 0.5, 1.0, 0.2, 0.0], [1.0, 0.5, 0.0, 0.6, 1.0]
    p = paired(base, other)
    diff = 100 * (np.array(other) - np.array(base))
    assert p.sd is not None and abs(p.sd - diff.std(ddof=1)) < 1e-9
    assert p.detectable == detectable(p.sd, 5) > flip_floor(5) and not p.floor_binds
    assert p.needed(3.0) == questions_needed(p.sd, 3.0)
    one, flat = paired([0.0], [1.0]), paired([0.2, 0.4], [0.7, 0.9])
    assert (one.sd, one.detectable, one.needed(3.0)) == (None, None, None)
    assert flat.detectable == flip_floor(2) and flat.floor_binds  # every difference +50: SD 0
    assert flat.needed(3.0) == floor_needed(3.0)


def test_the_bootstrap_leaves_0_out_from_the_fewest_concordant_changes() -> None:
    """k questions of n gaining 100 points, the rest unchanged: the paired interval leaves 0
    out exactly from :func:`least_changes` on, whatever the spread says."""
    for n in (30, 90):
        k = least_changes(n)
        assert k == 4
        below, at = (paired([0.0] * n, [1.0] * j + [0.0] * (n - j)) for j in (k - 1, k))
        assert not below.beyond_noise and at.beyond_noise
        assert below.detectable == flip_floor(n) > detectable(below.sd or 0.0, n)


def test_the_flip_floor_is_the_binomial_chance_of_enough_flips() -> None:
    """At the floor, P(Binomial(n, floor / 100) >= least_changes(n)) is the power, 80%."""
    from math import comb

    for n, expected in ((30, 17.62), (36, 14.79), (90, 6.04)):
        p, k = flip_floor(n) / 100, least_changes(n)
        chance = 1 - sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k))
        assert abs(chance - 0.8) < 1e-9 and round(flip_floor(n), 2) == expected
    assert floor_needed(3.0) == 183 and flip_floor(183) <= 3.0 < flip_floor(182)
    # Below 9 questions fewer changes suffice, so the floor is not monotone there: the fewest
    # questions for a difference are those from which on it stays within reach.
    assert flip_floor(8) < 50.0 < flip_floor(9) and floor_needed(50.0) == 10
    with pytest.raises(ValueError, match="delta"):
        floor_needed(0.0)


def test_the_pre_registered_rule_passes_a_true_goal_at_most_half_the_time() -> None:
    """Interval above 0 and estimate >= +3: a true +3 passes with chance 1/2 once n is large
    (6.9% at n = 36 and SD 37.9); :func:`gain_to_pass` is the true gain passing with 80%."""
    assert rule_chance(37.9, 1255, 3.0, 3.0) == 0.5
    assert abs(rule_chance(37.9, 36, 3.0, 3.0) - 0.0688) < 1e-4
    for n in (36, 1255):
        assert abs(rule_chance(37.9, n, gain_to_pass(37.9, n, 3.0), 3.0) - 0.8) < 1e-9


def test_the_analysis_package_uses_the_reports_statistics() -> None:
    from chainrag.analysis import paired as analysis_paired
    from chainrag.analysis import sign_test as analysis_sign_test

    assert analysis_paired is paired and analysis_sign_test is sign_test


# --------------------------------------------------------------------------- the tables


def test_rows_carry_their_intervals(runs: Path) -> None:
    ansint, cxtint, naive = (row for run in find_runs([runs]) for row in rows_of(run))
    assert (naive.run, naive.f1, naive.f1_ci, naive.em_ci) == (
        "naive",
        25.0,
        Interval(0.0, 50.0),
        Interval(0.0, 50.0),
    )
    assert (ansint.f1, ansint.f1_ci) == (100.0, Interval(100.0, 100.0))
    assert (cxtint.f1, cxtint.f1_ci) == (50.0, Interval(50.0, 50.0))


def test_report_prints_each_mean_with_its_interval(runs: Path) -> None:
    text = markdown(find_runs([runs]))
    assert "[95%] = the 95% bootstrap interval of the mean over the questions (10,000" in text
    assert "| method | LLM | n | F1 [95%] | EM [95%] |" in text
    assert "| NaiveRAG | qwen2.5-coder-1.5b | 2 | 25.00 [0.0, 50.0] | 25.00 [0.0, 50.0] |" in text
    assert "| ChainRAG (AnsInt) | qwen2.5-coder-1.5b | 2 | 100.00 [100.0, 100.0] |" in text
    assert "Paired differences" not in text  # no baseline named


def test_differences_from_a_baseline_are_pinned(runs: Path) -> None:
    """AnsInt − NaiveRAG is +0.5 and +1.0 per question: [+50, +100], beyond noise, 2 better,
    p = 2 / 2² = 0.5; CxtInt − NaiveRAG is 0 and +0.5: [0, +50], spans 0, marked. Both
    spreads are 35.4 points: (1.96 + 0.84) x 35.4 / √2 = 70.0, below the flip floor at n = 2
    (89.4: both answers must flip), which is what they could detect."""
    text = markdown(find_runs([runs]), baselines=["naive"])
    assert "Paired differences against the baseline, `naive`:" in text
    assert ("| ChainRAG (AnsInt) | NaiveRAG | 2 | +75.00 [+50.0, +100.0] | 89.4 ‡ | 2 / 0 / 0 "
            "| 0.500 |") in text  # fmt: skip
    assert ("| ChainRAG (CxtInt) | NaiveRAG | 2 | +25.00 [+0.0, +50.0] † | 89.4 ‡ | 1 / 0 / 1 "
            "| 1.000 |") in text  # fmt: skip
    assert "† the interval spans 0: not beyond noise." in text
    assert "detectable Δ: the smallest true difference these questions detect with 80%" in text
    planned = markdown(find_runs([runs]), baselines=["naive"], detect=50.0)
    assert "| Δ F1 [95%] | detectable Δ (80%) | n for Δ 50 | better / worse / same |" in planned
    # (2.8 x 35.4 / 50)² = 4, but 50 points are within the flip floor's reach from 10 on
    assert "| +75.00 [+50.0, +100.0] | 89.4 ‡ | 10 | 2 / 0 / 0 |" in planned
    with pytest.raises(ChainragError, match="the difference to detect must be above 0"):
        markdown(find_runs([runs]), baselines=["naive"], detect=-1.0)
    table = text.split("Paired differences")[1].split("the paper's Table 1")[0]
    assert "| NaiveRAG | NaiveRAG |" not in table  # never against itself
    # The differences come before the paper's reference table, under ours.
    assert (
        text.index("| NaiveRAG | qwen2.5")
        < text.index("Paired differences")
        < text.index("the paper's Table 1")
    )


def test_a_baseline_with_two_answers_pairs_its_own_with_its_primary(runs: Path) -> None:
    found = against(find_runs([runs]), "ansint")
    assert [(a.run, a.variant, a.base_variant) for a in found] == [
        ("ansint", "cxtint", "ansint"),  # its second answer against its first
        ("naive", "naive", "ansint"),  # no "naive" answer in the baseline: its primary
    ]
    text = markdown(find_runs([runs]), baselines=["ansint"])
    assert "| NaiveRAG | ChainRAG (AnsInt) | 2 | -75.00 [-100.0, -50.0] | 89.4 ‡ | 0 / 2 / 0 |" in (
        text
    )
    assert "| ChainRAG (CxtInt) | ChainRAG (AnsInt) | 2 | -50.00 [-50.0, -50.0] |" in text


def test_ablations_pair_the_same_answer(runs: Path) -> None:
    stored(runs, "musique", "no_graph", {"ansint": [0.0, 1.0], "cxtint": [0.5, 0.5]})
    text = markdown(find_runs([runs]), baselines=["ansint"])
    ablations = text.split("### musique: Ablations")[1]
    assert "| ChainRAG (AnsInt), no_graph | ChainRAG (AnsInt) | 2 | -50.00 [-100.0, +0.0] †" in (
        ablations
    )
    assert "| ChainRAG (CxtInt), no_graph | ChainRAG (CxtInt) | 2 | +0.00 [+0.0, +0.0] †" in (
        ablations
    )


def test_each_dataset_takes_the_first_baseline_it_has(runs: Path) -> None:
    stored(runs, "pooled:musique", "vanilla", {"vanilla": [0.0, 0.0]})
    stored(runs, "pooled:musique", "tree", {"tree": [1.0, 0.0]})
    stored(runs, "2wiki", "iter_retgen", {"iter_retgen": [1.0]})
    text = markdown(find_runs([runs]), baselines=["naive", "vanilla"])
    pooled = text.split("## pooled:musique")[1].split("## ")[0]
    assert "Paired differences against the baseline, `vanilla`:" in pooled
    assert ("| Tree retrieval (Patwa et al.) | Vanilla RAG, 4 passages (Patwa et al.) | 2 | +50.00 "
            "[+0.0, +100.0] † | 140.1 | 1 / 0 / 1 | 1.000 |") in pooled  # fmt: skip
    wiki = text.split("## 2wiki")[1].split("## ")[0]
    assert "No paired differences: no run here is named naive or vanilla." in wiki


def test_an_unknown_baseline_is_an_error_listing_the_names(runs: Path) -> None:
    with pytest.raises(ChainragError, match=r"baseline 'nave': no run of that name among these "
                       r"runs \(their names: ansint, naive\)"):  # fmt: skip
        markdown(find_runs([runs]), baselines=["naive", "nave"])


def test_report_command_takes_baselines(runs: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["report", str(runs), "--baseline", "naive", "--no-plots"])
    assert done.exit_code == 0, done.output
    assert "| ChainRAG (AnsInt) | NaiveRAG | 2 | +75.00 [+50.0, +100.0] |" in done.output
    planned = runner.invoke(app, ["report", str(runs), "--baseline", "naive", "--no-plots",
                                  "--detect", "50"])  # fmt: skip
    assert planned.exit_code == 0 and "| 89.4 ‡ | 10 | 2 / 0 / 0 |" in planned.output
    wrong = runner.invoke(app, ["report", str(runs), "--baseline", "nope", "--no-plots"])
    assert wrong.exit_code == 1
    assert "FAIL baseline 'nope': no run of that name" in wrong.output


def test_the_report_is_the_same_byte_for_byte(tmp_path: Path) -> None:
    scores = [0.0, 0.3, 1.0, 1.0, 0.5, 0.0, 0.8, 1.0, 0.0, 0.2]
    stored(tmp_path, "musique", "naive", {"naive": scores})
    stored(tmp_path, "musique", "naive_qd", {"naive_qd": scores[::-1]})
    first = markdown(find_runs([tmp_path]), baselines=["naive"])
    assert first == markdown(find_runs([tmp_path]), baselines=["naive"])
    spread = interval(scores)
    assert f"| 10 | 48.00 [{spread.low:.1f}, {spread.high:.1f}] |" in first


# --------------------------------------------------------------------------- the plots


def test_error_bars_reach_the_interval_ends() -> None:
    assert yerr([50.0, 10.0], [Interval(40.0, 70.0), Interval(10.0, 10.0)]) == [
        [10.0, 0.0],
        [20.0, 0.0],
    ]
    assert yerr([5.0], [Interval(5.5, 9.0)]) == [[0.0], [4.0]]  # never a negative length


def test_dodge_spreads_only_equal_values() -> None:
    assert dodge([8.1, 1.0, 8.1, 8.12], 4.0) == [-4.0, 0.0, 0.0, 4.0]
    assert dodge([1.0, 2.0], 4.0) == [0.0, 0.0]


def _overlaps(fig: object, artist: object, axes: list[object]) -> bool:
    fig.canvas.draw()  # type: ignore[attr-defined]
    box = artist.get_window_extent()  # type: ignore[attr-defined]
    return any(box.overlaps(ax.get_window_extent()) for ax in axes)  # type: ignore[attr-defined]


def test_bars_draw_the_intervals_and_a_legend_off_the_axes(runs: Path) -> None:
    rows = [row for run in find_runs([runs]) for row in rows_of(run)]
    fig = f1_by_method(rows, ["musique"])
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [b.errorbar is not None for b in bars] == [True, True, True]
    segments = [b.errorbar.lines[2][0].get_segments()[0] for b in bars]
    assert sorted((float(s[0][1]), float(s[1][1])) for s in segments) == [
        (0.0, 50.0), (50.0, 50.0), (100.0, 100.0)
    ]  # fmt: skip
    assert len(ax.texts) == 0 and not _overlaps(fig, ax.get_legend(), [ax])


def test_the_scatter_draws_the_intervals_and_names_methods_in_one_legend(runs: Path) -> None:
    stored(runs, "2wiki", "naive", {"naive": [1.0, 0.0]})
    rows = [row for run in find_runs([runs]) for row in rows_of(run)]
    fig = f1_against_calls(rows, ["musique", "2wiki"])
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2 and all(len(ax.texts) == 0 for ax in axes)  # no label beside a point
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "NaiveRAG", "ChainRAG (AnsInt)", "ChainRAG (CxtInt)"
    ]  # fmt: skip
    assert not _overlaps(fig, legend, axes)
    musique = axes[0].containers
    assert len(musique) == 3 and all(c.has_yerr for c in musique)


def test_plots_are_written_with_the_intervals(runs: Path, tmp_path: Path) -> None:
    written = plots(find_runs([runs]), tmp_path / "plots")
    assert {p.name for p in written} == {"f1_by_method.png", "f1_vs_calls.png"}
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)
