"""The README is a front page that tells the truth: short, its links resolve, its commands and
snippets work — each one that needs no LLM is run, the others are checked against the options
and signatures they use."""

from __future__ import annotations

import inspect
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import chainrag
import chainrag.api
from chainrag.recipes.recipe import load_recipe

from .conftest import ROOT
from .run_records import record, write_run

README = ROOT / "README.md"
DOCS = sorted(p for p in (ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
NEEDS_LLM = {"run", "ask"}
CLI = [str(Path(sys.executable).parent / "chainrag")]


def blocks(kind: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README.read_text()) if lang == kind]


def commands() -> list[list[str]]:
    """Each ``chainrag`` command of the README's bash blocks, continuation lines joined."""
    found = []
    for body in blocks("bash"):
        for line in body.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0].endswith("chainrag"):
                found.append(words[1:])
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.*)$", path.read_text(), re.MULTILINE)}


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text()
    assert len(text.split()) <= 3000
    for section in ("## Set-up: two commands", "## Your own questions", "## Your own model",
                    "## From Python", "## Methods", "## Results in the paper's setting",
                    "## See a run", "## Scale", "## Documentation", "## Citation"):  # fmt: skip
        assert section in text
    assert not re.search(r"(?i)\bseeds? 00[0-9]|\bissue \d+|\bitem \d+", text)


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert broken == []


def test_every_command_uses_options_its_command_has() -> None:
    found = commands()
    assert {c[0] for c in found} >= {"run", "report", "view", "ask"}
    for words in found:
        sub = [w for w in words if not w.startswith("-")][:1]
        helped = subprocess.run(
            [*CLI, *sub, "--help"],
            capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, check=False,
        )  # fmt: skip
        assert helped.returncode == 0, (words, helped.stderr)
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            assert option in helped.stdout, f"{' '.join(words)}: {option} is not an option"


def test_the_commands_that_need_no_llm_run(tmp_path: Path) -> None:
    """A dry run from the repository (it writes nothing), and report and view over the folder
    the README's run writes (a toy run put there)."""
    work = tmp_path / "work"
    work.mkdir()
    write_run(work / "runs" / "mine" / "musique" / "ansint", [record("q1", {"ansint": 1.0})])
    ran = []
    for words in commands():
        dry = "--dry-run" in words
        if words[0] in NEEDS_LLM and not dry:
            continue
        extra = ["--no-plots"] if words[0] == "report" else []
        done = subprocess.run([*CLI, *words, *extra], cwd=ROOT if dry else work,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, (words, done.stdout, done.stderr)
        ran.append(words[0])
        if dry:
            assert "no LLM was called" in done.stdout and "2 questions" in done.stdout
    assert sorted(set(ran)) == ["report", "run", "view"]
    assert (work / "runs" / "mine" / "view.html").is_file()


def test_the_api_model_recipe_loads_saved_in_any_folder(tmp_path: Path) -> None:
    text = blocks("yaml")[0]
    data = yaml.safe_load(text)
    path = tmp_path / "elsewhere" / "my-chainrag-gpt.yaml"  # outside the repository
    path.parent.mkdir()
    path.write_text(text)
    recipe = load_recipe(path)
    assert recipe.name == data["name"] and recipe.llm.model == "openai/gpt-4o-mini"
    assert recipe.method == load_recipe(ROOT / "recipes" / "chainrag" / "ansint.yaml").method


def test_the_python_snippet_calls_the_api_as_it_is() -> None:
    code = blocks("python")[0]
    calls = re.findall(r"chainrag\.(\w+)\(([^()]*(?:\([^()]*\)[^()]*)*)\)", code)
    assert {name for name, _ in calls} >= {"run", "report", "load_recipe", "ask"}
    for name, args in calls:
        function = getattr(chainrag.api, name)
        keywords = re.findall(r"\b(\w+)=", args)
        parameters = inspect.signature(function).parameters
        assert all(k in parameters for k in keywords), (name, keywords)
    assert shutil.which("make") is not None  # the set-up's two commands need it


def test_the_citation_gives_the_toolkit_first_then_the_three_papers_with_their_years() -> None:
    (bibtex,) = blocks("bibtex")
    entries = re.findall(r"@(\w+)\{(\w+),\n(.*?)\n\}", bibtex, re.DOTALL)
    fields = [dict(re.findall(r"^\s*(\w+)\s*=\s*\{(.*)\},?$", body, re.M)) for *_, body in entries]
    assert [(kind, key) for kind, key, _ in entries] == [
        ("software", "chainrag"), ("inproceedings", "zhu2025chainrag"),
        ("misc", "patwa2024guided"), ("misc", "shi2024fourmodule"),
    ]  # fmt: skip
    assert fields[0]["version"] == chainrag.__version__
    assert [f.get("year") for f in fields[1:]] == ["2025", "2024", "2024"]
    assert all(f["title"] and f["author"] for f in fields)
