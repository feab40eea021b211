"""Small helpers that write HTML: every text escaped, numbers formatted one way."""

from __future__ import annotations

import math
from html import escape

from chainrag.core.types import Usage


def esc(text: object) -> str:
    """``text`` escaped for an element's content or a quoted attribute."""
    return escape(str(text), quote=True)


VOID = frozenset({"br", "hr", "img", "input", "meta", "link"})
"""Elements without content or end tag."""


def el(tag: str, body: str = "", /, **attributes: object) -> str:
    """``<tag attributes>body</tag>`` (``<tag attributes>`` for a :data:`VOID` one); ``body``
    is HTML (escape text first), attribute names take ``_`` for ``-`` and a trailing ``_`` is
    dropped (``class_``); None or False leaves an attribute out, True writes it bare."""
    parts = [tag]
    for name, value in attributes.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    if tag in VOID:
        return f"<{' '.join(parts)}>"
    return f"<{' '.join(parts)}>{body}</{tag}>"


def num(value: float, digits: int = 2) -> str:
    """A number as the tables show it; NaN as "–"."""
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def usage_text(usage: Usage) -> str:
    """LLM calls (cache hits), tokens and seconds of some LLM usage."""
    cached = f" ({usage.cache_hits} cached)" if usage.cache_hits else ""
    tokens = usage.prompt_tokens + usage.completion_tokens
    return f"{usage.calls} calls{cached}, {tokens:,} tokens, {usage.latency_s:.1f} s"
