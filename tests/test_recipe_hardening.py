"""Issue 19, items 5-7: every malformed recipe ends in a RecipeError, ``base:`` chains are read
once per file and stay inside the recipe's tree, and validating runs no code a recipe names.

Each test reproduces one input that used to end in a traceback, a slow load or a surprise.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import chainrag.recipes.bases as recipe_module
from chainrag.cli.main import app
from chainrag.core.errors import RecipeError
from chainrag.recipes import registry
from chainrag.recipes.recipe import (
    MAX_BASE_DEPTH,
    MAX_DEPTH,
    ROOTS_ENV,
    check_recipe,
    load_recipe,
    parse_yaml,
    recipe_tree,
    resolve,
)

from .conftest import ROOT

runner = CliRunner()


@pytest.fixture(autouse=True)
def _registries_restored(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Components the probe plugins register are forgotten after each test (other tests list
    every registered component), and so are the plugin modules that registered them: a module
    left in sys.modules would not register again when a later test imports it."""
    registry.load_builtins()
    for reg in registry.REGISTRIES:
        monkeypatch.setattr(reg, "_entries", dict(reg._entries))
    monkeypatch.setattr(registry, "_BY_CLASS", dict(registry._BY_CLASS))
    before = set(sys.modules)
    yield
    temp = str(tmp_path_factory.getbasetemp())
    for name in set(sys.modules) - before:
        file = getattr(sys.modules[name], "__file__", None) or ""
        if name.startswith("tests.") or file.startswith(temp):
            del sys.modules[name]


def write(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def messages(exc: pytest.ExceptionInfo[RecipeError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


# --------------------------------------------------------------------------- 5: malformed files


def test_a_file_that_is_not_utf8_names_the_byte_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", b"description: ok\ndescription2: caf\xe9\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    assert messages(exc) == [f"not UTF-8 text: byte 0xe9 on line 2 (save as UTF-8) @ {path}"]


@pytest.mark.parametrize("depth", [1000, MAX_DEPTH + 1])
def test_deep_nesting_is_a_recipe_error(tmp_path: Path, depth: int) -> None:
    path = write(tmp_path, "x.yaml", "description: " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(RecipeError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_recipe(path)


def test_nesting_up_to_the_limit_is_read() -> None:
    depth = MAX_DEPTH - 1
    assert parse_yaml("a: " + "[" * depth + "]" * depth, "r") is not None


@pytest.mark.parametrize("digits", ["1" * 5000, "0x" + "f" * 5000, "1:" * 200 + "1"])
def test_a_huge_integer_is_a_recipe_error(tmp_path: Path, digits: str) -> None:
    # Python refuses to convert 4,300+ digits (ValueError); hex and base 60 convert, but the
    # number could then never be printed in an error message.
    path = write(tmp_path, "x.yaml", f"llm: {{max_tokens: {digits}}}\n")
    with pytest.raises(RecipeError, match=r"at line 1, column 19: an integer \d+ characters long"):
        load_recipe(path)


def test_a_base_name_over_the_file_name_limit_is_a_recipe_error(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", f"base: {'a' * 300}.yaml\n")
    with pytest.raises(RecipeError, match=r"unusable path 'aaaa.*\(cut\): File name too long"):
        load_recipe(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("description: !!bool maybe", r"cannot read 'maybe' as !!bool$"),  # KeyError in PyYAML
        ("description: !!timestamp x", r"cannot read 'x' as !!timestamp$"),  # AttributeError
        ("description: !!int ''", r"cannot read '' as !!int$"),  # IndexError
        ("description: !!float ''", r"cannot read '' as !!float$"),
        ("description: 2020-02-30", r"as !!timestamp: day is out of range for month$"),
        ('description: "\\ud800"', r"a string holds \\ud800, which is not valid Unicode$"),
        ("description: &a [*a]", r"a YAML alias refers to a value that holds it$"),
        ("base: &a {k: *a}", r"found unconstructable recursive node$"),
    ],
)
def test_values_pyyaml_or_python_choke_on_are_recipe_errors(
    tmp_path: Path, text: str, message: str
) -> None:
    # Found while fuzzing (and now fuzzed): explicit tags made PyYAML's constructors raise plain
    # Python errors; a lone surrogate or a self-containing alias would crash later steps.
    path = write(tmp_path, "x.yaml", text + "\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    assert len(exc.value.problems) == 1
    assert re.search(message, exc.value.problems[0].message)


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)
    ]
    path = write(tmp_path, "x.yaml", "\n".join(lines) + "\n")
    with pytest.raises(RecipeError, match="values once YAML aliases are expanded"):
        load_recipe(path)


def test_a_file_over_one_mebibyte_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "description: '" + "x" * (1 << 20) + "'\n")
    with pytest.raises(RecipeError, match="larger than 1024 KiB"):
        load_recipe(path)


def test_a_symlink_loop_or_nul_in_base_is_a_recipe_error(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    for base in ("loop.yaml", '"a\\0b.yaml"'):
        path = write(tmp_path, "x.yaml", f"base: {base}\n")
        with pytest.raises(RecipeError, match=r"unusable path|base recipe not found"):
            load_recipe(path)


def test_a_base_chain_longer_than_the_limit_is_a_recipe_error(tmp_path: Path) -> None:
    for i in range(MAX_BASE_DEPTH + 5):
        write(tmp_path, f"f{i}.yaml", f"base: f{i + 1}.yaml\n")
    write(tmp_path, f"f{MAX_BASE_DEPTH + 5}.yaml", "description: leaf\n")
    with pytest.raises(RecipeError, match=f"base chain longer than {MAX_BASE_DEPTH} files"):
        load_recipe(tmp_path / "f0.yaml")


def test_a_chain_within_the_limit_loads(tmp_path: Path) -> None:
    for i in range(MAX_BASE_DEPTH):
        write(tmp_path, f"f{i}.yaml", f"base: f{i + 1}.yaml\n")
    write(tmp_path, f"f{MAX_BASE_DEPTH}.yaml", "description: leaf\n")
    assert load_recipe(tmp_path / "f0.yaml").description == "leaf"


def plugin(folder: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> str:
    """A plugin module importable from ``folder`` under a fresh name; returns the name.

    The module first writes ``<name>.imported`` into ``folder``, so a test can tell whether
    anything imported it.
    """
    name = f"chainrag_probe_{uuid.uuid4().hex[:12]}"
    marker = folder / f"{name}.imported"
    write(folder, f"{name}.py", f"open({str(marker)!r}, 'w').close()\n{body}\n")
    monkeypatch.syspath_prepend(str(folder))
    return name


@pytest.mark.parametrize(
    ("body", "raised"),
    [
        ("raise RuntimeError('boom at import')", "RuntimeError: boom at import"),
        ("def (:", "SyntaxError: invalid syntax"),
        ("raise SystemExit(3)", "SystemExit: 3"),
        ("import no_such_module_xyz", "could not be imported: No module named"),
    ],
)
def test_a_plugin_failing_on_import_is_a_problem_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, raised: str
) -> None:
    name = plugin(tmp_path, monkeypatch, body)
    path = write(tmp_path, "p.yaml", f"plugins: [{name}]\ndescription: 1\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    first, second = messages(exc)
    assert first.startswith(f"plugin module '{name}' ")
    assert raised in first
    assert first.endswith(f"@ {path}.plugins[0]")
    assert second == f"expected a string, got 1 @ {path}.description"


# --------------------------------------------------------------------------- 6: each file once


def test_a_base_named_twice_per_level_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each file names the next twice: 2**16 reads at depth 16 (45 s) before; now 17.
    depth = 16
    for i in range(depth):
        write(tmp_path, f"f{i}.yaml", f"base: [f{i + 1}.yaml, f{i + 1}.yaml]\n")
    write(tmp_path, f"f{depth}.yaml", "description: leaf\n")
    reads: list[Path] = []
    real_read = recipe_module._read_mapping

    def counting(path: Path, label: str) -> dict[str, object]:
        reads.append(path)
        return real_read(path, label)

    monkeypatch.setattr(recipe_module, "_read_mapping", counting)
    assert load_recipe(tmp_path / "f0.yaml").description == "leaf"
    assert len(reads) == depth + 1


def test_a_diamond_is_read_once_and_a_cycle_through_it_is_still_found(tmp_path: Path) -> None:
    write(tmp_path, "top.yaml", "base: [left.yaml, right.yaml]\n")
    write(tmp_path, "left.yaml", "base: bottom.yaml\ndescription: left\n")
    write(tmp_path, "right.yaml", "base: bottom.yaml\n")
    write(tmp_path, "bottom.yaml", "description: bottom\nllm: {temperature: 0.5}\n")
    assert resolve(tmp_path / "top.yaml") == {
        "name": "top",
        "description": "bottom",  # right's base comes last and sets it again
        "llm": {"temperature": 0.5},
    }
    write(tmp_path, "bottom.yaml", "base: top.yaml\n")
    with pytest.raises(RecipeError, match=r"base cycle: .*top\.yaml -> .*left\.yaml -> "):
        load_recipe(tmp_path / "top.yaml")


# --------------------------------------------------------------------------- 7: base: roots


def test_base_outside_the_tree_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "base: /etc/passwd\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    text = str(exc.value)
    assert "base recipe '/etc/passwd' is outside the recipe tree" in text
    assert ROOTS_ENV in text
    assert "root:" not in text


def test_a_file_outside_the_tree_is_never_quoted_even_when_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = write(tmp_path / "elsewhere", "secret.txt", "password hunter2\n")
    monkeypatch.setenv(ROOTS_ENV, str(secret.parent))
    path = write(tmp_path / "mine", "x.yaml", f"base: {secret}\n")
    with pytest.raises(RecipeError, match="expected a mapping at the top, got a string") as exc:
        load_recipe(path)
    assert "hunter2" not in str(exc.value)


def test_dotdot_may_not_leave_the_tree(tmp_path: Path) -> None:
    write(tmp_path, "outside.yaml", "description: outside\n")
    path = write(tmp_path / "mine", "x.yaml", "base: ../outside.yaml\n")
    with pytest.raises(RecipeError, match="is outside the recipe tree"):
        load_recipe(path)


def test_a_symlink_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    target = write(tmp_path, "outside.yaml", "description: outside\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "link.yaml").symlink_to(target)
    path = write(tmp_path / "mine", "x.yaml", "base: link.yaml\n")
    with pytest.raises(RecipeError, match="is outside the recipe tree"):
        load_recipe(path)


def test_the_tree_is_the_nearest_folder_named_recipes(tmp_path: Path) -> None:
    write(tmp_path, "recipes/base.yaml", "description: shared\n")
    path = write(tmp_path, "recipes/deeper/sub/x.yaml", "base: ../../base.yaml\n")
    assert recipe_tree(path.resolve()) == (tmp_path / "recipes").resolve()
    assert load_recipe(path).description == "shared"


def test_an_allowed_root_comes_from_the_environment_or_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = write(tmp_path / "shared", "llm.yaml", "llm: {temperature: 0.7}\n")
    path = write(tmp_path / "mine", "x.yaml", f"base: {shared}\n")
    with pytest.raises(RecipeError, match="is outside the recipe tree"):
        load_recipe(path)
    assert load_recipe(path, roots=[shared.parent]).llm.temperature == 0.7
    monkeypatch.setenv(ROOTS_ENV, os.pathsep.join(["/nonexistent", str(shared.parent)]))
    assert load_recipe(path).llm.temperature == 0.7


def test_the_repository_recipes_are_an_allowed_root(tmp_path: Path) -> None:
    # as tests and users write a recipe anywhere that extends a shipped one
    path = write(tmp_path, "x.yaml", f"base: {ROOT / 'recipes' / 'index' / 'chunks.yaml'}\n")
    assert load_recipe(path).index is not None


# --------------------------------------------------------------------------- 7: null keys


def test_an_unknown_key_set_to_null_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "unknown_key: null\nllm: {seeds: null}\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    assert [m.split(" (known keys")[0] for m in messages(exc)] == [
        "unknown key 'seeds'; did you mean 'seed'?",
        "unknown key 'unknown_key'",
    ]


def test_null_over_an_inherited_key_is_the_same_null(tmp_path: Path) -> None:
    # the key is not deleted (that brought back its default: seed 0, a default summarizer)
    write(tmp_path, "base.yaml", "llm: {seed: 5}\nindex: {edges: {}}\n")
    path = write(tmp_path, "x.yaml", "base: base.yaml\nllm: {seed: null}\nindex: null\n")
    assert resolve(path) == {"name": "x", "llm": {"seed": None}, "index": None}
    assert load_recipe(path).llm.seed is None


def test_null_with_nothing_to_remove_is_checked_as_a_value(tmp_path: Path) -> None:
    # a nullable field takes it (seed: null used to fall back to the default seed 0) ...
    assert load_recipe(write(tmp_path, "a.yaml", "llm: {seed: null}\n")).llm.seed is None
    # ... and a field that is not nullable refuses it
    path = write(tmp_path, "b.yaml", "description: null\n")
    with pytest.raises(RecipeError, match=r"expected a string, got null @ .*b\.yaml\.description"):
        load_recipe(path)


# --------------------------------------------------------------------------- 7: plugins


PLUGIN_RECIPE = """plugins: [{name}]
llm: {{kind: litellm, model: openai/x}}
method:
  kind: chainrag
  rewrite_trigger: {{kind: {kind}}}
"""
TRIGGER = """
import attrs
from chainrag.recipes.registry import REWRITE_TRIGGERS

@REWRITE_TRIGGERS.register("{kind}")
@attrs.frozen
class Probe:
    '''A probe trigger. Recipe: ``{{kind: {kind}}}``.'''

    def __call__(self, sub_question: str) -> bool:
        return True
"""


def plugin_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A recipe whose rewrite trigger only its (fresh) plugin provides; and the import marker."""
    kind = f"probe_{uuid.uuid4().hex[:8]}"
    name = plugin(tmp_path, monkeypatch, TRIGGER.format(kind=kind))
    path = write(tmp_path, "p.yaml", PLUGIN_RECIPE.format(name=name, kind=kind))
    return path, tmp_path / f"{name}.imported"


def test_validate_does_not_import_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, marker = plugin_recipe(tmp_path, monkeypatch)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert f"part {path} (p): not fully checked" in result.output
    assert "not checked: rewrite_trigger 'probe_" in result.output
    assert "not loaded (pass --load-plugins) @ " in result.output
    assert "1 of 1 recipes valid (1 only partly checked: pass --load-plugins)" in result.output


def test_validate_load_plugins_imports_and_checks_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, marker = plugin_recipe(tmp_path, monkeypatch)
    result = runner.invoke(app, ["validate", "--load-plugins", str(path)])
    assert result.exit_code == 0, result.output
    assert marker.exists()
    assert f"ok   {path} (p)" in result.output


def test_running_a_recipe_loads_its_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, marker = plugin_recipe(tmp_path, monkeypatch)
    assert load_recipe(path).method is not None  # what run, ask and index use
    assert marker.exists()


def test_recipe_show_needs_load_plugins_for_plugin_components(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, marker = plugin_recipe(tmp_path, monkeypatch)
    result = runner.invoke(app, ["recipe", "show", str(path)])
    assert result.exit_code == 1
    assert "not shown, parts need plugins" in result.output
    assert not marker.exists()
    result = runner.invoke(app, ["recipe", "show", "--load-plugins", str(path)])
    assert result.exit_code == 0, result.output
    assert "kind: probe_" in result.output


def test_validate_does_not_run_venv_main(tmp_path: Path) -> None:
    # `plugins: [venv.__main__]` used to run venv's command line during validation
    assert "venv.__main__" not in sys.modules
    path = write(tmp_path, "v.yaml", "plugins: [venv.__main__]\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "venv.__main__" not in sys.modules
    assert not (tmp_path / "validate").exists()


def test_a_missing_plugin_is_an_error_without_loading(tmp_path: Path) -> None:
    path = write(tmp_path, "p.yaml", "plugins: [no_such_plugin_xyz.sub, 'a b']\n")
    with pytest.raises(RecipeError) as exc:
        check_recipe(path)
    assert messages(exc) == [
        "plugin module 'no_such_plugin_xyz.sub' not found (no module named "
        f"'no_such_plugin_xyz') @ {path}.plugins[0]",
        f"plugin 'a b' is not a module name (e.g. 'my_pkg.components') @ {path}.plugins[1]",
    ]


def test_an_unknown_kind_is_an_error_when_every_plugin_is_loaded(tmp_path: Path) -> None:
    import tests.chainrag_toy_plugin  # noqa: F401 - loaded already, so nothing is unchecked

    text = "plugins: [tests.chainrag_toy_plugin]\nindex: {chunker: {kind: nope}}\n"
    with pytest.raises(RecipeError, match=r"unknown chunker 'nope'"):
        check_recipe(write(tmp_path, "p.yaml", text))
    with pytest.raises(RecipeError, match=r"unknown chunker 'nope'"):
        check_recipe(write(tmp_path, "q.yaml", "index: {chunker: {kind: nope}}\n"))


def test_other_problems_of_a_partly_checked_recipe_are_still_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, marker = plugin_recipe(tmp_path, monkeypatch)
    path.write_text(path.read_text() + "description: 5\n")
    with pytest.raises(RecipeError, match=r"expected a string, got 5 @ .*p\.yaml\.description"):
        check_recipe(path)
    assert not marker.exists()
