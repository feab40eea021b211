"""Fail if the environment holds a start-up hook that the set-up did not put there.

Python runs code at every start from three places in site-packages: the lines of a ``.pth``
file that begin with ``import``, a ``sitecustomize.py`` and a ``usercustomize.py``. A
compromised litellm release (1.82.8) used a ``.pth`` file to steal credentials. This check
reads content, not only names:

- a ``.pth`` file may hold plain paths, blank lines and ``#`` comments (``site`` only adds a
  path to ``sys.path``); a line that is code (it begins with ``import``, which ``site``
  executes) is accepted only where it is, to the character, one of the lines below that
  setuptools writes (its distutils shim, and the import hook of chainrag's own editable
  install);
- ``sitecustomize.py`` and ``usercustomize.py`` are refused wherever Python would import them
  from (site-packages, or anywhere on ``sys.path``).
"""

from __future__ import annotations

import re
import site
import sys
from pathlib import Path

EXPECTED_CODE = {
    "distutils-precedence.pth": re.compile(
        re.escape(
            "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, "
            "'local') == 'local'; enabled and __import__('_distutils_hack').add_shim();"
        )
    ),
    "__editable__.chainrag-": re.compile(
        r"import (__editable___chainrag_[0-9a-z_]+_finder); \1\.install\(\)"
    ),
}
CUSTOMIZE = ("sitecustomize.py", "usercustomize.py")


def _expected(pth: Path, line: str) -> bool:
    for prefix, pattern in EXPECTED_CODE.items():
        if pth.name.startswith(prefix) and pattern.fullmatch(line.rstrip()):
            return True
    return False


def pth_problems(pth: Path) -> list[str]:
    """What is wrong with one ``.pth`` file: each line that runs code it should not."""
    try:
        lines = pth.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{pth}: unreadable ({exc})"]
    problems = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line.startswith(("import ", "import\t")) and not _expected(pth, line):
            problems.append(f"{pth}, line {number}: runs code at every start: {line[:120]!r}")
    return problems


def problems(folders: list[str], path_entries: list[str]) -> list[str]:
    """Every unexpected start-up hook in ``folders`` (site-packages) and ``path_entries``."""
    found = [p for folder in folders for p in sorted(Path(folder).glob("*.pth"))]
    out = [problem for pth in found for problem in pth_problems(pth)]
    for entry in dict.fromkeys([*folders, *path_entries]):
        for name in CUSTOMIZE:
            hook = Path(entry or ".") / name
            if hook.is_file():
                out.append(f"{hook}: runs at every start (not something the set-up installs)")
    return out


def main() -> int:
    found = problems(site.getsitepackages(), sys.path)
    for problem in found:
        print(f"unexpected start-up hook: {problem}; inspect it before using this environment",
              file=sys.stderr)  # fmt: skip
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
