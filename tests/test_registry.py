from __future__ import annotations

import importlib.metadata
import sys
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest

from chainrag.core.errors import PluginError, RegistryError, UnknownComponentError
from chainrag.protocols import RewriteTrigger
from chainrag.recipes import registry as reg
from chainrag.recipes.registry import REGISTRIES, REWRITE_TRIGGERS, Registry


def test_unknown_key_suggests_and_lists_known() -> None:
    with pytest.raises(
        UnknownComponentError,
        match=r"^unknown rewrite_trigger 'pronoun_word'\. Did you mean 'pronoun_words'\? "
        r"Known: .*pronoun_words, substring",
    ):
        REWRITE_TRIGGERS.get("pronoun_word")


def test_unknown_key_without_close_match_lists_known_only() -> None:
    with pytest.raises(
        UnknownComponentError,
        match=r"^unknown reranker 'zzz'\. Known: cross_encoder, dense, flag_reranker, litellm, "
        r"none$",
    ):
        reg.RERANKERS.get("zzz")


def test_unknown_key_in_empty_stage() -> None:
    fresh: Registry[RewriteTrigger] = Registry("toy_stage", RewriteTrigger)
    with pytest.raises(UnknownComponentError, match=r"Known: \(none registered\)"):
        fresh.get("x")


@pytest.mark.parametrize("key", ["PronounWords", "pronoun-words", "_x", "x__y", "9x", ""])
def test_keys_must_be_snake_case(key: str) -> None:
    with pytest.raises(RegistryError, match="is not snake_case"):
        Registry("toy_stage", RewriteTrigger).register(key)


def test_component_must_be_frozen_attrs() -> None:
    toy: Registry[RewriteTrigger] = Registry("toy_stage", RewriteTrigger)

    class Plain:
        def __call__(self, sub_question: str) -> bool:
            return False

    @attrs.define
    class Mutable:
        def __call__(self, sub_question: str) -> bool:
            return False

    for cls in (Plain, Mutable):
        with pytest.raises(RegistryError, match=r"must be a frozen attrs class"):
            toy.register("toy")(cls)


def test_a_key_registers_once() -> None:
    toy: Registry[RewriteTrigger] = Registry("toy_stage", RewriteTrigger)

    @toy.register("first")
    @attrs.frozen
    class A:
        def __call__(self, sub_question: str) -> bool:
            return True

    @attrs.frozen
    class B:
        def __call__(self, sub_question: str) -> bool:
            return True

    with pytest.raises(RegistryError, match=r"toy_stage 'first' is registered already, by .*A"):
        toy.register("first")(B)
    with pytest.raises(RegistryError, match=r"A is registered already as toy_stage 'first'"):
        toy.register("second")(A)


def test_every_stage_has_a_distinct_snake_case_name() -> None:
    names = [r.stage for r in REGISTRIES]
    assert len(names) == len(set(names))
    assert all(n.replace("_", "").isalpha() and n.islower() for n in names)


def test_plugin_module_registers_its_components() -> None:
    reg.load_plugin("tests.chainrag_toy_plugin")
    assert "toy_question_mark" in REWRITE_TRIGGERS


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("os.path; import x", r"is not a module name"),
        ("no_such_plugin_module", r"plugin module 'no_such_plugin_module' could not be imported"),
    ],
)
def test_bad_plugins_are_clear_errors(module: str, message: str) -> None:
    with pytest.raises(PluginError, match=message):
        reg.load_plugin(module)


def test_broken_entry_point_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = importlib.metadata.EntryPoint("broken", "no_such_module_xyz", reg.ENTRY_POINT_GROUP)

    def fake_entry_points(**kw: Any) -> list[importlib.metadata.EntryPoint]:
        return [ep] if kw.get("group") == reg.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    monkeypatch.setitem(reg._loaded, "entry_points", False)
    with pytest.raises(PluginError, match=r"entry point 'broken' \(no_such_module_xyz\) .*failed"):
        reg.load_builtins()


def test_entry_point_plugins_register(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = importlib.metadata.EntryPoint("toy", "tests.chainrag_toy_plugin", reg.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [ep])
    monkeypatch.setitem(reg._loaded, "entry_points", False)
    reg.load_builtins()
    assert "toy_question_mark" in REWRITE_TRIGGERS


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise RuntimeError('boom')", r"failed while being imported: RuntimeError: boom"),
        ("def (:", r"failed while being imported: SyntaxError: invalid syntax"),
        ("raise SystemExit(2)", r"failed while being imported: SystemExit: 2"),
    ],
)
def test_a_plugin_raising_anything_on_import_is_a_plugin_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, message: str
) -> None:
    name = f"chainrag_bad_plugin_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(body + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match=rf"^plugin module '{name}' {message}"):
        reg.load_plugin(name)


def test_find_plugin_imports_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"chainrag_probe_pkg_{uuid.uuid4().hex[:12]}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('the package ran')\n")
    (package / "sub.py").write_text("raise RuntimeError('the module ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg.find_plugin(f"{name}.sub")
    assert name not in sys.modules
    with pytest.raises(PluginError, match=rf"'{name}.nope' not found \(no module named"):
        reg.find_plugin(f"{name}.nope")
    with pytest.raises(PluginError, match=r"\('os.path' is not a package\)"):
        reg.find_plugin("os.path.join")
    reg.find_plugin("os.path")  # a module os puts in sys.modules, though os is no package
    reg.find_plugin("venv.__main__")  # found, and not run
