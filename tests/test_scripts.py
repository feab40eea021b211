"""The analysis scripts under scripts/ on hand-written run records."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _step(hops: int, raws: list[str], words: int, rewritten: str | None = None) -> dict:
    verdicts = [{"ok": raw.lower().startswith("yes"), "raw": raw} for raw in raws]
    expansion = {"units": [1], "seeds": [1], "hops": hops, "verdicts": verdicts, "words": words}
    answer = {"question": "q", "answer": "a", "answered": bool(raws and raws[-1] == "yes")}
    return {"question": "q", "rewritten": rewritten, "expansion": expansion, "answer": answer}


RECORDS = [
    {"id": "a", "trace": {"steps": [_step(1, ["yes"], 400), _step(2, ["no", "yes"], 800, "q?")]}},
    {"id": "b", "trace": {"steps": [_step(3, ["perhaps", "no", "no"], 1200)]}},
    {"id": "c", "trace": {"steps": [{"question": "q", "rewritten": None, "expansion": None}]}},
]


def test_walks_counts_verdicts_hops_and_words() -> None:
    s = _script("walks").summary(RECORDS)
    assert (s["questions"], s["sub_questions"], s["rewritten"]) == (3, 4, 1)
    assert (s["checks"], s["yes"], s["no"], s["unread"]) == (6, 2, 4, 1)
    assert (s["walks"], s["hops"], s["words"]) == (3, {1: 1, 2: 1, 3: 1}, 800.0)
    assert s["unanswered"] == 1


def test_walks_command(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    cmd = [sys.executable, str(ROOT / "scripts" / "walks.py")]
    done = subprocess.run([*cmd, str(run)], capture_output=True, text=True, check=True)
    assert f"| {run} | 3 | 1.3 | 1 | 6 | 2 | 4 (1) | 1: 1, 2: 1, 3: 1 | 800 | 1 |" in done.stdout
    missing = subprocess.run([*cmd, str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and "no such file (not a run directory?)" in missing.stderr
    assert missing.stdout == ""
