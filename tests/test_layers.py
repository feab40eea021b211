"""The package's layers (docs/architecture.md): each module imports only from its own layer and
the layers below it, read from the source with ``ast`` (imports inside functions count too, so
do imports under ``if TYPE_CHECKING:``, a bottom layer naming no upper one even for type
checkers, and so do imports by name through ``importlib.import_module``); a package's own rule
(:data:`ONLY`, :data:`NEVER`) as its docstring states it; and no circle of imports but the
registry's (:func:`circles`)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "chainrag"

# Bottom to top. A layer may import itself and every layer before it in this list.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("protocols",),
    ("context",),
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
    "chainrag.run.notes": ("llm", "methods"),
    "chainrag.run.provenance": ("llm", "methods"),
    "chainrag.run.encoders": ("llm", "methods"),
    "chainrag.run.files": ("llm", "methods"),
    "chainrag.run.folder": ("llm", "methods"),
    "chainrag.analysis": ("llm",),
    "chainrag.report": ("llm",),
    "chainrag.view": ("llm", "methods"),
}
ONLY: dict[str, tuple[str, ...]] = {
    "chainrag.protocols": (
        "chainrag.core.types",
        "chainrag.core.notes",
        "chainrag.core.phrase_graph",
        "chainrag.core.errors",
        "chainrag.core.context",
        "chainrag.core.retrieval",
        "chainrag.protocols",
    ),
}
"""A package whose modules import nothing of chainrag but these modules (and what is below
them), as its docstring says (``protocols/__init__.py``: the values and errors of core, the
model store and index data a context holds)."""

BY_NAME: dict[str, tuple[str, ...]] = {
    "chainrag.recipes.registry": ("chainrag.components", "chainrag.methods"),
}
"""The imports by name (``importlib.import_module("chainrag...")``) that reach above their
layer: the registry imports the built-in components and methods when it is first asked for a
name (docs/architecture.md), which is the one circle allowed."""


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str | None:
    """The layer a ``chainrag.X...`` module belongs to, None for ``chainrag`` itself and for
    modules outside the package."""
    parts = module.split(".")
    return parts[1] if parts[0] == "chainrag" and len(parts) > 1 else None


def _by_name(node: ast.AST) -> str | None:
    """The module ``node`` imports by name (``importlib.import_module("chainrag.x")``), else
    None."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    value = node.args[0].value
    return value if called == "import_module" and isinstance(value, str) else None


def imports(tree: ast.AST) -> list[tuple[int, str, bool]]:
    """(line, imported module, by name) of every import of a chainrag module in ``tree``, at
    run time or for type checkers; ``by name``: through ``importlib.import_module``."""
    found: list[tuple[int, str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, False) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "chainrag":  # from chainrag import x: x is the module
                found.extend((node.lineno, f"chainrag.{a.name}", False) for a in node.names)
            else:
                found.append((node.lineno, node.module, False))
        elif (name := _by_name(node)) is not None:
            found.append((node.lineno, name, True))
    return sorted(item for item in found if item[1].split(".")[0] == "chainrag")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _rule(rules: Mapping[str, tuple[str, ...]], name: str) -> tuple[str, ...] | None:
    return next((v for prefix, v in rules.items() if (name + ".").startswith(prefix + ".")), None)


def _within(imported: str, allowed: Iterable[str]) -> bool:
    return any((imported + ".").startswith(a + ".") for a in allowed)


def violations(path: Path, name: str) -> list[str]:
    """Each import of ``path`` (module ``name``) that reaches above its layer, or into a layer
    or module its package's rule forbids, as ``file:line: module -> imported (why)``."""
    own = layer_of(name)
    if own is None:
        return []
    banned, only = _rule(NEVER, name) or (), _rule(ONLY, name)
    found = []
    for line, imported, by_name in imports(ast.parse(path.read_text(encoding="utf-8"))):
        target = layer_of(imported)
        if target is None or target not in RANK:  # chainrag's own __version__, data folders
            continue
        where = f"{path.name}:{line}: {name} -> {imported}"
        if by_name and _within(imported, BY_NAME.get(name, ())):
            continue
        if RANK[target] > RANK[own]:
            found.append(f"{where} (layer {own!r} is below {target!r})")
        elif target in banned:
            found.append(f"{where} ({name} never imports {target!r})")
        elif only is not None and not _within(imported, only):
            found.append(f"{where} ({name} imports only {', '.join(only)})")
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


@pytest.mark.parametrize("package", sorted(ONLY))
def test_a_package_rule_is_the_one_its_docstring_states(package: str) -> None:
    init = PACKAGE.parent.joinpath(*package.split("."), "__init__.py")
    doc = ast.get_docstring(ast.parse(init.read_text("utf-8"))) or ""
    named = [m for m in ONLY[package] if m != package]
    assert [m for m in named if f":mod:`{m}`" not in doc] == [], f"{init}: name each module"


def test_no_module_imports_above_its_layer() -> None:
    found = [v for path in modules() for v in violations(path, module_name(path))]
    assert found == []


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    """The check can fail: an import of the CLI from core, at run time, inside a function,
    under TYPE_CHECKING and by name, and protocols importing a core module its rule does not
    name, are found."""
    bad = tmp_path / "probe.py"
    source = (
        "from typing import TYPE_CHECKING\nimport importlib\n"
        "if TYPE_CHECKING:\n    from chainrag.cli.main import app\n"
        "def f():\n    from chainrag.run.jobs import run_grid\n    return run_grid\n"
        "from chainrag import report\n"
        "importlib.import_module('chainrag.methods')\n"
    )
    bad.write_text(source, encoding="utf-8")
    found = violations(bad, "chainrag.core._layers_probe")
    assert [v.split(": ", 1)[1] for v in found] == [
        "chainrag.core._layers_probe -> chainrag.cli.main (layer 'core' is below 'cli')",
        "chainrag.core._layers_probe -> chainrag.run.jobs (layer 'core' is below 'run')",
        "chainrag.core._layers_probe -> chainrag.report (layer 'core' is below 'report')",
        "chainrag.core._layers_probe -> chainrag.methods (layer 'core' is below 'methods')",
    ]
    bad.write_text("from chainrag.core.paths import cache_dir\n", encoding="utf-8")
    (found,) = violations(bad, "chainrag.protocols._probe")
    assert found.endswith("(chainrag.protocols._probe imports only " + ", ".join(
        ONLY["chainrag.protocols"]) + ")")  # fmt: skip


# --------------------------------------------------------------------------- circles


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of ``package`` -> the package's modules it imports (a name that is no
    module, ``from chainrag.core.types import Usage``, is its module), leaving out the
    registry's imports by name (:data:`BY_NAME`, the circle allowed) and the package's root,
    which is no layer (its four API names are imported on first use)."""
    paths = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}

    def module(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        found = set()
        for _, imported, by_name in imports(ast.parse(path.read_text(encoding="utf-8"))):
            if by_name and _within(imported, BY_NAME.get(name, ())):
                continue
            target = module(imported)
            if target not in (None, name, package.name):
                found.add(str(target))
        graph[name] = found
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The circles of ``graph``: each set of two modules or more that import each other in a
    loop (a strongly connected component, Tarjan's), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_circle_of_imports_but_the_registrys() -> None:
    assert circles(import_graph()) == []


def test_the_circle_check_sees_a_planted_circle(tmp_path: Path) -> None:
    """The check can fail: three modules of a package that import each other in a loop (one
    under TYPE_CHECKING, one inside a function) are one circle; a module outside it is not."""
    package = tmp_path / "chainrag"
    (package / "core").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/a.py": "from chainrag.core.b import x\n",
        "core/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from chainrag.core.c import y\nx = 1\n",
        "core/c.py": "def f():\n    import chainrag.core.a\ny = 2\n",
        "core/d.py": "from chainrag.core.a import x\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    assert circles(import_graph(package)) == [["chainrag.core.a", "chainrag.core.b",
                                               "chainrag.core.c"]]  # fmt: skip
    assert circles({"a": ["b"], "b": ["a"], "c": ["c"]}) == [["a", "b"]]


READERS = ("chainrag.report", "chainrag.view", "chainrag.analysis", "chainrag.claims")
"""The readers of finished runs: each reads a run through :mod:`chainrag.run.reading` (and what
its questions were asked over through :mod:`chainrag.run.sources`), never the folder's files
(:mod:`chainrag.run.folder`) itself."""


def test_the_readers_of_runs_read_them_through_one_module() -> None:
    found = [
        f"{path.name}:{line}: {name} -> {imported}"
        for path in modules()
        if (name := module_name(path)).startswith(READERS)
        for line, imported, _ in imports(ast.parse(path.read_text(encoding="utf-8")))
        if _within(imported, ("chainrag.run.folder",))
    ]
    assert found == []
