"""Issue 19's run-side regressions: no run lost to one bad reply or one failing question, no
credential in a run's files, SIGTERM ends a run as Ctrl-C does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chainrag.core.types import LLMRequest
from chainrag.data.datasets import load_dataset
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import RunError, read_lines
from chainrag.run.folder import RunDir
from chainrag.run.session import run_recipe
from chainrag.standin.server import FakeOpenAI, serve

from .test_runs import fails_on, naive_recipe, start


def test_a_reply_with_a_lone_surrogate_is_written_and_the_run_goes_on(tmp_path: Path) -> None:
    """The reproducer: "Paris \\ud800" made the line writer raise UnicodeEncodeError, the
    run abort with nothing in errors.jsonl, and every resume crash on the cached reply."""
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 3)
    run = start(tmp_path, path, recipe)
    result = run_recipe(recipe, examples, run, ScriptedLLM({"cxtint": lambda _: "Paris \ud800"}))
    assert (result.answered, result.failed) == (3, 0)
    records, _ = read_lines(run.predictions_path, repair=False)
    assert [r["answer"] for r in records] == ["Paris \ud800"] * 3  # read back as it was


def test_a_question_that_fails_with_any_exception_is_its_own_error(tmp_path: Path) -> None:
    """Only project errors used to be caught per question: a bug in one question (here a
    KeyError from the LLM) brought the whole run down with an exception group."""
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 3)
    run = start(tmp_path, path, recipe)
    result = run_recipe(recipe, examples, run, fails_on(examples[1].question, KeyError("choices")))
    assert (result.answered, result.failed) == (2, 1)
    (error,), _ = read_lines(run.folder / "errors.jsonl", repair=False)
    assert error["id"] == examples[1].qid and error["error"] == "KeyError" and error["bug"]
    assert "KeyError: 'choices'" in error["traceback"]


def test_a_question_lost_to_a_bug_is_named_a_chainrag_bug_on_the_console(tmp_path: Path) -> None:
    """A question that fails on a bug (not a ChainragError) is said to be chainrag's, with where
    its traceback is, beside the run's line; an LLM's failure is not."""
    from chainrag.cli.runs import bug_report
    from chainrag.core.errors import LLMServerError
    from chainrag.run.jobs import JobResult

    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 3)
    run = start(tmp_path, path, recipe)
    bug = ImportError("cannot import name 'AutoModel' from 'transformers'")
    result = JobResult(
        run.folder, run_recipe(recipe, examples, run, fails_on(examples[0].question, bug))
    )
    assert "1 failed (1 on a bug in chainrag)" in result.line()
    said = bug_report([result])
    assert said.startswith("BUG 1 question(s) failed on a bug in chainrag, not a problem with")
    assert f"question {examples[0].qid}: ImportError: cannot import name 'AutoModel'" in said
    assert said.endswith(
        f"please report it with the traceback recorded in {run.folder}/errors.jsonl"
    )
    other = start(tmp_path, path, recipe, "other")
    down = fails_on(examples[0].question, LLMServerError("injected 500"))
    result = JobResult(other.folder, run_recipe(recipe, examples, other, down))
    assert result.line().count("1 failed in") == 1 and bug_report([result]) == ""


def _cli() -> list[str]:
    return [sys.executable, "-c", "from chainrag.cli.main import app; app()"]


def test_no_credential_reaches_a_run_folder(tmp_path: Path) -> None:
    """Credentials in the api_base URL would have been written to run.json and recipe.yaml."""
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        url = api_base.replace("http://", "http://alice:pw-in-url-123@")
        path, _ = naive_recipe(
            tmp_path,
            f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{url}', "
            "max_retries: 0}\n",
        )
        args = [*_cli(), "run", str(path), "--dataset", "musique", "--limit", "2",
                "--out", str(tmp_path / "runs"), "--no-report"]  # fmt: skip
        env = os.environ | {"CHAINRAG_CACHE": str(tmp_path / "cache")}
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "runs" / "musique" / "naive"
    assert len(fake.bodies) == 2
    for name in ("run.json", "recipe.yaml", "predictions.jsonl"):
        text = (folder / name).read_text()
        assert "pw-in-url-123" not in text and "alice" not in text, name
    assert "api_base: http://127.0.0.1:" in (folder / "recipe.yaml").read_text()


def test_errors_mask_any_credential_the_run_can_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masking went by name (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``) and length (>= 8):
    ``AWS_SECRET_ACCESS_KEY`` and short values got through."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "AKIA-very-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tk42")
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 1)
    run = start(tmp_path, path, recipe)

    def reply(_: LLMRequest) -> str:
        raise ValueError("auth failed for AKIA-very-secret with token tk42")

    run_recipe(recipe, examples, run, ScriptedLLM({"cxtint": reply}))
    text = (run.folder / "errors.jsonl").read_text()
    assert "AKIA-very-secret" not in text and "tk42" not in text and "auth failed" in text


def test_sigterm_ends_a_run_against_an_api_model_as_ctrl_c_does(tmp_path: Path) -> None:
    fake = FakeOpenAI([], reply="Paris", delay_s=0.2)
    with serve(fake) as api_base:
        path, _ = naive_recipe(
            tmp_path,
            f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}', "
            "max_retries: 0}\n",
        )
        args = [*_cli(), "run", str(path), "--dataset", "musique", "--limit", "30",
                "--out", str(tmp_path / "runs"), "--no-report"]  # fmt: skip
        env = os.environ | {"CHAINRAG_CACHE": str(tmp_path / "cache")}
        process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)  # fmt: skip
        predictions = tmp_path / "runs" / "musique" / "naive" / "predictions.jsonl"
        deadline = time.monotonic() + 120
        while (not predictions.exists() or predictions.read_bytes().count(b"\n") < 2) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM
    assert "interrupted" in stderr and "resume" in stderr
    meta = RunDir(predictions.parent).meta()
    last = meta.sessions[-1].end
    assert last is not None and last.interrupted == "SIGTERM" and last.answered >= 2
    assert last.finished
    assert json.loads(predictions.read_text().splitlines()[0])["id"]


def _said(path: Path, text: str, within_s: float = 120.0) -> bool:
    """Whether the file ``path`` (a process's stderr) comes to hold ``text`` within the time."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return True
        time.sleep(0.05)
    return False


def test_a_second_signal_stops_at_once_and_the_same_command_resumes(tmp_path: Path) -> None:
    """Two questions answered, then two in flight on requests that take 60 s: the first
    signal (Ctrl-C) says what it waits for and waits; the second (SIGTERM) stops the command
    at once, with no line for the two in flight; the same command then answers the four left."""
    fake = FakeOpenAI(["ok", "ok", "timeout", "timeout"], reply="Paris", hang_s=60.0)
    with serve(fake) as api_base:
        path, _ = naive_recipe(
            tmp_path,
            f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}', "
            "max_retries: 0, timeout_s: 120, concurrency: 2}\n",
        )
        args = [*_cli(), "run", str(path), "--dataset", "musique", "--limit", "6", "--out-dir",
                str(tmp_path / "runs"), "--no-report", "--concurrency", "2"]  # fmt: skip
        env = os.environ | {"CHAINRAG_CACHE": str(tmp_path / "cache")}
        stderr = tmp_path / "stderr.txt"
        with stderr.open("w") as err:
            process = subprocess.Popen(  # Ctrl-C as at a terminal, even under a background job
                args, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )  # fmt: skip
            deadline = time.monotonic() + 120
            while len(fake.bodies) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)  # the two hanging requests are in flight
            process.send_signal(signal.SIGINT)
            assert _said(stderr, "SIGINT: waiting for the 2 question(s) in flight to finish")
            assert "Ctrl-C again, or SIGTERM, to stop now" in stderr.read_text()
            before = stderr.read_text().split("SIGINT: waiting")[0]
            assert "musique/naive:" in before and before.endswith(("\r", "\n"))  # not on the bar
            time.sleep(1.0)
            assert process.poll() is None  # it waits, as said
            second = time.monotonic()
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        stopped_s = time.monotonic() - second
        said = stderr.read_text()
        assert process.returncode == 128 + signal.SIGTERM, said
        assert stopped_s < 20, said  # not the 60 s the requests in flight would take
        assert "SIGTERM: stopped now; 2 question(s) in flight left unanswered" in said
        folder = tmp_path / "runs" / "musique" / "naive"
        assert len((folder / "predictions.jsonl").read_text().splitlines()) == 2
        assert not (folder / "errors.jsonl").read_text()
        last = RunDir(folder).meta().sessions[-1].end
        assert last is not None and (last.interrupted, last.answered) == ("SIGTERM", 2)
        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    lines = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and len({line["id"] for line in lines}) == 6
    assert len(fake.bodies) == 8  # the 2 answered, the 2 abandoned, then the 4 left


def test_a_signals_notice_is_a_line_of_its_own_beside_a_progress_bar(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from chainrag.core.progress import Progress
    from chainrag.run.interrupts import notice

    with Progress("q") as bars:
        bars("musique/naive", 2, 6, {"F1": "50.0"})
        notice("SIGINT: waiting for the 2 question(s) in flight to finish")
    err = capsys.readouterr().err
    before, _, after = err.partition("SIGINT: waiting")
    assert "2/6" in before and before.endswith(("\r", "\n")) and "2/6" not in after.split("\n")[0]


def test_connection_refused_is_the_connection_error_the_readme_names(tmp_path: Path) -> None:
    from chainrag.core.errors import LLMConnectionError
    from chainrag.core.types import Message
    from chainrag.llm.backend import LiteLLMBackend, RetryPolicy
    from chainrag.llm.server import free_port

    backend = LiteLLMBackend(
        api_base=f"http://127.0.0.1:{free_port()}/v1", api_key="x", retry=RetryPolicy(0)
    )
    request = LLMRequest(messages=(Message("user", "hi"),), prompt_id="t", model="openai/m")
    with pytest.raises(LLMConnectionError):
        backend.complete(request)


def test_a_crash_is_told_apart_from_a_refused_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both used to exit 1: a refused input still does, a bug exits 70 and says so."""
    import chainrag.cli.main as cli
    from chainrag.core import heap

    def crash() -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli, "app", crash)
    monkeypatch.setattr(cli, "long_lived", lambda: None)  # this process goes on
    monkeypatch.setattr(heap, "_command", False)  # entry() marks it: put back after the test
    with pytest.raises(SystemExit) as stopped:
        cli.entry()
    assert stopped.value.code == cli.INTERNAL_ERROR == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "INTERNAL ERROR: ZeroDivisionError is a bug" in err
    refused = subprocess.run(
        [*_cli_entry(), "run", "no-such-recipe.yaml", "--dataset", "musique"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 1 and "FAIL" in refused.stderr


def test_the_command_leaves_what_is_alive_at_its_end_to_the_os(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether it ends, stops or crashes, ``chainrag`` freezes the heap first
    (core/heap.py): the interpreter's last collection then walks none of it. A process that
    calls chainrag's functions and goes on keeps its collector as it was."""
    import gc

    from chainrag.cli import main as cli
    from chainrag.core import heap

    def crash() -> None:
        raise ZeroDivisionError("division by zero")

    def stop() -> None:
        raise SystemExit(2)

    gc.unfreeze()
    heap.long_lived()
    assert gc.get_freeze_count() == 0  # not the command's process: nothing frozen
    monkeypatch.setattr(heap, "_command", False)  # put back after the test
    try:
        for command, code in ((lambda: None, None), (stop, 2), (crash, cli.INTERNAL_ERROR)):
            gc.unfreeze()
            monkeypatch.setattr(cli, "app", command)
            if code is None:
                cli.entry()
            else:
                with pytest.raises(SystemExit) as stopped:
                    cli.entry()
                assert stopped.value.code == code
            assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def _cli_entry() -> list[str]:
    return [sys.executable, "-c", "from chainrag.cli.main import entry; entry()"]


def test_a_run_made_before_components_gained_parameters_still_resumes(tmp_path: Path) -> None:
    """docs/runs/2wiki/ansint was written before EC and SS gained parameters (their defaults
    keep the paper's behaviour): its digest differs, its recipe does not."""
    import shutil

    from chainrag.data.datasets import dataset_path
    from chainrag.recipes.recipe import load_recipe
    from chainrag.run.meta import recipe_digest

    from .conftest import ROOT

    folder = tmp_path / "ansint"
    shutil.copytree(ROOT / "docs" / "runs" / "2wiki" / "ansint", folder)
    recipe = load_recipe(ROOT / "recipes" / "chainrag" / "ansint.yaml")
    run = RunDir(folder)
    assert run.meta().recipe_digest != recipe_digest(recipe)
    file, _ = dataset_path("2wiki")
    run.start(recipe, ROOT / "recipes" / "chainrag" / "ansint.yaml", "2wiki", file)
    other = load_recipe(ROOT / "recipes" / "ablations" / "no_ec.yaml")
    with pytest.raises(RunError, match="another recipe"):
        run.start(other, ROOT / "recipes" / "ablations" / "no_ec.yaml", "2wiki", file)


def test_a_run_folder_reads_back_whatever_the_environment_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """recipe.yaml is read back to resume: no credential value may be masked into it."""
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tokens")
    path, recipe = naive_recipe(tmp_path)
    run = start(tmp_path, path, recipe)
    assert "max_tokens" in (run.folder / "recipe.yaml").read_text()
    start(tmp_path, path, recipe)  # resumes: the stored recipe is this recipe


def _local_naive() -> tuple[Path, Recipe]:
    """The shipped NaiveRAG recipe, whose LLM is the managed local server."""
    from chainrag.recipes.recipe import load_recipe

    from .conftest import ROOT

    path = ROOT / "recipes" / "baselines" / "naive.yaml"
    recipe = load_recipe(path)
    assert recipe.llm.kind == "local_gguf" and recipe.llm.api_base is None
    return path, recipe


def _with_llm(recipe: Recipe, **changes: object) -> Recipe:
    import attrs

    return attrs.evolve(recipe, llm=attrs.evolve(recipe.llm, **changes))


def _run_into(recipe: Recipe, path: Path, folder: Path) -> None:
    from chainrag.run.jobs import RunOptions, run_into

    run_into(recipe, path, folder, "2wiki", [], ScriptedLLM({}), RunOptions(slots=1))


def test_run_json_records_the_managed_servers_prompt_cache_mode(tmp_path: Path) -> None:
    """The mode the local server ran in is in run.json (and each session's), and resuming a run
    whose answers came from another mode, which would mix two experiments' answers, is refused
    (another recipe says so first; a run made before the mode was recorded, with prefix reuse,
    says this)."""
    from chainrag.data.datasets import dataset_path

    path, recipe = _local_naive()
    for mode in ("fresh", "reuse", "aligned"):
        _run_into(_with_llm(recipe, prompt_cache=mode), path, tmp_path / mode)
        assert json.loads((tmp_path / mode / "run.json").read_text())["models"]["llm"][
            "prompt_cache"] == mode  # fmt: skip
    file, _ = dataset_path("2wiki")
    with pytest.raises(RunError, match="another recipe"):
        RunDir(tmp_path / "reuse").start(recipe, path, "2wiki", file, prompt_cache="fresh")
    (tmp_path / "old").mkdir()
    old = RunDir(tmp_path / "old")
    old.start(recipe, path, "2wiki", file)  # as chainrag wrote it before recording the mode
    with pytest.raises(RunError, match="did not record prompt_cache, and reused cached prompt"):
        old.start(recipe, path, "2wiki", file, prompt_cache="fresh")
    with pytest.raises(RunError, match="prompt_cache 'fresh'; this run's is 'reuse'"):
        RunDir(tmp_path / "fresh").start(recipe, path, "2wiki", file, prompt_cache="reuse")
    aligned = _with_llm(recipe, prompt_cache="aligned")
    with pytest.raises(RunError, match="prompt_cache 'aligned'; this run's is 'reuse'"):
        RunDir(tmp_path / "aligned").start(aligned, path, "2wiki", file, prompt_cache="reuse")


def test_an_llm_chainrag_does_not_start_records_no_prompt_cache_mode(tmp_path: Path) -> None:
    """A remote LLM has no mode; a local model's server at an api_base (no part of the digest)
    and the managed one are told apart by how they evaluate prompts."""
    from chainrag.data.datasets import dataset_path

    path, recipe = _local_naive()
    file, _ = dataset_path("2wiki")
    _run_into(_with_llm(recipe, kind="litellm", model="gpt-4o-mini"), path, tmp_path / "remote")
    assert "prompt_cache" not in json.loads((tmp_path / "remote" / "run.json").read_text())[
        "models"]["llm"]  # fmt: skip
    served = _with_llm(recipe, api_base="http://127.0.0.1:1/v1")
    _run_into(served, path, tmp_path / "served")
    with pytest.raises(RunError, match=r"from the server at http://127\.0\.0\.1:1/v1, which "
                       r"evaluates prompts its own way; this run's are from the managed server "
                       r"in 'aligned'"):  # fmt: skip
        RunDir(tmp_path / "served").start(recipe, path, "2wiki", file, prompt_cache="aligned")
    _run_into(_with_llm(recipe, prompt_cache="aligned"), path, tmp_path / "aligned")
    with pytest.raises(
        RunError,
        match=r"from the managed local server in 'aligned'; this run's "
        r"are from a server at api_base, which evaluates prompts its own way",
    ):
        RunDir(tmp_path / "aligned").start(served, path, "2wiki", file, prompt_cache=None)


def test_fresh_and_aligned_runs_go_on_in_each_other(tmp_path: Path) -> None:
    """fresh and aligned give the same answers bit for bit: a run begun in one goes on in the
    other, each session recording its mode; the unset default (aligned) is the same recipe as
    an explicit fresh, and so is one with another context window."""
    import attrs

    from chainrag.data.datasets import dataset_path
    from chainrag.recipes.recipe import dump_recipe, load_recipe
    from chainrag.run.jobs import RunOptions, run_into
    from chainrag.run.meta import answer_recipe, recipe_digest

    from .conftest import ROOT

    path = ROOT / "recipes" / "baselines" / "naive.yaml"
    recipe = load_recipe(path)
    aligned = attrs.evolve(recipe, llm=attrs.evolve(recipe.llm, prompt_cache="aligned"))
    for mode in ("fresh", "aligned"):
        mine = attrs.evolve(recipe, llm=attrs.evolve(recipe.llm, prompt_cache=mode))
        run_into(mine, path, tmp_path / mode, "2wiki", [], ScriptedLLM({}), RunOptions(slots=1))
    file, _ = dataset_path("2wiki")
    # fresh and aligned give the same answers bit for bit: a run goes on in either, and the
    # unset default (aligned) is the same recipe as an explicit fresh
    assert recipe.llm.prompt_cache is None
    RunDir(tmp_path / "fresh").start(recipe, path, "2wiki", file, prompt_cache="aligned")
    RunDir(tmp_path / "aligned").start(mine_fresh := attrs.evolve(
        recipe, llm=attrs.evolve(recipe.llm, prompt_cache="fresh")), path, "2wiki", file,
        prompt_cache="fresh")  # fmt: skip
    assert mine_fresh != aligned
    for folder, modes in (("fresh", ["fresh", "aligned"]), ("aligned", ["aligned", "fresh"])):
        meta = json.loads((tmp_path / folder / "run.json").read_text())
        assert meta["models"]["llm"]["prompt_cache"] == folder  # the mode it began in
        assert [s["prompt_cache"] for s in meta["sessions"]] == modes
    # a larger context window gives a prompt that fits the smaller one the same logits: the
    # same recipe, whose digest is the one made before n_ctx existed
    wider = attrs.evolve(recipe, llm=attrs.evolve(recipe.llm, n_ctx=32768))
    RunDir(tmp_path / "aligned").start(wider, path, "2wiki", file, prompt_cache="aligned")
    assert recipe_digest(wider) == recipe_digest(recipe) == recipe_digest(mine_fresh)
    assert "n_ctx" not in dump_recipe(answer_recipe(wider)).replace("n_ctx: null", "")
