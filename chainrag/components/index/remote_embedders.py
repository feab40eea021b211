"""The ``litellm`` embedder: any embedding model litellm reaches, as a local embedder is used.

ChainRAG's experiments embed with OpenAI's ``text-embedding-3-small`` (ChainRAG, "Baselines");
Patwa et al. adapt OpenAI embeddings. This embedder sends texts to any model string litellm
routes (``text-embedding-3-small``, ``cohere/embed-english-v3.0``, ``voyage/voyage-3``) or to a
server of one's own by ``api_base`` (vLLM, Text Embeddings Inference, Infinity, ollama:
``openai/NAME`` or ``hosted_vllm/NAME``), and gives what the local embedders give: L2-normalised
float32 rows, queries and passages in their roles (Cohere's and Voyage's ``input_type``; a
prefix such as e5's ``"query: "`` or a BGE instruction for a served model).

Each vector is paid for once: the embedder keeps its vectors in the text store
(``$CHAINRAG_CACHE/embeddings/vectors.sqlite``) under its endpoint's identity (model, endpoint,
dimensions, the input type) and the exact input sent, so a rerun, a second recipe, another
question holding the same sentence, or a query met before makes no request. Requests stay within
the provider's limits (inputs and tokens a request; an input over the model's token limit is cut,
counted, and reported once), several are in flight, and each is paced, retried and
Retry-After-honoured by the LLM layer's machinery (:mod:`chainrag.llm.encoders`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import attrs
import numpy as np

from chainrag.core.endpoint import REACHED
from chainrag.core.errors import LLMResponseError
from chainrag.core.paths import cache_root
from chainrag.core.text_store import TextStore, holds_endpoint, mark_endpoint, stored, vector_codec
from chainrag.core.types import EncoderUsage, FloatArray
from chainrag.llm.encoders import (
    EncoderBackend,
    canonical_model,
    check_encoder,
    encoder_backend,
    encoder_identity,
    max_input_tokens,
    provider_of,
)
from chainrag.llm.pacing import Limits
from chainrag.llm.tokens import cut_to_tokens
from chainrag.protocols.index import EmbedRole
from chainrag.protocols.resources import Resources
from chainrag.recipes.registry import EMBEDDERS

PROVIDER_INPUTS = {"openai": 2048, "azure": 2048, "cohere": 96, "voyage": 128, "mistral": 512,
                   "gemini": 100, "vertex_ai": 250, "jina_ai": 2048}  # fmt: skip
"""The most inputs one embedding request may hold, by litellm's provider name (each provider's
documented limit); a provider not here takes ``batch_size`` as given."""

BASE64_PROVIDERS = frozenset({"openai", "azure", "hosted_vllm", "infinity"})
"""The providers (litellm's names) whose embeddings API takes ``encoding_format: base64`` (the
OpenAI API's, vLLM's, Infinity's), which an ``auto`` embedder asks of them: the vectors then come
as float32 bytes, not numbers in JSON that litellm parses into Python lists (0.19 CPU s against
0.02 s a request of 150 inputs at 384 dimensions on 2 cores: docs/benchmarks.md §9)."""

INPUT_TYPES = {"cohere": ("search_query", "search_document"), "voyage": ("query", "document")}
"""The ``input_type`` of a query and of a passage, for the providers whose models take one."""

STAGES: dict[EmbedRole, str] = {"passage": "embed passages", "query": "embed queries"}
"""The stage a role's work is counted under (:class:`~chainrag.core.context.EncoderLedger`)."""


class InputsCut(UserWarning):
    """Inputs longer than the embedding model takes were cut to its limit (once a run)."""


def request_batches(inputs: Sequence[str], most: int, budget: int) -> Iterator[list[str]]:
    """``inputs`` in order, as requests of at most ``most`` inputs and ``budget`` UTF-8 bytes (a
    bound on their tokens: a byte-level BPE token holds at least one byte); an input over the
    budget alone is a request of its own."""
    batch: list[str] = []
    size = 0
    for text in inputs:
        cost = len(text.encode("utf-8"))
        if batch and (len(batch) == most or size + cost > budget):
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += cost
    if batch:
        yield batch


def unit_rows(x: FloatArray) -> FloatArray:
    """Rows scaled to unit length, as float32; a row a provider already normalised (its norm 1
    within float32 rounding) is kept as sent, so that its bits are the provider's."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    unit = np.abs(norms - 1.0) <= 1e-6
    scaled = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0).astype(np.float32)
    out: FloatArray = np.where(unit, x, scaled)
    return out


def vector_store(ctx: Resources) -> TextStore:
    """The text store of vectors (the one :class:`~chainrag.index.stores.EmbeddingCache` keeps),
    opened once per run."""
    path = cache_root() / "embeddings" / "vectors.sqlite"
    return ctx.models.get(("text store", str(path)), lambda: TextStore(path))


@EMBEDDERS.register("litellm", example=lambda: _standin_example())
@attrs.frozen
class LiteLLMEmbedder:
    """Vectors from an embedding model through litellm, each paid for once (ChainRAG's
    ``text-embedding-3-small``).

    ``model``: any litellm model string (a bare OpenAI name is read as ``openai/NAME``, so the
    two spellings are one recipe); ``api_base``: a server's URL; ``dimensions``: asked of a
    model that takes it (OpenAI's v3 models); ``query_prefix``/``passage_prefix``: prepended by
    role (a served e5: ``"query: "``, ``"passage: "``). ``batch_size`` inputs and
    ``request_tokens`` tokens a request at most (the provider's own limit on inputs applies
    too), ``concurrency`` requests in flight across the run, ``requests_per_minute`` and
    ``tokens_per_minute`` paced; ``max_input_tokens`` cuts a longer input (None: litellm's
    limit for the model); ``encoding_format``: how the vectors travel (``auto``: ``base64``
    from the providers of :data:`BASE64_PROVIDERS`, else the provider's default; ``float``
    where a server refuses ``base64``: the same vectors, more CPU). Recipe:
    ``{kind: litellm, model: text-embedding-3-small}``.
    """

    model: str = attrs.field(converter=canonical_model)
    api_base: str | None = attrs.field(default=None, metadata=REACHED)
    dimensions: int | None = attrs.field(default=None, validator=attrs.validators.optional(
        attrs.validators.ge(1)))  # fmt: skip
    query_prefix: str = ""
    passage_prefix: str = ""
    batch_size: int = attrs.field(default=256, validator=attrs.validators.ge(1))
    request_tokens: int = attrs.field(default=300_000, validator=attrs.validators.ge(1))
    max_input_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(
        attrs.validators.ge(1)))  # fmt: skip
    concurrency: int = attrs.field(default=4, validator=attrs.validators.ge(1), metadata=REACHED)
    requests_per_minute: float | None = attrs.field(default=None, validator=attrs.validators
                                                    .optional(attrs.validators.gt(0)),
                                                    metadata=REACHED)  # fmt: skip
    tokens_per_minute: float | None = attrs.field(default=None, validator=attrs.validators
                                                  .optional(attrs.validators.gt(0)),
                                                  metadata=REACHED)  # fmt: skip
    timeout_s: float = attrs.field(default=60.0, validator=attrs.validators.gt(0), metadata=REACHED)
    max_retries: int = attrs.field(default=4, validator=attrs.validators.ge(0), metadata=REACHED)
    encoding_format: Literal["auto", "base64", "float"] = attrs.field(
        default="auto", metadata=REACHED
    )

    def identity(self) -> str:
        """The endpoint identity of this embedder's vectors (model, endpoint, dimensions)."""
        return encoder_identity(self.model, self.api_base, dimensions=self.dimensions)

    def stages(self) -> tuple[str, ...]:
        """The stages its work is counted under: ``embed passages``, ``embed queries``."""
        return tuple(STAGES.values())

    def check_endpoint(self, *, call: bool) -> None:
        """The LLM's preflight for this model (:func:`~chainrag.llm.encoders.check_encoder`)."""
        check_encoder(self.model, self.api_base, "embedding", call=call,
                      encoding_format=self._wire())  # fmt: skip

    def stored_before(self) -> bool:
        """Whether the store holds values computed at this endpoint (a replay needs no key)."""
        return holds_endpoint(cache_root() / "embeddings" / "vectors.sqlite", self.identity())

    def input_type(self, role: EmbedRole) -> str | None:
        """The ``input_type`` sent for ``role`` where the provider takes one."""
        types = INPUT_TYPES.get(provider_of(self.model))
        return None if types is None else types[0 if role == "query" else 1]

    def vector_space(self, role: EmbedRole) -> str:
        """The store's space: the endpoint identity, the input type and the input limit (the
        texts are keyed as sent, prefix included)."""
        payload = {"endpoint": self.identity(), "input_type": self.input_type(role),
                   "max_input_tokens": self._limit()}  # fmt: skip
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def __call__(
        self, texts: Sequence[str], ctx: Resources, role: EmbedRole = "passage"
    ) -> FloatArray:
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        prefix = self.query_prefix if role == "query" else self.passage_prefix
        inputs = [prefix + text for text in texts]
        store, sent = vector_store(ctx), []

        def fetch(part: list[str]) -> list[FloatArray]:
            sent.append(len(part))
            mark_endpoint(store, self.identity())
            return list(self._fetch(part, role, ctx))

        wave = self._most() * self.concurrency
        rows = stored(store, self.vector_space(role), inputs, fetch, vector_codec(),
                      wave)  # fmt: skip
        if ctx.encoders is not None:
            found = len(set(inputs)) - sum(sent)
            ctx.encoders.record(STAGES[role], EncoderUsage(stored=found))
        return np.stack(rows).astype(np.float32, copy=False)

    def _most(self) -> int:
        """Inputs a request at most: ``batch_size`` within the provider's limit."""
        return min(self.batch_size, PROVIDER_INPUTS.get(provider_of(self.model), self.batch_size))

    def _wire(self) -> str | None:
        """The ``encoding_format`` asked for (None: none, the provider's default)."""
        if self.encoding_format == "auto":
            return "base64" if provider_of(self.model) in BASE64_PROVIDERS else None
        return self.encoding_format

    def _limit(self) -> int | None:
        return self.max_input_tokens or max_input_tokens(self.model)

    def _backend(self, ctx: Resources) -> EncoderBackend:
        limits = Limits(self.concurrency, self.requests_per_minute, self.tokens_per_minute)
        key = ("litellm encoder", self.model, self.api_base, limits, self.timeout_s,
               self.max_retries)  # fmt: skip
        return ctx.models.get(key, lambda: encoder_backend(
            self.model, self.api_base, limits, timeout_s=self.timeout_s,
            max_retries=self.max_retries))  # fmt: skip

    def _fetch(self, inputs: list[str], role: EmbedRole, ctx: Resources) -> FloatArray:
        """The vectors of ``inputs`` from the provider: cut to the model's limit, in requests
        within its limits, several in flight; their usage recorded in ``ctx.encoders``."""
        limit, cut = self._limit(), 0
        if limit is not None:
            cuts = [cut_to_tokens(self.model, text, limit) for text in inputs]
            cut = sum(c is not None for c in cuts)
            inputs = [c if c is not None else t for t, c in zip(inputs, cuts, strict=True)]
            if cut:
                self._report_cut(ctx, cut, limit)
        backend, kind = self._backend(ctx), self.input_type(role)
        send = functools.partial(backend.embed, self.model, dimensions=self.dimensions,
                                 input_type=kind, encoding_format=self._wire())  # fmt: skip
        requests = list(request_batches(inputs, self._most(), self.request_tokens))
        if len(requests) == 1:
            answers = [send(requests[0])]
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(requests))) as pool:
                answers = list(pool.map(send, requests))
        usage = sum((a.usage for a in answers), EncoderUsage(cut=cut))
        if ctx.encoders is not None:
            ctx.encoders.record(STAGES[role], usage)
        vectors = unit_rows(np.concatenate([a.vectors for a in answers]))
        if self.dimensions is not None and vectors.shape[1] != self.dimensions:
            raise LLMResponseError(f"asked {self.model} for {self.dimensions} dimensions, it "
                                   f"sent {vectors.shape[1]}", prompt_id="embedding")  # fmt: skip
        return vectors

    def _report_cut(self, ctx: Resources, cut: int, limit: int) -> None:
        """Say once a run that inputs were cut (the usage counts every one)."""
        said = ctx.models.get(("inputs cut", self.identity()), threading.Event)
        if not said.is_set():
            said.set()
            warnings.warn(f"{cut} input(s) longer than {self.model} takes were cut to its "
                          f"{limit} tokens (each counted in the run's encoder usage)",
                          InputsCut, stacklevel=2)  # fmt: skip


def _standin_example() -> dict[str, object]:
    """The stand-in server's embedding model (started once for the process): a remote
    embedder that conformance checks can call."""
    from chainrag.standin.server import shared_standin

    return {"model": "openai/standin-embed", "api_base": shared_standin(), "dimensions": 16}
