"""Training (Patwa et al.): the linear embedding adapter and the distilled reranker.

Each is a workflow that returns a typed report — :func:`train_adapter` an
:class:`AdapterReport`, :func:`distill_reranker` a :class:`DistillReport` — with the pieces it is
made of in their own modules: the training data and fit (``adapter_fit``, ``distill_fit``),
the teachers (``teachers``), the evaluations (``adapter_eval``, ``distill_eval``), and what
both share (``common``). ``chainrag train adapter|reranker`` only parse options, call the
workflow and print its report.

Layer: training sits above components, index, data and the LLM layer (it embeds, caches
embeddings, reads datasets, asks an LLM teacher) and below the CLI; nothing else in chainrag
imports it. What a trained adapter is at inference — its maps, its file format, the
``linear_adapter`` embedder — lives in :mod:`chainrag.components.index.linear_adapter`, which this
package writes files for and never the reverse.
"""

from chainrag.training.adapter import AdapterReport, BaseAndAdapted, train_adapter
from chainrag.training.adapter_eval import Separation
from chainrag.training.adapter_fit import TrainConfig
from chainrag.training.common import TrainingError
from chainrag.training.distill import DistillReport, distill_reranker
from chainrag.training.distill_eval import RankingMetrics
from chainrag.training.distill_fit import DistillConfig
from chainrag.training.teachers import Teacher, choose_teacher

__all__ = [
    "AdapterReport",
    "BaseAndAdapted",
    "DistillConfig",
    "DistillReport",
    "RankingMetrics",
    "Separation",
    "Teacher",
    "TrainConfig",
    "TrainingError",
    "choose_teacher",
    "distill_reranker",
    "train_adapter",
]
