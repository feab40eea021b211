"""Reports from stored runs: markdown tables per dataset beside the paper's Table 1, and plots.

    chainrag report runs/musique/ansint runs/musique/naive --plots-dir docs/plots

Every row is one answer of one run (a ChainRAG run gives an AnsInt and a CxtInt row), averaged
over the questions the run answered: F1, EM (in %, each with its 95% bootstrap interval over
the questions, seeded so that the report is reproducible byte for byte), Recall@k of the units
the method retrieved (paragraph level on MuSiQue, sentence level on HotpotQA/2Wiki; see
:mod:`chainrag.data.metrics`), LLM calls per question (requests the method made, answered by
the model or by the response cache), tokens per question (of the requests the model answered),
USD per question when the LLM is priced (litellm's price map; local models are free and show no
column), the remote encoders' work a question by stage where a run's records hold it
(embedding tokens sent for passages and for queries, rerank searches; no column where no run
has any), and seconds per question (wall time, index building included). The paper's Table 1
rows are printed below ours, labelled as the paper's, since they were measured with other LLMs,
other contexts (LongBench's) and 200 questions per dataset. With runs on two datasets or more,
a first table puts F1 / EM side by side per dataset, in the layout of Table 1; below each
dataset's table, F1 by the dataset's question type when it has several (2Wiki's comparison,
compositional...). With a baseline (``--baseline naive``: a recipe name; repeated, each dataset
takes the first it has), each table holding it is followed by every other answer's paired F1
difference from the baseline's on the questions both answered, with its bootstrap interval and
the sign test's p, a difference whose interval spans 0 marked as not beyond noise. The plots
draw the intervals.

:mod:`~chainrag.report.runs` reads stored runs into rows and groups them into comparisons,
:mod:`~chainrag.report.stats` holds the bootstrap and the sign test (``chainrag compare``'s
too), :mod:`~chainrag.report.tables` writes the markdown, :mod:`~chainrag.report.figures` the
plots (one function per figure), :mod:`~chainrag.report.paper` holds the paper's tables as
data.

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
    Against,
    Comparison,
    Row,
    Run,
    against,
    check_baselines,
    comparisons,
    f1_by_type,
    find_runs,
    groups_of,
    load_run,
    on_common_questions,
    rows_of,
)
from chainrag.report.stats import Interval, Paired, interval, paired, sign_test
from chainrag.report.tables import (
    across_datasets,
    against_table,
    dataset_table,
    markdown,
    paper_table,
    type_table,
)

__all__ = [
    "ABLATIONS",
    "ABLATION_LABELS",
    "GROUPS",
    "K_SWEEP",
    "MAIN_RECIPES",
    "PRETTY",
    "SEED_LABELS",
    "Against",
    "Comparison",
    "Interval",
    "Paired",
    "Row",
    "Run",
    "across_datasets",
    "against",
    "against_table",
    "check_baselines",
    "comparisons",
    "dataset_table",
    "f1_by_type",
    "find_runs",
    "groups_of",
    "interval",
    "load_run",
    "markdown",
    "on_common_questions",
    "paired",
    "paper_table",
    "plots",
    "rows_of",
    "sign_test",
    "type_table",
]

from chainrag import _callable_package

_callable_package(__name__)  # chainrag.report(...) calls chainrag.api.report
