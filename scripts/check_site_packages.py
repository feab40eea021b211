"""Fail if the environment holds a ``.pth`` start-up hook that no known package ships.

A ``.pth`` file runs code at every Python start; a compromised release used one to steal
credentials (litellm 1.82.8). Only the hooks listed here are expected.
"""

from __future__ import annotations

import site
import sys
from pathlib import Path

EXPECTED = {"distutils-precedence.pth"}
EXPECTED_PREFIXES = ("__editable__.chainrag-",)


def unexpected_hooks(folders: list[str]) -> list[Path]:
    """The ``.pth`` files in ``folders`` that are not expected."""
    found = [p for folder in folders for p in sorted(Path(folder).glob("*.pth"))]
    return [p for p in found if p.name not in EXPECTED and not p.name.startswith(EXPECTED_PREFIXES)]


def main() -> int:
    bad = unexpected_hooks(site.getsitepackages())
    for path in bad:
        print(
            f"unexpected start-up hook {path}: inspect it before using this environment",
            file=sys.stderr,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
