"""A run as a page to read: ``chainrag view RUN_DIR... --out FILE.html`` writes one
self-contained HTML file (CSS and script inlined, plots as ``data:`` URIs; nothing is fetched
when it is viewed) with three views:

1. the overview: per dataset, the methods side by side as ``chainrag report`` scores them
   (:mod:`~chainrag.view.overview`), and the report's plots;
2. the questions: a list filtered by dataset, method, right / wrong, where two methods
   disagree, and text, with every run's answers and F1;
3. one question: every run's trace explained step by step against the gold evidence
   (:mod:`~chainrag.view.question`), and the walk over the sentence graph as SVG
   (:mod:`~chainrag.view.walk`).

Unit texts and the graph's edges come from the index cache, or are built on request
(:mod:`chainrag.run.sources`); without them the page says so and shows unit numbers.

Layer: beside the report; it reads runs through :mod:`chainrag.run.reading` and what their
questions were asked over through :mod:`chainrag.run.sources`, and may import the records, the
report, the data and index layers and the recipes, never the LLM layer nor the CLI. It calls no
LLM; it loads a model only when asked to build a missing index.
"""

from chainrag.run.reading import run_folders
from chainrag.run.sources import Examples, Indexes, Unavailable, Units
from chainrag.view.page import Page, read_runs, render, write_view
from chainrag.view.walk import Walk, layout, walk_of, walk_svg

__all__ = [
    "Examples",
    "Indexes",
    "Page",
    "Unavailable",
    "Units",
    "Walk",
    "layout",
    "read_runs",
    "render",
    "run_folders",
    "walk_of",
    "walk_svg",
    "write_view",
]
