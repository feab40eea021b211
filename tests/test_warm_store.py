"""Questions in flight over a warm vector store, as a second recipe or a rerun meets it: every
question answered. With the vectors on disk no index build loads the embedder, so the
questions in flight all load it for their first query at once; a store per question let them
race in transformers' lazy imports (``ImportError: cannot import name 'AutoModel'``) and lose
half of 30 questions. The real default embedder (the packaged all-MiniLM-L6-v2), in a fresh
``chainrag run`` process each time (transformers imported by no one before), against the
stand-in server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainrag.standin.replies import standin_reply
from chainrag.standin.server import FakeOpenAI, fixed, serve

from .conftest import ROOT

NAIVE = ROOT / "recipes" / "baselines" / "naive.yaml"  # chunks embedded by the default MiniLM


def chainrag_run(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    """``chainrag run ARGS`` in a process of its own (this checkout's code, its own caches)."""
    env = {**os.environ, "CHAINRAG_CACHE": str(cache), "OPENAI_API_KEY": "stand-in",
           "PYTHONPATH": str(ROOT), "COLUMNS": "200"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "chainrag.cli", "run", *args], env=env,
                          capture_output=True, text=True, check=False, timeout=900)  # fmt: skip


@pytest.mark.slow
def test_thirty_questions_sixteen_in_flight_over_a_warm_store_all_answer(tmp_path: Path) -> None:
    fake = FakeOpenAI([], reply=standin_reply, latency=fixed(0.05))
    with serve(fake) as api_base:
        args = [str(NAIVE), "--dataset", "musique", "--limit", "30", "--concurrency", "16",
                "--llm", "openai/stand-in", "--api-base", api_base, "--no-report"]  # fmt: skip
        cold = chainrag_run(*args, "--out-dir", str(tmp_path / "cold"), cache=tmp_path / "c")
        assert cold.returncode == 0, cold.stdout + cold.stderr
        for again in range(3):  # the store warm; the LLM cache not used
            out = tmp_path / f"warm{again}"
            warm = chainrag_run(*args, "--out-dir", str(out), "--cache-mode", "refresh",
                                cache=tmp_path / "c")  # fmt: skip
            assert warm.returncode == 0, warm.stdout + warm.stderr
            assert "30 answered" in warm.stdout and "failed" not in warm.stdout + warm.stderr
            assert not (out / "musique" / "naive" / "errors.jsonl").read_text()
