"""The results page's claims, recomputed: every figure docs/results.md's claims rest on,
computed by the project's own code from what the repository keeps (the run folders of
``docs/runs``, the probes of ``docs/probes``, the adapter and reranker reports) into one
machine-readable file, ``docs/claims.json``, and written from it into the page.

    chainrag claims                 # writes docs/claims.json, then its figures into
                                    # docs/results.md (between the page's markers)
    chainrag claims --check         # exit 1, naming each figure, if the file is not what the
                                    # runs give or the page not what the file gives (a changed
                                    # run, a number edited by hand)

:mod:`~chainrag.claims.figures` holds the kinds of figure (a paired difference as ``chainrag
compare`` gives it, with the difference it could detect; requests a question; a walk's first
checks; a stored probe's table), :mod:`~chainrag.claims.page` one function per group of
claims, :mod:`~chainrag.claims.markers` how the page's markers write them. Figures of the
papers and of the final test on held-out files are not here: the repository does not hold
what they were measured on, and the page marks them.

Layer: above the experiments (it re-tables their stored probes) and the analyses; reads stored
files only: no model, no LLM call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainrag.claims.markers import PAGE, fill, stale
from chainrag.claims.page import CLAIMS, claims

__all__ = ["CLAIMS", "CLAIMS_FILE", "PAGE", "claims", "differences", "document", "stale_page",
           "write", "write_page"]  # fmt: skip

CLAIMS_FILE = Path("docs") / "claims.json"
"""Where the claims file lives, relative to the repository's root."""


def document(root: Path) -> dict[str, Any]:
    """The claims file's content: how it is made, then each group's figures."""
    return {
        "about": "Every figure of docs/results.md's claims page, computed from docs/runs, "
        "docs/probes, docs/adapters and docs/rerankers by `chainrag claims`, which writes them "
        "into the page between its markers (regenerate: `chainrag claims`; check: `chainrag "
        "claims --check`). F1 in points; a paired difference as `chainrag compare` gives it, "
        "with the smallest difference it could detect (80% power, two-sided 5%; floor: set by "
        "the flip floor, not the spread).",
        "claims": claims(root),
    }


def write(root: Path, path: Path | None = None) -> Path:
    """Compute the claims of the repository at ``root`` and write them (to
    :data:`CLAIMS_FILE` under ``root`` by default); the path written."""
    out = path or root / CLAIMS_FILE
    out.write_text(json.dumps(document(root), indent=1, ensure_ascii=False) + "\n",
                   encoding="utf-8")  # fmt: skip
    return out


def write_page(claims_file: Path, page: Path) -> Path:
    """Write the figures of the claims file into ``page`` between its markers
    (:func:`~chainrag.claims.markers.fill`); the path written."""
    stored = json.loads(claims_file.read_text(encoding="utf-8"))["claims"]
    page.write_text(fill(page.read_text(encoding="utf-8"), stored), encoding="utf-8")
    return page


def stale_page(claims_file: Path, page: Path) -> list[str]:
    """Each figure of ``page`` that is not what the claims file gives
    (:func:`~chainrag.claims.markers.stale`)."""
    stored = json.loads(claims_file.read_text(encoding="utf-8"))["claims"]
    return stale(page.read_text(encoding="utf-8"), stored)


def differences(stored: Any, computed: Any, where: str = "") -> list[str]:
    """Each place where the stored claims differ from those computed, as ``path: stored ->
    computed`` (empty when they agree)."""
    if isinstance(stored, dict) and isinstance(computed, dict):
        out = []
        for key in dict.fromkeys([*stored, *computed]):
            at = f"{where}.{key}" if where else str(key)
            if key not in stored or key not in computed:
                out.append(f"{at}: {stored.get(key, 'missing')} -> {computed.get(key, 'missing')}")
            else:
                out += differences(stored[key], computed[key], at)
        return out
    return [] if stored == computed else [f"{where}: {stored} -> {computed}"]
