"""The scripts under scripts/ (the analyses moved to chainrag.analysis: tests/test_analysis.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

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
