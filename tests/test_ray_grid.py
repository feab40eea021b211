"""``chainrag run --engine ray``: a grid of recipes x datasets as Ray tasks (local Ray), each
writing its own resumable run folder, with the same lines as the local engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT

ray = pytest.importorskip("ray", reason="ray is in requirements/lock.txt (make test installs it)")


def lines(folder: Path) -> list[tuple[str, str, float]]:
    rows = [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines()]
    return sorted((r["id"], r["answer"], r["f1"]) for r in rows)


def test_a_grid_on_ray_writes_the_same_runs_as_the_local_engine(tmp_path: Path) -> None:
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        recipes = []
        for name, dim in (("naive_a", 64), ("naive_b", 32)):
            path = tmp_path / f"{name}.yaml"
            path.write_text(
                f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\nname: {name}\n"
                f"index: {{embedder: {{kind: hashed_bow, dim: {dim}}}}}\n"
                f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}'}}\n"
            )
            recipes.append(str(path))
        grid = [*recipes, "--dataset", "musique", "--dataset", "2wiki", "--limit", "2",
                "--no-report", "--cache-mode", "bypass"]  # fmt: skip
        local = CliRunner().invoke(app, ["run", *grid, "--out", str(tmp_path / "local")])
        assert local.exit_code == 0, local.output
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            remote = CliRunner().invoke(
                app, ["run", *grid, "--out", str(tmp_path / "ray"), "--engine", "ray"]
            )
            assert remote.exit_code == 0, remote.output
            assert "4 job(s) as Ray tasks" in remote.output
            again = CliRunner().invoke(
                app, ["run", *grid, "--out", str(tmp_path / "ray"), "--engine", "ray"]
            )
        finally:
            ray.shutdown()
    assert again.exit_code == 0 and again.output.count("0 answered, 2 already done") == 4
    for dataset in ("musique", "2wiki"):
        for name in ("naive_a", "naive_b"):
            a, b = tmp_path / "local" / dataset / name, tmp_path / "ray" / dataset / name
            assert lines(a) == lines(b) and len(lines(a)) == 2
