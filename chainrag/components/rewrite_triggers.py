"""Rewrite triggers: does a sub-question refer to an earlier answer? (ChainRAG §3.3)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from chainrag.recipes.registry import REWRITE_TRIGGERS

PRONOUNS_AND_DEMONSTRATIVES = (
    "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs",
    "this", "that", "these", "those",
)  # fmt: skip
"""Default trigger words: personal/possessive pronouns and demonstratives."""


def _words(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(w.lower() for w in value)


def _non_empty(_: object, a: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
    if not value or any(not w.strip() for w in value):
        raise ValueError(f"'{a.name}' must be a non-empty list of non-empty words")


def has_whole_word(text: str, words: Iterable[str]) -> bool:
    """True if any of ``words`` occurs in ``text`` as a whole word, ignoring case."""
    tokens = set(re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()))
    return any(w in tokens for w in words)


def has_substring(text: str, words: Iterable[str]) -> bool:
    """True if any of ``words`` occurs anywhere in ``text``, ignoring case."""
    lowered = text.lower()
    return any(w in lowered for w in words)


@REWRITE_TRIGGERS.register("pronoun_words")
@attrs.frozen
class PronounWords:
    """Fires when the sub-question contains a pronoun or demonstrative as a whole word.

    ChainRAG §3.3 (the paper's rule; the default). Recipe: ``{kind: pronoun_words}``.
    """

    words: tuple[str, ...] = attrs.field(
        default=PRONOUNS_AND_DEMONSTRATIVES, converter=_words, validator=_non_empty
    )

    def __call__(self, sub_question: str) -> bool:
        return has_whole_word(sub_question, self.words)


@REWRITE_TRIGGERS.register("substring")
@attrs.frozen
class Substring:
    """Fires when any trigger word occurs as a substring, as the authors' code tests it.

    So "the" (contains "he") and "city" (contains "it") fire too; use it only to reproduce that
    code. Recipe: ``{kind: substring}``.
    """

    words: tuple[str, ...] = attrs.field(
        default=PRONOUNS_AND_DEMONSTRATIVES, converter=_words, validator=_non_empty
    )

    def __call__(self, sub_question: str) -> bool:
        return has_substring(sub_question, self.words)
