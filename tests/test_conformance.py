"""Every registered component passes the public conformance kit (:mod:`chainrag.api.conformance`,
scikit-learn's ``check_estimator`` idea), and each of its checks fails on a probe made to fail
it: a component that is not frozen, one that replaces a resource of its context, one whose
``__call__`` only has the right name.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from chainrag.api.conformance import (
    EXAMPLE_INPUTS,
    check_behaviour,
    check_component,
    check_documented,
    check_frozen,
    check_registered,
    check_round_trip,
    check_signature,
)
from chainrag.protocols.context import Context
from chainrag.recipes.registry import REGISTRIES, Entry, Registry

from . import chainrag_toy_plugin  # noqa: F401  (a plugin's components must conform too)

ENTRIES = [(r, e) for r in REGISTRIES for e in r]


def test_every_stage_with_components_has_example_inputs() -> None:
    missing = sorted({r.stage for r, _ in ENTRIES} - set(EXAMPLE_INPUTS))
    assert not missing, f"add example inputs for: {missing}"


@pytest.mark.parametrize(("registry", "entry"), ENTRIES, ids=lambda x: getattr(x, "key", ""))
class TestComponent:
    def test_builds_from_example_and_round_trips(
        self, registry: Registry[Any], entry: Entry
    ) -> None:
        assert check_round_trip(entry.cls, registry.stage, entry.example_params()) == []

    def test_satisfies_its_protocol(self, registry: Registry[Any], entry: Entry) -> None:
        assert check_signature(entry.cls, registry.stage) == []

    def test_is_documented_with_a_recipe_example(
        self, registry: Registry[Any], entry: Entry
    ) -> None:
        assert check_documented(entry.cls, registry.stage) == []

    def test_is_frozen_parameters_only(self, registry: Registry[Any], entry: Entry) -> None:
        assert check_frozen(entry.cls, registry.stage, entry.example_params()) == []

    def test_deterministic_and_does_not_mutate(self, registry: Registry[Any], entry: Entry) -> None:
        assert check_behaviour(entry.cls, registry.stage, entry.example_params()) == []


def test_the_kit_over_everything_registered_finds_nothing() -> None:
    assert check_registered() == {}


# ------------------------------------------------------------------ probes: each check can fail


@attrs.define
class MutableTrigger:
    """Fires on every question (a probe: not frozen)."""

    always: bool = True

    def __call__(self, sub_question: str) -> bool:
        return self.always


@attrs.frozen
class ContextStealingJudge:
    """Says yes, and takes the context's LLM away (a probe)."""

    def __call__(self, question: str, evidence: tuple[str, ...], ctx: Context) -> Any:
        from chainrag.core.types import Verdict

        ctx.llm = None
        return Verdict(ok=True, raw="yes")


@attrs.frozen
class NameOnlyTrigger:
    """Has a ``__call__``, with the wrong parameters and types (a probe)."""

    def __call__(self, text: int) -> str:
        return "yes"


def test_the_frozen_check_fails_on_a_mutable_component() -> None:
    problems = check_frozen(MutableTrigger, "rewrite_trigger")
    assert problems == [
        "MutableTrigger is not frozen: its field 'always' could be set (@attrs.frozen)"
    ]
    assert check_component(MutableTrigger, "rewrite_trigger") == problems


def test_the_behaviour_check_fails_on_a_component_that_replaces_a_context_resource() -> None:
    problems = check_behaviour(ContextStealingJudge, "sufficiency_judge")
    assert "ContextStealingJudge replaced the context's llm" in problems


def test_the_signature_check_fails_where_only_the_name_matches() -> None:
    problems = check_signature(NameOnlyTrigger, "rewrite_trigger")
    assert problems == [
        "NameOnlyTrigger.__call__ takes ['text'], the rewrite_trigger Protocol ['sub_question']",
        "NameOnlyTrigger.__call__ returns <class 'str'>, the rewrite_trigger Protocol "
        "<class 'bool'>",
    ]
    assert check_round_trip(NameOnlyTrigger, "rewrite_trigger") == [
        "NameOnlyTrigger is not registered as a rewrite_trigger (@REWRITE_TRIGGERS.register)"
    ]


@attrs.define
class HalfFrozenTrigger:
    """Its first field cannot be set, its second can (a probe)."""

    always: bool = attrs.field(default=True, on_setattr=attrs.setters.frozen)
    loose: bool = True

    def __call__(self, sub_question: str) -> bool:
        return self.always


def test_the_frozen_check_tries_every_field() -> None:
    assert check_frozen(HalfFrozenTrigger, "rewrite_trigger") == [
        "HalfFrozenTrigger is not frozen: its field 'loose' could be set (@attrs.frozen)"
    ]
