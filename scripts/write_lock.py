"""Print requirements/lock.txt from the current environment (``make lock``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEADER_LINES = 5


def main() -> int:
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    pins = [line.replace("+cpu", "") if line.startswith("torch==") else line for line in frozen]
    header = Path("requirements/lock.txt").read_text().splitlines()[:HEADER_LINES]
    print("\n".join(header + pins))
    return 0


if __name__ == "__main__":
    sys.exit(main())
