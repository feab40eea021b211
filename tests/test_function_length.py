"""No function of the package is longer than :data:`MOST` lines, counted from its ``def`` to
its last line, docstring included (nested functions count on their own, and in the function
that holds them). ``python -m tests.test_function_length`` lists the longest."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "chainrag"
MOST = 50
"""The most lines a function may have."""


def lengths(path: Path) -> list[tuple[int, str]]:
    """(lines, ``file:line name``) of every function and method in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE.parent) else path
    return [
        (node.end_lineno - node.lineno + 1, f"{where}:{node.lineno} {node.name}")
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def too_long(paths: list[Path], most: int = MOST) -> list[str]:
    """``lines file:line name`` of each function over ``most`` lines, the longest first."""
    found = [item for path in paths for item in lengths(path) if item[0] > most]
    return [f"{n} {name}" for n, name in sorted(found, reverse=True)]


def test_no_function_is_over_fifty_lines() -> None:
    assert too_long(sorted(PACKAGE.rglob("*.py"))) == []


def test_the_count_runs_from_def_to_last_line(tmp_path: Path) -> None:
    """The check can fail: a function of 51 lines (its docstring and a nested one counted) is
    listed, one of 50 is not."""
    body = "".join(f"    x{i} = {i}\n" for i in range(46))
    source = (
        'def long():\n    """Doc."""\n' + body + "    def inner():\n        return 1\n"
        "    return inner\n\n\n"
        'def fits():\n    """Doc."""\n' + body + "    y = 0\n    return 1\n"
        "    # a comment, not counted\n"
    )
    (tmp_path / "probe.py").write_text(source, encoding="utf-8")
    found = [line.split(" ", 1) for line in too_long([tmp_path / "probe.py"], 49)]
    assert [(n, name.rsplit(" ", 1)[1]) for n, name in found] == [("51", "long"), ("50", "fits")]
    assert [line.rsplit(" ", 1)[1] for line in too_long([tmp_path / "probe.py"])] == ["long"]


if __name__ == "__main__":
    most = int(sys.argv[1]) if len(sys.argv) > 1 else MOST
    print("\n".join(too_long(sorted(PACKAGE.rglob("*.py")), most)) or f"none over {most} lines")
