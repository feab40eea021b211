"""The results page's figures, written from the claims file: each figure of docs/results.md that
docs/claims.json holds stands between two markers that name where in the file it comes from
and how it is written, and :func:`fill` rewrites every one of them, so the page cannot say
another number than the runs give. The prose around the figures is written by hand.

    <!--c:diff:baselines.cxtint_vs_naive-->+11.53 [+2.5, +21.0]<!--/c-->

A marker is ``<!--c:FORMAT:PATH-->`` (an HTML comment: the rendered page shows only the
figure) and ends at the next ``<!--/c-->``. PATH is a figure's place in the claims (group,
name, and a field, dot-separated: ``cheaper.requests@one_hop``,
``frozen.one_hop_choose_probabilities_vs_cxtint.sd``); a few formats take several, comma-
separated. FORMAT is one of :data:`FORMATS`: a paired difference as ``diff`` (``+11.53
[+2.5, +21.0]``), ``diffb`` (its difference bold where the interval leaves 0 out, as the
page's tables mark what is beyond noise), ``delta``, ``absdelta`` (its size), ``ci``, ``bw``
(better / worse), ``bws`` (better / worse / same), ``p`` (the sign test), ``det`` (the
detectable difference, ``‡`` where the flip floor sets it), ``base`` and ``other`` (the two
means); a number as ``f0``–``f4`` (decimals), ``int`` (thousands separated), ``pct`` (a
share as a percentage); several numbers as ``range0`` / ``range1`` (least–most),
``absrange0`` (of their sizes), and two as ``fewer`` (how much smaller the first is than the
second, in %).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

PAGE = Path("docs") / "results.md"
"""The page the figures are written into, relative to the repository's root."""
MARK = re.compile(r"<!--c:(?P<form>[a-z0-9]+):(?P<paths>[^>]*?)-->(?P<text>.*?)<!--/c-->", re.S)
FLOOR = "‡"
"""Beside a detectable difference set by the flip floor (as ``chainrag compare`` marks it)."""


def _signed(value: float, digits: int) -> str:
    """``+2.5``, ``−5.3``: a signed figure with the page's minus sign."""
    return f"{value:+.{digits}f}".replace("-", "−")


def _number(value: float, digits: int) -> str:
    return f"{value:.{digits}f}".replace("-", "−")


def _interval(f: Mapping[str, Any]) -> str:
    return f"[{_signed(f['low'], 1)}, {_signed(f['high'], 1)}]"


def _beyond_noise(f: Mapping[str, Any]) -> bool:
    return bool(f["low"] > 0 or f["high"] < 0)


def _detectable(f: Mapping[str, Any]) -> str:
    found = f["detectable"]
    return "–" if found is None else f"{found:.1f}" + (f" {FLOOR}" if f.get("floor") else "")


def _one(render: Callable[[Any], str]) -> Callable[[Sequence[Any]], str]:
    def of(values: Sequence[Any]) -> str:
        if len(values) != 1:
            raise ValueError(f"takes one path, got {len(values)}")
        return render(values[0])

    return of


def _numbers(values: Sequence[Any]) -> list[float]:
    if not values or not all(isinstance(v, int | float) for v in values):
        raise ValueError("takes numbers")
    return [float(v) for v in values]


def _range(digits: int, size: bool = False) -> Callable[[Sequence[Any]], str]:
    def of(values: Sequence[Any]) -> str:
        found = [abs(v) if size else v for v in _numbers(values)]
        low, high = _number(min(found), digits), _number(max(found), digits)
        return low if low == high else f"{low}–{high}"

    return of


def _decimals(digits: int) -> Callable[[Sequence[Any]], str]:
    return _one(lambda v: _number(v, digits))


def _fewer(values: Sequence[Any]) -> str:
    mine, theirs = _numbers(values) if len(values) == 2 else (0.0, 0.0)
    if len(values) != 2 or theirs == 0:
        raise ValueError("takes two numbers, the second not 0")
    return f"{100 * (1 - mine / theirs):.0f}%"


FORMATS: dict[str, Callable[[Sequence[Any]], str]] = {
    "diff": _one(lambda f: f"{_signed(f['delta'], 2)} {_interval(f)}"),
    "diffb": _one(lambda f: (f"**{_signed(f['delta'], 2)}**" if _beyond_noise(f)
                             else _signed(f["delta"], 2)) + f" {_interval(f)}"),
    "delta": _one(lambda f: _signed(f["delta"], 2)),
    "absdelta": _one(lambda f: f"{abs(f['delta']):.2f}"),
    "ci": _one(_interval),
    "bw": _one(lambda f: f"{f['better']} / {f['worse']}"),
    "bws": _one(lambda f: f"{f['better']} / {f['worse']} / {f['same']}"),
    "p": _one(lambda f: f"{f['sign_p']:.3f}"),
    "det": _one(_detectable),
    "base": _one(lambda f: f"{f['base']:.2f}"),
    "other": _one(lambda f: f"{f['other']:.2f}"),
    **{f"f{d}": _decimals(d) for d in range(5)},
    "int": _one(lambda v: f"{int(v):,}"),
    "pct": _one(lambda v: f"{100 * v:.0f}%"),
    "range0": _range(0),
    "range1": _range(1),
    "absrange0": _range(0, size=True),
    "fewer": _fewer,
}  # fmt: skip
"""How a figure is written, by the name a marker gives."""


def figure(claims: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` (dot-separated keys) in the claims; a KeyError naming the path
    where it is not there."""
    found: Any = claims
    for key in path.split("."):
        if not isinstance(found, Mapping) or key not in found:
            raise KeyError(f"{path}: no {key!r} in the claims file")
        found = found[key]
    return found


def written(form: str, paths: str, claims: Mapping[str, Any]) -> str:
    """One marker's figure, as ``form`` writes the values at ``paths`` (comma-separated).

    Raises:
        ValueError: an unknown format, a path the claims do not hold, or values the format
            cannot write, each naming the marker.
    """
    where = f"<!--c:{form}:{paths}-->"
    if form not in FORMATS:
        raise ValueError(f"{where}: unknown format {form!r} (known: {', '.join(FORMATS)})")
    try:
        return FORMATS[form]([figure(claims, p.strip()) for p in paths.split(",")])
    except (KeyError, TypeError, ValueError) as exc:
        message = exc.args[0] if exc.args else type(exc).__name__
        raise ValueError(f"{where}: {message}") from None


def fill(page: str, claims: Mapping[str, Any]) -> str:
    """``page`` with every marker's figure written from ``claims`` (the claims file's
    ``claims``); the text outside markers as it was.

    Raises:
        ValueError: a marker that cannot be written (:func:`written`), naming each.
    """
    problems: list[str] = []

    def one(match: re.Match[str]) -> str:
        try:
            text = written(match["form"], match["paths"], claims)
        except ValueError as exc:
            problems.append(str(exc))
            return match[0]
        return f"<!--c:{match['form']}:{match['paths']}-->{text}<!--/c-->"

    out = MARK.sub(one, page)
    if problems:
        raise ValueError("\n".join(problems))
    return out


def stale(page: str, claims: Mapping[str, Any]) -> list[str]:
    """Each marker whose figure on ``page`` is not what ``claims`` give, as ``FORMAT:PATH:
    'on the page' -> 'from the claims'`` (empty when every one agrees).

    Raises:
        ValueError: a marker that cannot be written (:func:`written`).
    """
    out = []
    for match in MARK.finditer(page):
        text = written(match["form"], match["paths"], claims)
        if text != match["text"]:
            out.append(f"{match['form']}:{match['paths']}: {match['text']!r} -> {text!r}")
    return out


def figures(page: str) -> list[tuple[str, str]]:
    """Every marker's (format, paths) on ``page``, in order."""
    return [(m["form"], m["paths"]) for m in MARK.finditer(page)]


def unmarked(page: str) -> str:
    """``page`` with every marked figure taken out: what is written by hand."""
    return MARK.sub("", page)
