"""``chainrag view``'s page in a real browser: headless Chromium (Debian's ``chromium``; CI
installs it) opens the page of two stored MuSiQue runs and the toy run whose graph is cached,
filters the list, opens a question, finds its walk's SVG, follows a node to its sentence,
and the page reports no JavaScript error. Screenshots are saved (``$CHAINRAG_VIEW_SHOTS`` keeps
them, else the test's temporary folder)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from chainrag.view import Examples, Indexes, read_runs, render
from chainrag.view.browser import Browser, find_chromium
from tests.conftest import DATA_ROOT
from tests.view_runs import ROOT, make_toy_run

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="no Chromium on PATH: the real-browser test of chainrag view needs it "
    "(Debian: apt-get install chromium; .ci/run installs it)",
)

RUNS = ROOT / "docs" / "runs" / "musique"
MUSIQUE_DEV = DATA_ROOT / "musique_dev.jsonl"


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The page of the stored ansint and naive runs and the toy run (``toy``), its dataset
    file holding the toy question and the MuSiQue dev set's."""
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    dev = MUSIQUE_DEV.read_text(encoding="utf-8") if MUSIQUE_DEV.is_file() else ""
    toy = make_toy_run(tmp_path, name="toy", more_questions=dev)
    monkeypatch.setenv("CHAINRAG_DATA", str(toy.data))
    runs, notes = read_runs([RUNS / "ansint", RUNS / "naive", toy.folder])
    out = tmp_path / "view.html"
    out.write_text(render(runs, notes, Examples(), Indexes(), plots=False).html, encoding="utf-8")
    return out


def shots(tmp_path: Path) -> Path:
    kept = os.environ.get("CHAINRAG_VIEW_SHOTS")
    return Path(kept) if kept else tmp_path


def choose(browser: Browser, **values: str) -> Any:
    """Set filters (``method="naive/naive"``) as a person would, then read the count."""
    for name, value in values.items():
        browser.evaluate(
            f"(() => {{ const f = document.getElementById('f-{name}'); f.value = {value!r}; "
            f"f.dispatchEvent(new Event(f.tagName === 'INPUT' ? 'input' : 'change')); }})()"
        )
    return browser.evaluate("document.querySelectorAll('#question-list tr.qrow:not([hidden])')"
                            ".length")  # fmt: skip


def test_the_page_in_chromium(page: Path, tmp_path: Path) -> None:
    ansint = {r.id: r for r in read_runs([RUNS / "ansint"])[0][0].records}
    naive = {r.id: r for r in read_runs([RUNS / "naive"])[0][0].records}
    total = len(set(ansint) | set(naive)) + 1
    with Browser.start(width=1280, height=900) as browser:
        browser.open(page.resolve().as_uri())
        assert browser.evaluate("document.querySelector('section.view.shown').id") == "overview"
        browser.screenshot(shots(tmp_path) / "overview.png")
        browser.evaluate("location.hash = '#questions'")
        assert browser.evaluate("document.getElementById('f-count').textContent") == (
            f"{total} of {total} questions"
        )

        wrong = sum(1 for r in naive.values() if r.em == 0)
        assert choose(browser, method="naive/naive", outcome="wrong") == wrong
        disagree = sum(1 for q, r in naive.items() if q in ansint
                       and (r.em == 1) != (ansint[q].em == 1))  # fmt: skip
        assert choose(browser, outcome="", versus="ansint/ansint") == disagree
        dimmed = browser.evaluate("document.querySelectorAll('tr.qrow:not([hidden]) .chip.dim')"
                                  ".length")  # fmt: skip
        assert dimmed == disagree  # ansint's CxtInt chip, beside the two compared
        assert choose(browser, method="", versus="", text="where alice was born") == 1
        browser.screenshot(shots(tmp_path) / "questions.png")

        browser.evaluate("document.querySelector('tr.qrow:not([hidden]) a').click()")
        shown = browser.evaluate("document.querySelector('section.view.shown').id")
        assert shown == browser.evaluate("location.hash.slice(1)")
        assert browser.evaluate("document.querySelector('section.view.shown h2').textContent") == (
            "Which country borders the country where Alice was born?"
        )
        walk = ("document.querySelector('section.view.shown details[data-method=toy] "
                "svg.walk')")  # fmt: skip
        assert browser.evaluate(f"{walk}.querySelectorAll('g.node').length") == 8
        assert browser.evaluate(f"{walk}.querySelectorAll('path').length") > 0
        assert browser.evaluate(f"{walk}.getBoundingClientRect().width") > 200
        browser.evaluate(f"{walk}.querySelector('g.node[data-unit=\"5\"]')"
                         ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")  # fmt: skip
        flashed = browser.evaluate("Array.from(document.querySelectorAll('section.view.shown "
                                   "li.unit.flash')).map(e => e.dataset.unit)")  # fmt: skip
        assert flashed and set(flashed) == {"5"}
        browser.evaluate(f"{walk}.scrollIntoView()")
        browser.screenshot(shots(tmp_path) / "walk.png")
        assert browser.errors == []
    for name in ("overview.png", "questions.png", "walk.png"):
        png = (shots(tmp_path) / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
