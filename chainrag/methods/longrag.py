"""LongRAG (Zhao et al., 2024, "LongRAG: A Dual-Perspective Retrieval-Augmented Generation
Paradigm for Long-Context Question Answering"; code: QingFei1/LongRAG), the LongRAG row of the
ChainRAG paper's Table 1: a hybrid retriever (dense candidates, reranked, the top chunks), a
CoT-guided filter over the chunks, an information extractor over their source paragraphs, and
a generator over both.

``filter: null`` and ``extractor: null`` are the paper's ablations (the authors' ``--ext`` and
``--fil`` runs); with both null the method is the authors' vanilla RAG (``--rb``).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from chainrag.components.knowledge.cot_filter import CoTGuidedFilter
from chainrag.components.reasoning.answerers import JoinedAnswer
from chainrag.components.reasoning.extractors import LLMExtractor, source_paragraphs
from chainrag.core.context import MissingResourceError
from chainrag.core.types import Answer, KnowledgeItem, NamedAnswer, Prediction, QAExample, StepTrace
from chainrag.protocols.context import Context
from chainrag.protocols.knowledge import KnowledgeFilter
from chainrag.protocols.passages import SourcePassages
from chainrag.protocols.reasoning import Answerer, Summarizer
from chainrag.recipes.registry import METHODS


@METHODS.register("longrag")
@attrs.frozen
class LongRAG:
    """LongRAG (Zhao et al., 2024): top chunks, CoT-guided filter, extractor, generator.

    As the authors' ``src/main.py`` runs it with ``--ext_fil``: retrieve the top chunks for
    the question (the recipe's ``retrieval.seed``: 100 dense candidates, reranked, top 7);
    keep those the CoT-guided ``filter`` cites (the factual details); have the ``extractor``
    write out the information the chunks' source paragraphs give for the question (the global
    information; :func:`source_paragraphs`, paragraphs of ``paragraph_limit`` words or more
    read as their chunk); ``generator`` answers from the kept chunks followed by the
    extracted information.

    The step's trace keeps the retrieved chunks, the ones kept (``kept``; None without a
    filter) and the extracted information (``summary``; None without an extractor).
    Recipe: ``{kind: longrag, filter: {kind: cot_guided}, extractor: {kind: llm_extract}}``.
    """

    filter: KnowledgeFilter | None = attrs.field(factory=CoTGuidedFilter)
    extractor: Summarizer | None = attrs.field(factory=LLMExtractor)
    generator: Answerer = attrs.field(factory=JoinedAnswer)
    paragraph_limit: int = attrs.field(default=7000, validator=attrs.validators.ge(1))
    """Words from which a source paragraph is read as its chunk (the reference: the reading
    model's window in ChatGLM3 tokens, 7000 for GLM-4)."""

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        expansion = ctx.retrieve(question)
        chunks = ctx.texts(expansion.units)
        kept = self.filtered(question, expansion.units, chunks, ctx)
        details = [text for unit, text in zip(expansion.units, chunks, strict=True) if unit in kept]
        extracted = self.extract(question, expansion.units, chunks, ctx)
        evidence = details + ([extracted] if extracted is not None else [])
        answer = self.generator(question, evidence, ctx)
        step = StepTrace(question, None, expansion.units, expansion, answer, ctx.usage(),
                         kept=kept if self.filter is not None else None,
                         summary=extracted)  # fmt: skip
        return Prediction((NamedAnswer("longrag", Answer(answer.answer)),), (step,))

    def filtered(
        self, question: str, units: Sequence[int], chunks: Sequence[str], ctx: Context
    ) -> tuple[int, ...]:
        """The units the filter keeps, in retrieval order (all of them without a filter)."""
        if self.filter is None:
            return tuple(units)
        items = [KnowledgeItem(text, source=unit) for unit, text in zip(units, chunks, strict=True)]
        kept = {item.source for item in self.filter(question, items, ctx)}
        return tuple(unit for unit in units if unit in kept)

    def extract(
        self, question: str, units: Sequence[int], chunks: Sequence[str], ctx: Context
    ) -> str | None:
        """The extractor's reply over the units' source paragraphs (None without one)."""
        if self.extractor is None:
            return None
        index = ctx.require_index()
        if not isinstance(index, SourcePassages):
            raise MissingResourceError(
                f"LongRAG's extractor reads the retrieved units' source passages, which a "
                f"{type(index).__name__} does not know (use a chunk index, a sentence graph or "
                "a corpus index, or set extractor: null)"
            )
        sources = [index.passage_of(unit) for unit in units]
        paragraphs = [index.passage(number).text for number in sources]
        read = source_paragraphs(chunks, sources, paragraphs, self.paragraph_limit)
        return self.extractor(question, read, ctx)
