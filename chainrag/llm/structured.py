"""Structured output: ask for JSON, read it robustly, repair once, then fail with a typed error.

Small local models wrap JSON in code fences or prose, use single quotes, Python literals and
trailing commas. :func:`parse_json` reads all of those; :func:`complete_json` sends the request
(with a JSON schema the backend may enforce), and if the answer still cannot be read or does
not validate, asks once more with the error shown to the model, then raises
:class:`~chainrag.core.errors.LLMOutputError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import attrs

from chainrag.core.errors import LLMOutputError
from chainrag.core.types import LLMRequest, LLMResponse, Message
from chainrag.protocols.llm import LLM

T = TypeVar("T")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.S)
_LITERALS = {"true": "true", "True": "true", "false": "false", "False": "false",
             "null": "null", "None": "null"}  # fmt: skip


class JSONParseError(ValueError):
    """No JSON value could be read from the text."""


def parse_json(text: str) -> Any:
    """The first JSON value (object or array) in ``text``, read leniently.

    Accepts code fences, prose before and after, single-quoted strings, Python's
    True/False/None, trailing commas and unquoted keys.
    """
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    errors: list[str] = []
    for source in sources:
        for span in _balanced_spans(source):
            try:
                return json.loads(span)
            except ValueError:
                pass
            try:
                return json.loads(normalise(span))
            except ValueError as exc:
                errors.append(str(exc))
    snippet = text.strip().replace("\n", " ")[:120]
    detail = f" ({errors[0]})" if errors else ""
    raise JSONParseError(f"no JSON object or array found in {snippet!r}{detail}")


def _balanced_spans(text: str) -> Iterator[str]:
    """Each substring that starts at ``{`` or ``[`` and ends at its matching bracket, lazily."""
    for start, char in enumerate(text):
        if char in "{[":
            end = _match(text, start)
            if end is not None:
                yield text[start : end + 1]


def _match(text: str, start: int) -> int | None:
    depth, i, quote = 0, start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'" and _opens_string(text, i):
            quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _opens_string(text: str, i: int) -> bool:
    """A quote opens a string unless it is an apostrophe inside a word (``Ireland's``)."""
    if text[i] == '"':
        return True
    return not (i > 0 and text[i - 1].isalnum() and i + 1 < len(text) and text[i + 1].isalnum())


def normalise(span: str) -> str:
    """Rewrite a JSON-like span as JSON: quotes, literals, trailing commas, bare keys."""
    out: list[str] = []
    i = 0
    while i < len(span):
        c = span[i]
        if c in "\"'" and _opens_string(span, i):
            value, i = _read_string(span, i)
            out.append(json.dumps(value))
            continue
        if c == ",":
            rest = span[i + 1 :].lstrip()
            if rest[:1] in ("}", "]"):
                i += 1
                continue
        number = _NUMBER.match(span, i) if (c.isdigit() or c in "-+.") else None
        if number:
            out.append(number.group(0).lstrip("+"))
            i = number.end()
            continue
        if c.isalpha() or c == "_":
            word = re.match(r"[A-Za-z_][A-Za-z0-9_]*", span[i:])
            assert word is not None
            token = word.group(0)
            after = span[i + len(token) :].lstrip()
            if token in _LITERALS:
                out.append(_LITERALS[token])
            elif after.startswith(":"):
                out.append(json.dumps(token))
            else:
                raise JSONParseError(f"unexpected word {token!r}")
            i += len(token)
            continue
        out.append(c)
        i += 1
    return "".join(out)


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/"}


def _read_string(span: str, start: int) -> tuple[str, int]:
    quote, i, chars = span[start], start + 1, []
    while i < len(span):
        c = span[i]
        if c == "\\" and i + 1 < len(span):
            nxt = span[i + 1]
            width = {"x": 2, "u": 4, "U": 8}.get(nxt, 0)
            digits = span[i + 2 : i + 2 + width]
            if width and re.fullmatch(f"[0-9a-fA-F]{{{width}}}", digits):
                chars.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            chars.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if c == quote:
            return "".join(chars), i + 1
        chars.append(c)
        i += 1
    raise JSONParseError("unterminated string")


# --------------------------------------------------------------------------- with the LLM


def _read(text: str, validate: Callable[[Any], T]) -> T:
    return validate(parse_json(text))


def _repair(request: LLMRequest, bad: str, error: Exception) -> LLMRequest:
    note = (
        f"Your reply could not be used: {error}. Reply again with only the JSON, "
        "no explanation and no code fence."
    )
    messages = (*request.messages, Message("assistant", bad), Message("user", note))
    return attrs.evolve(request, messages=messages, prompt_id=f"{request.prompt_id}/repair")


def _give_up(request: LLMRequest, text: str, error: Exception) -> LLMOutputError:
    snippet = text.strip().replace("\n", " ")[:200]
    return LLMOutputError(
        f"unusable JSON after one repair: {error}; last reply: {snippet!r}",
        prompt_id=request.prompt_id,
        model=request.model,
        attempts=2,
    )


def complete_json(
    llm: LLM, request: LLMRequest, validate: Callable[[Any], T] = lambda v: v
) -> tuple[T, list[LLMResponse]]:
    """Ask for JSON and return ``validate(value)`` with the responses it took (1 or 2).

    ``validate`` turns the parsed value into what the caller needs, raising ``ValueError`` or
    ``TypeError`` when it does not fit; that counts as unusable output, like bad JSON.
    """
    first = llm.complete(request)
    try:
        return _read(first.text, validate), [first]
    except (ValueError, TypeError) as exc:
        fix = _repair(request, first.text, exc)
    second = llm.complete(fix)
    try:
        return _read(second.text, validate), [first, second]
    except (ValueError, TypeError) as exc:
        raise _give_up(request, second.text, exc) from exc
