"""Reports from stored runs: markdown tables per dataset beside the paper's Table 1, and plots.

    chainrag report runs/musique/ansint runs/musique/naive --plots docs/plots

Every row is one answer of one run (a ChainRAG run gives an AnsInt and a CxtInt row), averaged
over the questions the run answered: F1, EM (in %), Recall@k of the units the method retrieved
(paragraph level on MuSiQue, sentence level on HotpotQA/2Wiki; see :mod:`chainrag.data.metrics`),
LLM calls per question (requests the method made, answered by the model or by the response
cache), tokens per question (of the requests the model answered), USD per question when the
LLM is priced (litellm's price map; local models are free and show no column), and seconds
per question (wall time, index building included). The paper's Table 1 rows are printed below
ours, labelled as the paper's, since they were measured with other LLMs, other contexts
(LongBench's) and 200 questions per dataset. With runs on two datasets or more, a first table
puts F1 / EM side by side per dataset, in the layout of Table 1; below each dataset's table,
F1 by the dataset's question type when it has several (2Wiki's comparison, compositional...).

:mod:`~chainrag.report.runs` reads stored runs into rows and groups them into comparisons,
:mod:`~chainrag.report.tables` writes the markdown, :mod:`~chainrag.report.figures` the plots
(one function per figure), :mod:`~chainrag.report.paper` holds the paper's tables as data.

Layer: the report reads run folders (:mod:`chainrag.run.folder` and the typed records); never
the LLM layer nor the CLI.
"""

from chainrag.report.figures import plots
from chainrag.report.paper import ABLATION_LABELS
from chainrag.report.runs import (
    ABLATIONS,
    GROUPS,
    K_SWEEP,
    MAIN_RECIPES,
    PRETTY,
    SEED_LABELS,
    Comparison,
    Row,
    Run,
    comparisons,
    f1_by_type,
    find_runs,
    groups_of,
    load_run,
    on_common_questions,
    rows_of,
)
from chainrag.report.tables import across_datasets, dataset_table, markdown, type_table

__all__ = [
    "ABLATIONS",
    "ABLATION_LABELS",
    "GROUPS",
    "K_SWEEP",
    "MAIN_RECIPES",
    "PRETTY",
    "SEED_LABELS",
    "Comparison",
    "Row",
    "Run",
    "across_datasets",
    "comparisons",
    "dataset_table",
    "f1_by_type",
    "find_runs",
    "groups_of",
    "load_run",
    "markdown",
    "on_common_questions",
    "plots",
    "rows_of",
    "type_table",
]
