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
    sys.modules[name] = module  # dataclasses look their module up there
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
    assert (s["questions"], s["sub_questions"], s["rewritten"], s["changed"]) == (3, 4, 1, 1)
    assert (s["checks"], s["yes"], s["no"], s["unread"]) == (6, 2, 4, 1)
    assert (s["walks"], s["hops"], s["words"]) == (3, {1: 1, 2: 1, 3: 1}, 800.0)
    assert s["unanswered"] == 1


def test_walks_command(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    cmd = [sys.executable, str(ROOT / "scripts" / "walks.py")]
    done = subprocess.run([*cmd, str(run)], capture_output=True, text=True, check=True)
    assert (
        f"| {run} | 3 | 1.3 | 1 (1) | 6 | 2 | 4 (1) | 1: 1, 2: 1, 3: 1 | 800 | 1 |" in done.stdout
    )
    missing = subprocess.run([*cmd, str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and "no such file (not a run directory?)" in missing.stderr
    assert missing.stdout == ""


def test_sign_test_is_the_exact_binomial() -> None:
    sign_test = _script("paired").sign_test
    assert sign_test(0, 0) == 1.0
    assert sign_test(3, 3) == 1.0
    assert sign_test(0, 5) == sign_test(5, 0) == 2 / 32
    assert abs(sign_test(1, 6) - 2 * (1 + 7) / 128) < 1e-12


def test_paired_counts_changes_and_brackets_the_mean_difference() -> None:
    paired = _script("paired").paired
    p = paired([0.0, 1.0, 0.5, 0.0], [1.0, 1.0, 0.0, 1.0], resamples=2000, seed=1)
    assert (p.n, p.better, p.worse, p.same) == (4, 2, 1, 1)
    assert abs(p.delta - 100 * (1 + 0 - 0.5 + 1) / 4) < 1e-9
    assert p.low <= p.delta <= p.high
    same = paired([0.2, 0.4], [0.2, 0.4])
    assert (same.low, same.high, same.p_sign) == (0.0, 0.0, 1.0)


def _run(folder: Path, f1s: dict[str, dict[str, float]]) -> Path:
    folder.mkdir()
    lines = []
    for qid, answers in f1s.items():
        primary = next(iter(answers.values()))
        named = {k: {"text": "x", "em": v, "f1": v} for k, v in answers.items()}
        lines.append({"id": qid, "f1": primary, "em": primary, "answers": named})
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (folder / "run.json").write_text(json.dumps({"recipe_name": folder.name}))
    return folder


def test_paired_compares_shared_variants_on_shared_questions(tmp_path: Path) -> None:
    compare = _script("paired").compare
    base = [{"id": q, "f1": a, "answers": {"ansint": {"f1": a}, "cxtint": {"f1": c}}}
            for q, a, c in [("q1", 1.0, 1.0), ("q2", 0.0, 1.0), ("q3", 0.0, 0.0)]]  # fmt: skip
    ablated = [{"id": q, "f1": a, "answers": {"ansint": {"f1": a}, "cxtint": {"f1": c}}}
               for q, a, c in [("q1", 0.0, 1.0), ("q2", 0.0, 0.0)]]  # fmt: skip
    found = compare(base, ablated, resamples=100)
    assert list(found) == ["ansint", "cxtint"]
    assert (found["ansint"].n, found["ansint"].worse, found["cxtint"].worse) == (2, 1, 1)
    naive = [{"id": "q1", "f1": 0.0, "answers": {"naive": {"f1": 0.0}}}]
    assert list(compare(base, naive, resamples=100)) == ["ansint vs primary", "cxtint vs primary"]


def test_paired_command(tmp_path: Path) -> None:
    base = _run(tmp_path / "full", {"q1": {"ansint": 1.0}, "q2": {"ansint": 0.0}})
    other = _run(tmp_path / "no_graph", {"q1": {"ansint": 0.0}, "q2": {"ansint": 0.0}})
    cmd = [sys.executable, str(ROOT / "scripts" / "paired.py")]
    done = subprocess.run([*cmd, str(base), str(other)], capture_output=True, text=True, check=True)
    assert (
        "| no_graph | ansint | 2 | 50.00 | 0.00 | -50.00 | [-100.0, +0.0] | 0 / 1 / 1 | 1.000 |"
        in (done.stdout)
    )
    missing = subprocess.run([*cmd, str(base), str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and "not a run directory?" in missing.stderr
    (other / "run.json").unlink()
    no_meta = subprocess.run([*cmd, str(base), str(other)], capture_output=True, text=True)
    assert no_meta.returncode == 1 and "not a run directory (no run.json)" in no_meta.stderr
    assert "Traceback" not in no_meta.stderr


def test_paired_pools_datasets_without_pairing_across_them(tmp_path: Path) -> None:
    for dataset, full, ablated in [("musique", 1.0, 0.0), ("2wiki", 1.0, 1.0)]:
        (tmp_path / dataset).mkdir()
        _run(tmp_path / dataset / "full", {"q1": {"ansint": full}})
        _run(tmp_path / dataset / "no_graph", {"q1": {"ansint": ablated}})
    cmd = [sys.executable, str(ROOT / "scripts" / "paired.py"), "--over"]
    folders = [str(tmp_path / "musique"), str(tmp_path / "2wiki")]
    done = subprocess.run(
        [*cmd, *folders, "--", "full", "no_graph"], capture_output=True, text=True, check=True
    )
    assert "| no_graph | ansint | 2 | 100.00 | 50.00 | -50.00 |" in done.stdout
    assert "0 / 1 / 1 |" in done.stdout
    missing = subprocess.run([*cmd, *folders, "--", "full", "nope"], capture_output=True, text=True)
    assert missing.returncode == 1 and "nope: no predictions.jsonl" in missing.stderr


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
