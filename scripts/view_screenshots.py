"""The README's screenshots of ``chainrag view`` (docs/view/*.png), taken in headless Chromium.

    python scripts/view_screenshots.py [--runs docs/runs/musique] [--question 0] [--out docs/view]

Writes the page of the runs (``--build-index``: missing indexes built, as ``chainrag view
--build-index``), then photographs the questions where ChainRAG (AnsInt) and NaiveRAG disagree
(``questions.png``) and one question's ChainRAG trace and walk (``question.png``, ``walk.png``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from chainrag.view import write_view
from chainrag.view.browser import Browser


def choose(browser: Browser, **values: str) -> None:
    for name, value in values.items():
        browser.evaluate(
            f"(() => {{ const f = document.getElementById('f-{name}'); f.value = {value!r}; "
            "f.dispatchEvent(new Event('change')); })()"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, nargs="+", default=[Path("docs/runs/musique")])
    parser.add_argument("--question", type=int, default=0, help="The question's number (q-N).")
    parser.add_argument("--method", default="ansint", help="The run whose trace is shown.")
    parser.add_argument("--out", type=Path, default=Path("docs/view"))
    parser.add_argument("--build-index", action="store_true")
    args = parser.parse_args()
    page = args.out / "view.html"
    write_view(args.runs, page, build_index=args.build_index, progress=print)
    with Browser.start(width=1280, height=820) as browser:
        browser.open(page.resolve().as_uri())
        browser.evaluate("location.hash = '#questions'")
        choose(browser, method="ansint/ansint", versus="naive/naive")
        browser.screenshot(args.out / "questions.png")
        browser.evaluate(f"location.hash = '#q-{args.question}'")
        block = f"section.view.shown details[data-method={args.method}]"
        browser.evaluate(f"document.querySelector('{block} .step').scrollIntoView()")
        browser.screenshot(args.out / "question.png")
        browser.evaluate(f"document.querySelector('{block} .walk-box').scrollIntoView()")
        browser.screenshot(args.out / "walk.png")
        if browser.errors:
            raise SystemExit(f"JavaScript errors: {browser.errors}")
    page.unlink()
    print(f"screenshots in {args.out}")


if __name__ == "__main__":
    main()
