"""Write docs/recipes.md, the recipe file documented in full, from the code.

    .venv/bin/python scripts/recipe_reference.py            # writes docs/recipes.md
    .venv/bin/python scripts/recipe_reference.py --check    # exit 1 if it is not current

tests/test_recipe_reference.py runs the check, so the page cannot drift from the code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.recipes.reference import reference_markdown
from chainrag.recipes.registry import load_builtins

PAGE = Path(__file__).resolve().parent.parent / "docs" / "recipes.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    load_builtins()
    text = reference_markdown()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is out of date: run scripts/recipe_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"written to {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
