"""Versioned prompt templates: ``chainrag/prompts/<id>@v<N>.yaml``.

A template file holds ``system`` and ``user`` texts with ``$name`` placeholders
(``string.Template``: JSON braces in worked examples need no escaping), optional ``shots``
(worked examples sent as earlier chat turns, each ``{user: ..., assistant: ...}``, literal
text), an optional ``json_schema`` the answer must follow, and optional
``max_tokens``/``temperature`` overrides.
The id and version travel with every request, so the cache and the accounting tell versions
apart; a changed prompt gets a new version file rather than an edit.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from string import Template
from typing import Any

import attrs
import yaml

from chainrag.core.errors import ChainragError
from chainrag.core.types import LLMRequest, Message

_FILE = re.compile(r"^(?P<id>[a-z][a-z0-9_]*)@v(?P<version>[0-9]+)\.yaml$")


class PromptError(ChainragError):
    """A prompt template is missing, malformed, or rendered with the wrong variables."""


@attrs.frozen
class Prompt:
    """One version of one prompt template."""

    id: str
    version: int
    system: str
    user: str
    json_schema: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    shots: tuple[tuple[str, str], ...] = ()

    @property
    def variables(self) -> frozenset[str]:
        names = Template(self.system).get_identifiers() + Template(self.user).get_identifiers()
        return frozenset(names)

    def render(self, **values: str) -> tuple[Message, ...]:
        """The messages with every placeholder filled; missing or unknown names are errors."""
        missing = sorted(self.variables - set(values))
        unknown = sorted(set(values) - self.variables)
        if missing or unknown:
            raise PromptError(
                f"prompt {self.id}@v{self.version}: missing {missing or 'nothing'}, "
                f"unknown {unknown or 'nothing'}; it takes {sorted(self.variables)}"
            )
        bad = sorted(k for k, v in values.items() if not isinstance(v, str))
        if bad:
            raise PromptError(f"prompt {self.id}@v{self.version}: values must be text: {bad}")
        messages = []
        if self.system.strip():
            messages.append(Message("system", Template(self.system).substitute(values)))
        for user, assistant in self.shots:
            messages += [Message("user", user), Message("assistant", assistant)]
        messages.append(Message("user", Template(self.user).substitute(values)))
        return tuple(messages)

    def request(self, **values: str) -> LLMRequest:
        """A request for this prompt; model and unset sampling come from the recipe's ``llm:``."""
        return LLMRequest(
            messages=self.render(**values),
            prompt_id=self.id,
            prompt_version=self.version,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            json_schema=self.json_schema,
        )


def available() -> dict[str, list[int]]:
    """Every prompt id with its versions, oldest first."""
    out: dict[str, list[int]] = {}
    for entry in resources.files("chainrag.prompts").iterdir():
        m = _FILE.match(entry.name)
        if m:
            out.setdefault(m["id"], []).append(int(m["version"]))
    return {k: sorted(v) for k, v in sorted(out.items())}


@functools.cache
def load_prompt(prompt_id: str, version: int | None = None) -> Prompt:
    """The template ``prompt_id`` at ``version`` (default: the newest)."""
    versions = available().get(prompt_id)
    if not versions:
        raise PromptError(f"no prompt {prompt_id!r}; available: {', '.join(available())}")
    version = versions[-1] if version is None else version
    if version not in versions:
        raise PromptError(f"prompt {prompt_id!r} has versions {versions}, not {version}")
    name = f"{prompt_id}@v{version}.yaml"
    data = yaml.safe_load(resources.files("chainrag.prompts").joinpath(name).read_text("utf-8"))
    return _build(prompt_id, version, data, name)


def _build(prompt_id: str, version: int, data: Any, name: str) -> Prompt:
    if not isinstance(data, dict) or not isinstance(data.get("user"), str):
        raise PromptError(f"{name}: expected a mapping with a 'user' text")
    allowed = {"description", "system", "shots", "user", "json_schema", "max_tokens",
               "temperature"}  # fmt: skip
    extra = sorted(set(data) - allowed)
    if extra:
        raise PromptError(f"{name}: unknown keys {extra}; allowed: {sorted(allowed)}")
    schema = data.get("json_schema")
    shots = data.get("shots") or []
    if not isinstance(shots, list) or not all(
        isinstance(s, dict) and set(s) == {"user", "assistant"}
        and all(isinstance(v, str) for v in s.values())
        for s in shots
    ):  # fmt: skip
        raise PromptError(f"{name}: 'shots' must be a list of {{user: text, assistant: text}}")
    return Prompt(
        id=prompt_id,
        version=version,
        system=data.get("system") or "",
        user=data["user"],
        json_schema=json.dumps(schema, sort_keys=True) if schema is not None else None,
        max_tokens=data.get("max_tokens"),
        temperature=data.get("temperature"),
        shots=tuple((s["user"], s["assistant"]) for s in shots),
    )
