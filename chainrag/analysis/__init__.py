"""Analyses of finished runs, read from their run folders: is a difference between runs more
than noise (:mod:`~chainrag.analysis.paired`), what ChainRAG's graph walks did
(:mod:`~chainrag.analysis.walks`), and where its two integrations part ways
(:mod:`~chainrag.analysis.integration_gap`). The commands ``chainrag compare``, ``chainrag
walks`` and ``chainrag integration-gap`` print what these functions return.

Layer: this package reads runs through :mod:`chainrag.run.reading` (their folders, records,
recipes, answers by name, walks) and may import the typed records (:mod:`chainrag.run.record`,
:mod:`chainrag.run.files`' errors), the report's rows and statistics (:mod:`chainrag.report`,
:mod:`chainrag.report.stats`), the answer metrics (:mod:`chainrag.data.metrics`) and the
errors; never the LLM layer (:mod:`chainrag.llm`, nor components that pull it in) nor the CLI.
It reads stored records only: no LLM call, and no model except in
:mod:`~chainrag.analysis.gold_walks` (``chainrag walks --gold``), which reads the questions'
indexes through :mod:`chainrag.run.sources` and, asked to build a missing one, loads the
recipe's models; it is not imported here, so that importing this package stays light.
"""

from chainrag.analysis.integration_gap import IntegrationGap, Split, holds, integration_gap
from chainrag.analysis.paired import (
    Comparison,
    Paired,
    compare,
    compare_runs,
    paired,
    pooled,
    sign_test,
)
from chainrag.analysis.walks import WalkSummary, summary, walks, walks_table

__all__ = [
    "Comparison",
    "IntegrationGap",
    "Paired",
    "Split",
    "WalkSummary",
    "compare",
    "compare_runs",
    "holds",
    "integration_gap",
    "paired",
    "pooled",
    "sign_test",
    "summary",
    "walks",
    "walks_table",
]
