"""The scripts under scripts/ (the analyses moved to chainrag.analysis: tests/test_analysis.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from chainrag.run.record import ScoredAnswer

ROOT = Path(__file__).resolve().parent.parent


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_site_packages_check_reads_content_not_only_names(tmp_path: Path) -> None:
    """A .pth named as an expected one but holding other code, an unknown .pth with code, and
    sitecustomize/usercustomize are all refused; plain paths and setuptools' own lines pass."""
    check = _script("check_site_packages")
    site_dir, elsewhere = tmp_path / "site", tmp_path / "path"
    site_dir.mkdir()
    elsewhere.mkdir()
    shim = (
        "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') "
        "== 'local'; enabled and __import__('_distutils_hack').add_shim(); \n"
    )
    (site_dir / "distutils-precedence.pth").write_text(shim)
    (site_dir / "__editable__.chainrag-0.1.0.pth").write_text(
        "import __editable___chainrag_0_1_0_finder; __editable___chainrag_0_1_0_finder.install()\n"
    )
    (site_dir / "plain.pth").write_text("# a comment\n/opt/somewhere\nrelative/dir\n\n")
    assert check.problems([str(site_dir)], []) == []
    (site_dir / "distutils-precedence.pth").write_text(shim + "import os; os.system('curl x')\n")
    (site_dir / "litellm_init.pth").write_text("import base64; exec(base64.b64decode('...'))\n")
    (elsewhere / "sitecustomize.py").write_text("print('hi')\n")
    (site_dir / "usercustomize.py").write_text("")
    found = check.problems([str(site_dir)], [str(elsewhere)])
    assert len(found) == 4, found
    assert any("distutils-precedence.pth, line 2" in p for p in found)
    assert any("litellm_init.pth, line 1" in p for p in found)
    assert sum("customize.py" in p for p in found) == 2


def test_by_rule_from_traces_derives_the_rule_from_a_runs_stored_sub_answers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """long:2wiki's ChainRAG run: the rule decides 9 comparisons from the stored sub-answers and
    turns 5 of CxtInt's wrong answers right (docs/results.md, compare_by_rule)."""
    script = _script("by_rule_from_traces")
    assert script.main([str(ROOT / "docs" / "runs" / "long-2wiki" / "ansint")]) == 0
    out = capsys.readouterr().out
    assert "| 30 | 9 | 40.24 | 56.90 | +16.67 | [+3.3, +30.0] | 5 / 0 / 25 | 0.062 |" in out
    assert "Kaaka Muttai or En Sømand Går I Land? → 'En Sømand Går I Land'" in out


def test_by_rule_from_traces_refuses_unchanged_questions_the_rule_reads() -> None:
    script = _script("by_rule_from_traces")
    run = str(ROOT / "docs" / "runs" / "long-2wiki" / "ansint")
    with pytest.raises(SystemExit, match=r"2wiki\[0:2\]: 1 question\(s\) the rule may decide"):
        script.main([run, "--unchanged", "2wiki[0:2]"])


def test_by_rule_from_traces_refuses_to_derive_what_a_rule_decomposer_asks_otherwise() -> None:
    """compare_roles_by_rule decomposes "Which film has the director born earlier, A or B?" by
    rule, so its answer there must come from its own run, not ansint's trace."""
    script = _script("by_rule_from_traces")
    run = str(ROOT / "docs" / "runs" / "long-2wiki" / "ansint")
    with pytest.raises(SystemExit, match=r"decomposed by rule in compare_roles_by_rule"):
        script.main([run, "--ran", "compare_roles_by_rule"])


def test_by_rule_from_traces_reads_a_rule_decomposers_own_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """compare_roles_by_rule's held-out test on long:2wiki[60:82] (docs/results.md): its run's
    answers where it decomposed by rule, derived from ansint's trace elsewhere."""
    script = _script("by_rule_from_traces")
    run = ROOT / "docs" / "runs" / "long-2wiki-60-82" / "ansint"
    assert script.main([str(run), "--ran", "compare_roles_by_rule"]) == 0
    out = capsys.readouterr().out
    assert "| 22 | 9 | 35.23 | 67.05 | +31.82 | [+13.6, +50.0] | 7 / 0 / 15 | 0.016 |" in out
    assert "Love In A Fallen City (Film) or Mummy'S Boys? → \"Mummy'S Boys\"" in out


def test_selector_screen_scores_each_choice_against_cxtint_on_the_committed_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/results.md's screen of choosing between ChainRAG's answers: the oracle's bound and
    the LLM-free rules, from the three long sets' runs."""
    script = _script("selector_screen")
    assert script.main(["--runs", str(ROOT / "docs" / "runs")]) == 0
    out = capsys.readouterr().out
    assert "| CxtInt (ChainRAG) | 36.58 | 40.24 | 41.19 | 39.34 |  |  |" in out
    assert "| oracle (reads the gold; a bound) | 42.91 | 53.57 | 51.19 | 49.23 | +9.89" in out
    assert "| agrees with the last sub-answer | 35.56 | 42.62 | 39.52 | 39.23 | -0.10" in out


def test_selector_screen_names_a_set_that_is_not_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script("selector_screen")
    assert script.main(["--runs", str(tmp_path), "--sets", "long-musique"]) == 2
    err = capsys.readouterr().err
    assert "long-musique/ansint" in err and "predictions.jsonl" in err


def test_selector_screen_votes_for_ansint_only_where_the_baseline_agrees_with_it() -> None:
    """Two of three agreeing, after normalisation; a lone AnsInt, or all three apart, is CxtInt."""
    script = _script("selector_screen")
    record = SimpleNamespace(
        answers={"cxtint": ScoredAnswer("Paris", 0, 0), "ansint": ScoredAnswer("Lyon", 0, 0)}
    )
    choose = script.vote("naive")
    assert choose(record, script.Known({"naive": "lyon."})) == "Lyon"
    assert choose(record, script.Known({"naive": "Paris"})) == "Paris"
    assert choose(record, script.Known({"naive": "Nice"})) == "Paris"
    assert choose(record, script.Known({})) == "Paris"


def test_selector_screen_takes_ansint_only_where_its_answer_alone_is_in_the_evidence() -> None:
    """The grounded choice: whole normalised words of the retrieved text, AnsInt only where
    CxtInt's answer is not there too; no evidence text is an error, not CxtInt."""
    script = _script("selector_screen")

    def record(ans: str, cxt: str) -> SimpleNamespace:
        answers = {"ansint": ScoredAnswer(ans, 0, 0), "cxtint": ScoredAnswer(cxt, 0, 0)}
        return SimpleNamespace(id="q1", answers=answers)

    evidence = "the lyon team played in paris on 12 october 2015"
    assert script.occurs("The Lyon team.", evidence)
    assert not script.occurs("Lyo", evidence) and not script.occurs("", evidence)
    known = script.Known({}, evidence)
    assert script.grounded(record("Lyon", "Nice"), known) == "Lyon"
    assert script.grounded(record("Lyon", "Paris"), known) == "Paris"
    assert script.grounded(record("Nice", "Marseille"), known) == "Marseille"
    assert script.grounded(record("12 October 2015", "2015-10-12"), known) == "12 October 2015"
    with pytest.raises(ValueError, match="q1: no evidence"):
        script.grounded(record("Lyon", "Nice"), script.Known({}))


def test_selector_screen_grounded_names_the_question_whose_index_is_not_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--grounded reads the indexes ChainRAG searched; an empty index cache without
    --build-index stops with the run folder, the question and the way to build it."""
    script = _script("selector_screen")
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path))
    runs = ROOT / "docs" / "runs"
    assert script.main(["--runs", str(runs), "--sets", "long-musique", "--grounded"]) == 2
    err = capsys.readouterr().err
    assert str(runs / "long-musique" / "ansint") in err and "question " in err
    assert "not in the index cache" in err and "run again with --build-index" in err
    with pytest.raises(SystemExit):
        script.main(["--build-index"])
    assert "--build-index applies to --grounded only" in capsys.readouterr().err


def _margins_on_dev(run: str, capsys: pytest.CaptureFixture[str]) -> str:
    """selector_screen.py --margins RUN over the committed dev runs: what it prints."""
    assert _script("selector_screen").main(["--runs", str(ROOT / "docs" / "runs"),
                                            "--margins", run]) == 0  # fmt: skip
    return capsys.readouterr().out


def test_selector_screen_margins_rechoose_a_verify_run_and_name_the_best_margin(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--margins on the committed dev runs: margin 0 is the run's own choice (42.56 pooled, as
    docs/results.md's "A third try" says), larger margins take AnsInt less often, and the last
    line names the margin with the highest pooled F1."""
    out = _margins_on_dev("one_hop_choose_verify", capsys)
    assert "| CxtInt (one_hop) | 36.58 | 36.90 | 41.19 | 38.23 |" in out
    assert "| margin 0 | 39.58 | 48.57 | 39.52 | 42.56 | +4.33" in out
    taken = [int(line.rsplit("|", 2)[1]) for line in out.splitlines() if "| margin " in line]
    assert len(taken) == 13 and taken == sorted(taken, reverse=True) and taken[0] == 19
    assert "90 questions, P(yes) asked on 47" in out and out.rstrip().endswith(": 0.05")


def test_selector_screen_margins_weigh_a_calibrated_run_by_the_rise_it_weighed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--margins on the calibrated dev run re-chooses from the rises its raw lines say, not
    from the P(yes) with the passages: its own margin, 0.1, gives the run's 41.93 (docs/results.md,
    "A fifth try"), and margin 0 differs from the uncalibrated run's (42.56)."""
    out = _margins_on_dev("one_hop_choose_verify_calibrated_margin", capsys)
    assert "| margin 0.1 | 34.36 | 45.24 | 46.19 | 41.93 | +3.70" in out
    assert "| margin 0 | 37.36 | 48.57 | 49.52 | 45.15 |" in out


def test_selector_screen_margin_takes_ansint_only_that_far_ahead() -> None:
    script = _script("selector_screen")
    q = script.Weighed(cxtint=0.0, ansint=1.0, chosen=0.5, shares=(0.5, 0.6))
    assert [q.f1(m) for m in (0.0, 0.05, 0.1, 0.2)] == [1.0, 1.0, 0.0, 0.0]
    assert script.Weighed(0.0, 1.0, 0.5, None).f1(0.0) == 0.5  # no P(yes): the run's own answer


def test_selector_screen_margins_name_a_pairs_run_that_chose_from_other_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script("selector_screen")
    runs = ROOT / "docs" / "runs"
    args = ["--runs", str(runs), "--sets", "long-musique", "--margins", "one_hop_choose_verify"]
    assert script.main([*args, "--pairs", "naive"]) == 2
    err = capsys.readouterr().err
    assert "long-musique/naive: no cxtint and ansint answers" in err
    assert script.main([*args, "--pairs", "no_graph"]) == 2
    assert "the two runs did not make the same requests" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main([*args, "--grounded"])
    assert "give one" in capsys.readouterr().err


FINAL_TEST = ROOT / "scripts" / "final_test.sh"


def final_test(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """scripts/final_test.sh with ``args``, run with a stand-in ``chainrag`` that logs its
    arguments: the script's result and the ``chainrag`` commands it gave."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    stand_in = bin_dir / "chainrag"
    stand_in.write_text(f'#!/usr/bin/env bash\necho "$*" >> {log}\n')
    stand_in.chmod(0o755)
    env = {"BIN": str(bin_dir), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["bash", str(FINAL_TEST), *args], capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip
    return done, log.read_text().splitlines() if log.exists() else []


def test_the_final_test_runs_chainrag_then_the_frozen_recipe_and_compares_pooled(
    tmp_path: Path,
) -> None:
    """scripts/final_test.sh (issue 49, item 3): per set given, ChainRAG anew then the frozen
    recipe replaying its requests over ``long:NAME:FILE``, then the pooled comparisons over the
    folders those runs make."""
    from chainrag.data.names import dataset_slug

    mine = tmp_path / "my.questions.jsonl"
    hotpot = tmp_path / "hp.json"
    mine.write_text("{}\n")
    hotpot.write_text("[]\n")
    out = tmp_path / "out"
    done, calls = final_test(tmp_path, "--hotpotqa", str(hotpot), "--musique", str(mine),
                             "--out-dir", str(out), "--not-frozen")  # fmt: skip
    assert done.returncode == 0, done.stderr
    frozen = "recipes/variants/one_hop_choose_probabilities.yaml"
    musique, hotpotqa = f"long:musique:{mine}", f"long:hotpotqa:{hotpot}"
    assert calls[:4] == [
        f"run recipes/chainrag/ansint.yaml --dataset {musique} --out-dir {out} "
        "--cache-mode refresh --no-report",
        f"run {frozen} --dataset {musique} --out-dir {out} --cache-mode use --no-report",
        f"run recipes/chainrag/ansint.yaml --dataset {hotpotqa} --out-dir {out} "
        "--cache-mode refresh --no-report",
        f"run {frozen} --dataset {hotpotqa} --out-dir {out} --cache-mode use --no-report",
    ]
    folders = [out / dataset_slug(musique), out / dataset_slug(hotpotqa)]
    over = f"--over {folders[0]} --over {folders[1]}"
    assert calls[4:] == [
        *(f"compare ansint one_hop_choose_probabilities {over} --base-answer {base} "
          "--answer choose" for base in ("cxtint", "ansint", "best")),
        *(f"report {folder}" for folder in folders),
    ]  # fmt: skip


def test_the_final_test_refuses_bad_arguments_and_has_help(tmp_path: Path) -> None:
    for args, message in [([], "no question file given"),
                          (["--2wiki", str(tmp_path / "nope.jsonl")], "nope.jsonl: no such file"),
                          (["--limit", "3"], "unknown argument: --limit")]:  # fmt: skip
        refused, _ = final_test(tmp_path, *args)
        assert refused.returncode == 2 and message in refused.stderr
    shown, _ = final_test(tmp_path, "--help")
    assert shown.returncode == 0 and "--musique FILE --2wiki FILE --hotpotqa FILE" in shown.stdout


def test_power_floor_simulates_the_rule_compare_prints() -> None:
    """scripts/power_floor.py (docs/guide.md's evidence for the flip floor): at the floor, about
    80% of simulated comparisons whose answers flip one way leave 0 out; at the spread formula's
    figure for one changed answer in 90, about 30%; most stored changes are flips or halves."""
    script = _script("power_floor")
    from chainrag.report.stats import detectable, flip_floor

    at_floor, _ = script.simulate(script.flips(flip_floor(90) / 100, 0.0), 90, 300, 500, seed=1)
    one_change = detectable(100 / 90**0.5, 90)
    at_spread, _ = script.simulate(script.flips(one_change / 100, 0.0), 90, 300, 500, seed=1)
    assert 0.72 <= at_floor <= 0.88 and at_spread < 0.45
    sizes = [abs(c) for c in script.changes(ROOT)]
    assert len(sizes) > 500 and sum(s >= 50 for s in sizes) / len(sizes) > 0.8
