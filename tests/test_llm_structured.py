from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrag.core.errors import LLMOutputError
from chainrag.llm.fake import ScriptedLLM
from chainrag.llm.prompts import load_prompt
from chainrag.llm.structured import JSONParseError, complete_json, parse_json

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**12), 10**12),
        st.floats(allow_nan=False, allow_infinity=False), text,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)
    ),
    max_leaves=15,
)  # fmt: skip
containers = st.one_of(
    st.lists(json_values, max_size=4), st.dictionaries(text, json_values, max_size=4)
)
prose = st.text(alphabet="abc .:!\n", max_size=20)


def _trailing_commas(dumped: str) -> str:
    return dumped.replace("]", ",]").replace("}", ",}").replace("[,]", "[]").replace("{,}", "{}")


@given(containers, prose, prose)
def test_reads_json_inside_prose_and_fences(value: Any, before: str, after: str) -> None:
    dumped = json.dumps(value)
    assert parse_json(f"{before}{dumped}{after}") == value
    assert parse_json(f"{before}```json\n{dumped}\n```{after}") == value


@given(containers)
def test_reads_python_literals_single_quotes(value: Any) -> None:
    assert parse_json(repr(value)) == value


@given(containers)
def test_reads_trailing_commas(value: Any) -> None:
    dumped = json.dumps(value, ensure_ascii=True)
    if '"' in dumped and any(c in s for s in _strings(value) for c in "[]{}"):
        return  # the naive mangler would also edit brackets inside strings
    assert parse_json(_trailing_commas(dumped)) == value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    return []


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("Sure! Here's the list:\n```\n['Who wrote X?', 'Where was he born?',]\n```", None),
        ('{answer: "Paris", sure: True}', {"answer": "Paris", "sure": True}),
        ('The answer: {"answer": "Ireland\'s capital"} — done', {"answer": "Ireland's capital"}),
        ("[1, 2.5, -3e2, +4]", [1, 2.5, -300.0, 4]),
    ],
)
def test_known_mangles(raw: str, value: Any) -> None:
    expected = value if value is not None else ["Who wrote X?", "Where was he born?"]
    assert parse_json(raw) == expected


@pytest.mark.parametrize("raw", ["", "no json here", "[1, 2", "{'a': }", "{a b}"])
def test_unreadable_text_is_a_parse_error(raw: str) -> None:
    with pytest.raises(JSONParseError, match="no JSON object or array found"):
        parse_json(raw)


def _as_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a JSON array of strings")
    return value


def test_complete_json_repairs_once() -> None:
    fake = ScriptedLLM({"answer_short": ["not json"], "answer_short/repair": ['["a", "b"]']})
    request = load_prompt("answer_short").request(context="c", question="q")
    value, responses = complete_json(fake, request, _as_list)
    assert value == ["a", "b"]
    assert len(responses) == 2
    repair = fake.requests[1]
    assert repair.messages[-2].content == "not json"
    assert "could not be used" in repair.messages[-1].content


def test_complete_json_gives_up_with_a_typed_error() -> None:
    fake = ScriptedLLM({"answer_short": ["nope"], "answer_short/repair": ['{"not": "a list"}']})
    request = load_prompt("answer_short").request(context="c", question="q")
    with pytest.raises(LLMOutputError, match=r"unusable JSON after one repair: expected a JSON"):
        complete_json(fake, request, _as_list)


def test_complete_json_first_try() -> None:
    fake = ScriptedLLM({"answer_short": ['["x"]']})
    request = load_prompt("answer_short").request(context="c", question="q")
    assert complete_json(fake, request, _as_list)[0] == ["x"]
    assert fake.calls() == 1
