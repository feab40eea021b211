"""One command-line convention: the recipe as the argument, --out-dir for folders, --set and
--llm over a recipe (typed, checked, recorded), chainrag recipes, --dry-run and --estimate
without calls, shell completion, and the old spellings still working with a line that says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT
from .test_runs import fake_llm_recipe, naive_recipe

CLI = [str(Path(sys.executable).parent / "chainrag")]
ANSINT = str(ROOT / "recipes" / "chainrag" / "ansint.yaml")


def chainrag(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, "COLUMNS": "200", **env}, timeout=300)  # fmt: skip


def test_set_changes_a_field_typed_and_checked() -> None:
    shown = chainrag("recipe", "show", ANSINT, "--set", "retrieval.seed.k=5", "--set", "name=k5")
    assert shown.returncode == 0, shown.stderr
    assert "name: k5" in shown.stdout and "    k: 5\n" in shown.stdout
    wrong = chainrag("recipe", "show", ANSINT, "--set", "retrieval.seed.k=five")
    assert wrong.returncode == 1 and "expected an integer, got 'five'" in wrong.stderr
    assert "retrieval.seed.k" in wrong.stderr
    unknown = chainrag("recipe", "show", ANSINT, "--set", "retrieval.seed.kk=5")
    assert unknown.returncode == 1 and "kk" in unknown.stderr
    syntax = chainrag("recipe", "show", ANSINT, "--set", "k5")
    assert syntax.returncode == 1 and "expected PATH=VALUE" in syntax.stderr


def test_set_name_that_would_leave_the_out_dir_is_refused(tmp_path: Path) -> None:
    for name in ("", "..", "../../elsewhere", "a\\b"):
        args = ["run", ANSINT, "--dataset", "musique", "--limit", "1", "--dry-run"]
        refused = chainrag(*args, "--out-dir", str(tmp_path / "runs"), "--set", f"name={name}")
        assert refused.returncode == 1, refused.stdout
        assert f"name {name!r} " in refused.stderr and "stays inside --out-dir" in refused.stderr
    assert not any(tmp_path.iterdir())


def test_llm_puts_an_llm_recipe_over_the_recipe() -> None:
    shown = chainrag("recipe", "show", ANSINT, "--llm", "gpt-4o-mini")
    assert shown.returncode == 0, shown.stderr
    assert "model: openai/gpt-4o-mini" in shown.stdout and "kind: litellm" in shown.stdout
    assert "prompt_cache: null" in shown.stdout  # nothing of the local LLM's section leaks
    unknown = chainrag("recipe", "show", ANSINT, "--llm", "gpt-9")
    assert unknown.returncode == 1 and "not a recipe file, an LLM overlay (" in unknown.stderr
    assert "gpt-4o-mini" in unknown.stderr and "model=gpt-9" in unknown.stderr


def test_validate_one_recipe_with_changes() -> None:
    ok = chainrag("validate", ANSINT, "--set", "retrieval.seed.k=2")
    assert ok.returncode == 0 and "with --set retrieval.seed.k=2" in ok.stdout
    two = chainrag("validate", ANSINT, ANSINT, "--set", "retrieval.seed.k=2")
    assert two.returncode == 2 and "one recipe file" in two.stderr


def test_recipes_lists_every_recipe_with_its_description() -> None:
    listed = chainrag("recipes")
    assert listed.returncode == 0
    assert "chainrag/ansint.yaml" in listed.stdout and "ChainRAG, AnsInt primary" in listed.stdout
    assert "by its path without .yaml: base: chainrag/ansint)" in listed.stdout.splitlines()[0]
    count = sum(1 for _ in (ROOT / "recipes").rglob("*.yaml"))
    assert f"{count} recipes in recipes/" in listed.stdout


def test_shell_completion_is_available() -> None:
    helped = chainrag("--help")
    assert "--install-completion" in helped.stdout and "--show-completion" in helped.stdout


def test_a_run_with_set_records_it_resumes_with_it_and_dry_run_calls_nothing(
    tmp_path: Path,
) -> None:
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        path = fake_llm_recipe(tmp_path, api_base)
        out = str(tmp_path / "runs")
        args = ["run", str(path), "--dataset", "musique", "--limit", "3", "--out-dir", out,
                "--no-report", "--set", "retrieval.seed.k=2"]  # fmt: skip
        plan = chainrag(*args, "--dry-run", CHAINRAG_CACHE=str(tmp_path / "cache"))
        assert plan.returncode == 0, plan.stderr
        assert "new: 3 to answer" in plan.stdout and "--set retrieval.seed.k=2" in plan.stdout
        assert fake.bodies == [] and not (tmp_path / "runs").exists()
        done = chainrag(*args, CHAINRAG_CACHE=str(tmp_path / "cache"))
        assert done.returncode == 0, done.stderr
        folder = tmp_path / "runs" / "musique" / "naive"
        meta = json.loads((folder / "run.json").read_text())
        assert meta["sessions"][0]["changes"] == ["--set retrieval.seed.k=2"]
        assert "k: 2" in (folder / "recipe.yaml").read_text()
        calls = len(fake.bodies)
        again = chainrag(*args, "--dry-run")
        assert "complete: 3 of 3 answered" in again.stdout and len(fake.bodies) == calls
        other = chainrag(*args[:-2], "--dry-run")  # without the change: another recipe
        assert "refused:" in other.stdout and "another recipe" in other.stdout


def test_estimate_makes_no_paid_call_without_yes(tmp_path: Path) -> None:
    """With a provider's model and no key: its tokens come from a stored run of the recipe
    answered by the local model (here beside the run, scripted), the sample --yes would answer
    is priced, and nothing is called (a call would fail for want of a key)."""
    from chainrag.data.datasets import load_dataset
    from chainrag.llm.fake import ScriptedLLM
    from chainrag.run.session import run_recipe

    from .test_runs import start

    env = {"CHAINRAG_CACHE": str(tmp_path / "cache"), "OPENAI_API_KEY": ""}
    path, recipe = naive_recipe(tmp_path)
    stored = start(tmp_path, path, recipe, "runs/musique/naive-local")
    run_recipe(
        recipe, load_dataset("musique", 2), stored, ScriptedLLM({"cxtint": lambda _: "Paris"})
    )
    runs = str(tmp_path / "runs")
    told = chainrag("run", str(path), "--dataset", "musique", "--limit", "4", "--out-dir", runs,
                    "--estimate", "--llm", "gpt-4o-mini", **env)  # fmt: skip
    assert told.returncode == 0, told.stderr
    assert f"already answered by qwen2.5-coder-1.5b in {stored.folder}" in told.stdout
    assert "would answer 4 sample question(s) with openai/gpt-4o-mini" in told.stdout
    assert "No paid call was made" in told.stdout
    assert not (tmp_path / "cache" / "estimates").exists()
    assert not (tmp_path / "runs" / "musique" / "naive").exists()
    refused = chainrag("run", str(path), "--dataset", "musique", "--yes", **env)
    assert refused.returncode == 2 and "--yes applies to --estimate only" in refused.stderr


def test_old_spellings_work_for_one_release_with_a_line(tmp_path: Path) -> None:
    path, _ = naive_recipe(tmp_path)
    old = chainrag("run", str(path), "--dataset", "musique", "--limit", "2", "--out",
                   str(tmp_path / "runs"), "--dry-run")  # fmt: skip
    assert old.returncode == 0 and str(tmp_path / "runs" / "musique" / "naive") in old.stdout
    assert "--out is now --out-dir; --out works for this release only" in old.stderr
    index = chainrag("index", "--recipe", str(path), "--dataset", "musique", "--limit", "1",
                     CHAINRAG_CACHE=str(tmp_path / "cache"))  # fmt: skip
    assert index.returncode == 0, index.stderr
    assert "--recipe FILE is now the RECIPE argument" in index.stderr
    both = chainrag("index", str(path), "--recipe", str(path), "--dataset", "musique")
    assert both.returncode == 2 and "give the recipe once" in both.stderr
    from chainrag.data.datasets import load_corpus

    assert len(load_corpus("musique_train_corpus")) == 1890


def test_ask_takes_the_recipe_first_and_still_reads_the_old_order(tmp_path: Path) -> None:
    fake = FakeOpenAI([], reply="Paris")
    context = tmp_path / "passages.json"
    context.write_text(json.dumps([{"title": "France", "text": "Paris is the capital of France."}]))
    with serve(fake) as api_base:
        path = fake_llm_recipe(tmp_path, api_base)
        env = {"CHAINRAG_CACHE": str(tmp_path / "cache")}
        new = chainrag("ask", str(path), "Capital of France?", "--context", str(context), **env)
        assert new.returncode == 0 and "Paris" in new.stdout, new.stderr
        old = chainrag("ask", "Capital of France?", "--recipe", str(path), "--context",
                       str(context), **env)  # fmt: skip
        assert old.returncode == 0 and "Paris" in old.stdout, old.stderr
        assert "ask QUESTION --recipe FILE is now ask RECIPE QUESTION" in old.stderr


def test_every_help_text_survives_the_help_s_markup() -> None:
    """typer renders help as rich markup, where ``[sentences]`` is a style tag and vanishes:
    every command's and option's help reads the same after it (``\\[`` for a bracket)."""
    import inspect

    import typer
    from rich.text import Text

    from chainrag.cli.main import app

    def texts(command: Any) -> Iterator[str]:
        yield command.help or ""
        yield from (getattr(p, "help", None) or "" for p in command.params)
        for sub in getattr(command, "commands", {}).values():
            yield from texts(sub)

    helps = [inspect.cleandoc(t) for t in texts(typer.main.get_command(app))]
    assert len(helps) > 100 and any("[title, \\[sentences]]" in t for t in helps)
    assert [t for t in helps if Text.from_markup(t).plain != t.replace("\\[", "[")] == []
    shown = chainrag("ask", "--help")
    assert "[title, [sentences]]" in shown.stdout, shown.stdout


def _options(command: Any) -> dict[str, bool]:
    """Each option spelling of a click command (``--cache`` and ``--no-cache``): hidden or not."""
    return {
        spelling: param.hidden
        for param in command.params
        for spelling in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
    }


def test_every_command_line_in_the_docs_names_options_that_exist() -> None:
    """A ``chainrag CMD ... --opt`` in the package's docstrings, the README or docs/ names an
    option of that command, and not an old spelling kept hidden (``--plots``, ``--out``)."""
    import re

    import typer

    from chainrag.cli.main import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    files = [*(ROOT / "chainrag").rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    command_line = re.compile(r"chainrag ([a-z][a-z-]*(?: [a-z][a-z-]*)?)([^`\n]*)")
    wrong, seen = [], 0
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for words, rest in command_line.findall(line):
                name, *sub = words.split()
                command = commands.get(name)
                if command is None:
                    continue
                if sub and sub[0] in getattr(command, "commands", {}):
                    command = command.commands[sub[0]]
                hidden = _options(command)
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest):
                    seen += 1
                    if hidden.get(option, True):
                        wrong.append(f"{path.relative_to(ROOT)}:{number}: {words} {option}")
    assert seen > 50
    assert wrong == []
