"""docs/recipes.md is the recipe reference generated from the code, and is current."""

from __future__ import annotations

import subprocess
import sys

from chainrag.recipes.reference import as_markdown, reference_markdown
from chainrag.recipes.registry import load_builtins

from .conftest import ROOT


def test_the_reference_documents_every_section_field_and_component() -> None:
    load_builtins()
    text = reference_markdown()
    for section in ("## `llm:`", "## `index:`", "## `retrieval:`", "### edge_builder"):
        assert section in text
    for field in ("`prompt_cache`", "`n_ctx`", "`edge_weights`", "`key_entities`", "`plugins`"):
        assert field in text
    assert "**`similarity_topk`**" in text and "| `m` | `int` | `10` |" in text


def test_docs_recipes_md_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "recipe_reference.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_rest_becomes_markdown() -> None:
    assert as_markdown("``k`` of :data:`~a.b.LOCAL` and :func:`x.y`") == "`k` of `LOCAL` and `x.y`"
