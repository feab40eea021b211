"""The package's layers (docs/architecture.md): each module imports only from its own layer and
the layers below it, read from the source with ``ast`` (imports inside functions count too, and
so do imports under ``if TYPE_CHECKING:``: a bottom layer names no upper one, even for type
checkers)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "chainrag"

# Bottom to top. A layer may import itself and every layer before it in this list.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "protocols"),
    ("data",),
    ("recipes",),
    ("llm", "standin"),
    ("components",),
    ("index",),
    ("methods",),
    ("run",),
    ("training",),
    ("report", "view"),
    ("analysis",),
    ("experiments",),
    ("claims",),
    ("api",),
    ("cli",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}

# Stricter rules inside a layer, as the package docstrings state them.
NEVER: dict[str, tuple[str, ...]] = {
    "chainrag.run.record": ("llm", "methods"),
    "chainrag.run.meta": ("llm", "methods"),
    "chainrag.run.provenance": ("llm", "methods"),
    "chainrag.run.files": ("llm", "methods"),
    "chainrag.run.folder": ("llm", "methods"),
    "chainrag.analysis": ("llm",),
    "chainrag.report": ("llm",),
    "chainrag.view": ("llm", "methods"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str | None:
    """The layer a ``chainrag.X...`` module belongs to, None for ``chainrag`` itself and for
    modules outside the package."""
    parts = module.split(".")
    return parts[1] if parts[0] == "chainrag" and len(parts) > 1 else None


def imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, imported module) of every import of a chainrag module in ``tree``, at run time
    or for type checkers."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "chainrag":  # from chainrag import x: x is the module
                found.extend((node.lineno, f"chainrag.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, node.module))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [(line, name) for line, name in found if name.split(".")[0] == "chainrag"]


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def violations(path: Path, name: str) -> list[str]:
    """Each import of ``path`` (module ``name``) that reaches above its layer, or into a layer
    its module's rule forbids, as ``file:line: module -> imported (why)``."""
    own = layer_of(name)
    if own is None:
        return []
    banned = next((b for prefix, b in NEVER.items() if (name + ".").startswith(prefix + ".")), ())
    found = []
    for line, imported in imports(ast.parse(path.read_text(encoding="utf-8"))):
        target = layer_of(imported)
        if target is None or target not in RANK:  # chainrag's own __version__, data folders
            continue
        where = f"{path.name}:{line}: {name} -> {imported}"
        if RANK[target] > RANK[own]:
            found.append(f"{where} (layer {own!r} is below {target!r})")
        elif target in banned:
            found.append(f"{where} ({name} never imports {target!r})")
    return found


def test_every_top_level_entry_is_a_layer() -> None:
    entries = {p.name for p in PACKAGE.iterdir() if not p.name.startswith((".", "__pycache__"))}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages - {"prompts"} == set(RANK), "a package that is not a layer, or a missing one"
    assert entries - packages == {"__init__.py", "py.typed"}, "flat modules at the top level"


@pytest.mark.parametrize("layer", sorted(RANK))
def test_each_layer_says_what_it_may_import(layer: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text("utf-8")))
    assert doc and "Layer" in doc, f"chainrag/{layer}/__init__.py must state its layer rule"


def test_no_module_imports_above_its_layer() -> None:
    found = [v for path in modules() for v in violations(path, module_name(path))]
    assert found == []


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    """The check can fail: an import of the CLI from core, at run time, inside a function and
    under TYPE_CHECKING, is found (changed by issue 67: the TYPE_CHECKING one was not)."""
    bad = tmp_path / "probe.py"
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from chainrag.cli.main import app\n"
        "def f():\n    from chainrag.run.jobs import run_grid\n    return run_grid\n"
        "from chainrag import report\n"
    )
    bad.write_text(source, encoding="utf-8")
    found = violations(bad, "chainrag.core._layers_probe")
    assert [v.split(": ", 1)[1] for v in found] == [
        "chainrag.core._layers_probe -> chainrag.cli.main (layer 'core' is below 'cli')",
        "chainrag.core._layers_probe -> chainrag.run.jobs (layer 'core' is below 'run')",
        "chainrag.core._layers_probe -> chainrag.report (layer 'core' is below 'report')",
    ]
