"""What ``chainrag recipes`` lists: every recipe file with its name and description.

    for line in recipe_lines():      # "chainrag/ansint.yaml  ansint  ChainRAG, AnsInt + CxtInt…"
        print(line)

Each file is read on its own (its ``base:`` files are not merged), so listing runs no plugin
and a broken file is listed with what is wrong with it rather than stopping the list.
"""

from __future__ import annotations

import os
from pathlib import Path

from chainrag.core.errors import ChainragError
from chainrag.recipes.recipe import SHIPPED_RECIPES, parse_yaml, recipe_files

RECIPES = SHIPPED_RECIPES
"""The recipes that come with chainrag (a checkout's ``recipes/``)."""


def recipe_lines(folder: Path | None = None) -> list[str]:
    """One line per recipe file under ``folder`` (default :data:`RECIPES`): its path relative
    to the folder, its name (the file's stem where it names none: an overlay or a base) and
    its description, grouped by sub-folder."""
    root = folder or RECIPES
    if not root.is_dir():
        return [f"{root}: no such folder (the recipes come with a checkout of chainrag)"]
    rows = []
    for path in recipe_files([root]):
        try:
            data = parse_yaml(path.read_text(encoding="utf-8"), str(path))
        except (ChainragError, OSError, UnicodeDecodeError) as exc:
            rows.append((str(path.relative_to(root)), path.stem, f"(unreadable: {exc})"))
            continue
        data = data if isinstance(data, dict) else {}
        name = data.get("name") if isinstance(data.get("name"), str) else path.stem
        about = data.get("description") if isinstance(data.get("description"), str) else ""
        rows.append((str(path.relative_to(root)), str(name), " ".join(str(about).split())))
    width = max((len(r[0]) for r in rows), default=0)
    named = max((len(r[1]) for r in rows), default=0)
    shown = os.path.relpath(root)
    lines = [
        f"{len(rows)} recipes in {shown}/ (run one: chainrag run {shown}/FILE --dataset NAME; "
        "extend one from any folder by its path without .yaml: base: chainrag/ansint)"
    ]
    group = None
    for rel, name, about in rows:
        parent = str(Path(rel).parent)
        if parent != group:
            group = parent
            lines.append(f"\n{'(top level)' if parent == '.' else parent + '/'}")
        lines.append(f"  {rel:<{width}}  {name:<{named}}  {about or '(no description)'}")
    return lines
