"""The ``litellm`` reranker: any rerank model litellm reaches (ChainRAG's baselines rerank with
BGE-Reranker; Patwa et al. distil their students from Cohere's reranker).

A hosted reranker (``cohere/rerank-english-v3.0``, ``voyage/rerank-2``,
``jina_ai/jina-reranker-v2-base-multilingual``) or a server of one's own by ``api_base``
(``infinity/NAME``, ``hosted_vllm/NAME``, ``huggingface/NAME`` for Text Embeddings Inference,
``cohere/NAME`` for any server speaking Cohere's ``/v1/rerank``) scores each candidate against
the query; the candidates are reordered by those scores, read by each document's index.

Scores are paid for once, as LLM answers are: each (query, document) score is kept in the text
store ``$CHAINRAG_CACHE/rerank/scores.sqlite`` under the endpoint's identity and the query, so a
rerun or a second recipe asking the same makes no request. Requests hold at most the provider's
documents a request, several in flight, paced and retried by the LLM layer's machinery
(:mod:`chainrag.llm.encoders`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import attrs

from chainrag.components.retrieval.rerankers import rescored
from chainrag.core.endpoint import REACHED
from chainrag.core.paths import cache_root
from chainrag.core.text_store import Codec, TextStore, holds_endpoint, mark_endpoint, stored
from chainrag.core.types import EncoderUsage, Hit
from chainrag.llm.encoders import (
    EncoderBackend,
    canonical_model,
    check_encoder,
    encoder_backend,
    encoder_identity,
    provider_of,
)
from chainrag.llm.pacing import Limits
from chainrag.protocols.context import Context
from chainrag.recipes.registry import RERANKERS

PROVIDER_DOCUMENTS = {"cohere": 1000, "voyage": 1000, "jina_ai": 2048, "together_ai": 1000}
"""The most documents one rerank request may hold, by litellm's provider name; a provider not
here takes ``batch_size`` as given."""

STAGE = "rerank"
"""The stage a reranker's work is counted under (:class:`~chainrag.core.context.EncoderLedger`)."""


def score_codec() -> Codec[float]:
    """A score as 8 little-endian bytes (float64), exactly as received."""

    def decode(raw: bytes) -> float:
        if len(raw) != 8:
            raise ValueError("a stored score is 8 bytes")
        return float(struct.unpack("<d", raw)[0])

    return (lambda score: struct.pack("<d", score)), decode


def score_store(ctx: Context) -> TextStore:
    """The text store of rerank scores, opened once per run."""
    path = cache_root() / "rerank" / "scores.sqlite"
    return ctx.models.get(("text store", str(path)), lambda: TextStore(path))


@RERANKERS.register("litellm", example=lambda: _standin_example())
@attrs.frozen
class LiteLLMReranker:
    """Each candidate's score from a rerank model through litellm, by index, paid for once
    (the paper's BGE-Reranker served, or Cohere's).

    ``model``: any litellm rerank model string; ``api_base``: a server's URL; ``batch_size``
    documents a request at most (within the provider's limit); ``concurrency`` requests in
    flight across the run; ``requests_per_minute`` paced. Recipe:
    ``{kind: litellm, model: cohere/rerank-english-v3.0}``.
    """

    model: str = attrs.field(converter=canonical_model)
    api_base: str | None = attrs.field(default=None, metadata=REACHED)
    batch_size: int = attrs.field(default=1000, validator=attrs.validators.ge(1))
    concurrency: int = attrs.field(default=4, validator=attrs.validators.ge(1), metadata=REACHED)
    requests_per_minute: float | None = attrs.field(default=None, validator=attrs.validators
                                                    .optional(attrs.validators.gt(0)),
                                                    metadata=REACHED)  # fmt: skip
    timeout_s: float = attrs.field(default=60.0, validator=attrs.validators.gt(0), metadata=REACHED)
    max_retries: int = attrs.field(default=4, validator=attrs.validators.ge(0), metadata=REACHED)

    def identity(self) -> str:
        """The endpoint identity of this reranker's scores (model and endpoint)."""
        return encoder_identity(self.model, self.api_base)

    def stages(self) -> tuple[str, ...]:
        """The stage its work is counted under: ``rerank``."""
        return (STAGE,)

    def check_endpoint(self, *, call: bool) -> None:
        """The LLM's preflight for this model (:func:`~chainrag.llm.encoders.check_encoder`)."""
        check_encoder(self.model, self.api_base, "rerank", call=call)

    def stored_before(self) -> bool:
        """Whether the store holds values computed at this endpoint (a replay needs no key)."""
        return holds_endpoint(cache_root() / "rerank" / "scores.sqlite", self.identity())

    def score_space(self, query: str) -> str:
        """The store's space of the scores of documents against ``query``."""
        payload = {"endpoint": self.identity(), "query": query}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def scores(self, query: str, documents: Sequence[str], ctx: Context) -> list[float]:
        """Each of ``documents``' score against ``query``: from the store, else asked."""
        if not documents:
            return []
        store, sent = score_store(ctx), []

        def fetch(part: list[str]) -> list[float]:
            sent.append(len(part))
            mark_endpoint(store, self.identity())
            return self._fetch(query, part, ctx)

        found = stored(store, self.score_space(query), documents, fetch, score_codec(),
                       self._most() * self.concurrency)  # fmt: skip
        if ctx.encoders is not None:
            ctx.encoders.record(STAGE, EncoderUsage(stored=len(set(documents)) - sum(sent)))
        return found

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        if not hits:
            return ()
        return rescored(hits, self.scores(query, list(texts[: len(hits)]), ctx))

    def _most(self) -> int:
        """Documents a request at most: ``batch_size`` within the provider's limit."""
        return min(self.batch_size,
                   PROVIDER_DOCUMENTS.get(provider_of(self.model), self.batch_size))  # fmt: skip

    def _backend(self, ctx: Context) -> EncoderBackend:
        limits = Limits(self.concurrency, self.requests_per_minute)
        key = ("litellm encoder", self.model, self.api_base, limits, self.timeout_s,
               self.max_retries)  # fmt: skip
        return ctx.models.get(key, lambda: encoder_backend(
            self.model, self.api_base, limits, timeout_s=self.timeout_s,
            max_retries=self.max_retries))  # fmt: skip

    def _fetch(self, query: str, documents: list[str], ctx: Context) -> list[float]:
        """The scores of ``documents`` from the provider, in requests of at most
        :meth:`_most` documents, several in flight; their usage recorded in ``ctx.encoders``."""
        most = self._most()
        parts = [documents[i : i + most] for i in range(0, len(documents), most)]
        send = functools.partial(self._backend(ctx).rerank, self.model, query)
        if len(parts) == 1:
            answers = [send(parts[0])]
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(parts))) as pool:
                answers = list(pool.map(send, parts))
        if ctx.encoders is not None:
            ctx.encoders.record(STAGE, sum((a.usage for a in answers), EncoderUsage()))
        return [score for answer in answers for score in answer.scores]


def _standin_example() -> dict[str, object]:
    """The stand-in server's reranker (started once for the process): a remote reranker that
    conformance checks can call."""
    from chainrag.standin.server import shared_standin

    return {"model": "cohere/standin-rerank", "api_base": shared_standin()}
