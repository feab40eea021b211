"""LongRAG's LLM-augmented information extractor (Zhao et al., 2024): the retrieved chunks are
mapped back to the paragraphs they were cut from (:func:`source_paragraphs`), and the LLM
writes out what of those paragraphs is needed to answer the question: the "global
information" the generator reads beside the filtered chunks.

The extractor is a ``summarizer`` stage (question and texts in, text out), as ChainRAG's
summary of an unanswered step is.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from chainrag.core.budget import words
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.recipes.registry import SUMMARIZERS


def source_paragraphs(
    chunks: Sequence[str], sources: Sequence[int], paragraphs: Sequence[str], limit: int
) -> list[str]:
    """What LongRAG's extractor reads for chunks retrieved in this order (``s2l_doc`` in the
    authors' ``src/main.py``): each chunk's source paragraph the first time a chunk of it
    comes, in the chunks' order; a paragraph of ``limit`` words or more is replaced by the
    chunk itself, each time.

    Args:
        chunks: The retrieved chunks' texts, best first.
        sources: The number of each chunk's source paragraph, aligned with ``chunks``.
        paragraphs: Each chunk's source paragraph text, aligned with ``chunks``.
        limit: The length, in words, from which a paragraph is too long to read whole (the
            reference counts ChatGLM3 tokens against the reading model's window).
    """
    seen: set[int] = set()
    out: list[str] = []
    for chunk, source, paragraph in zip(chunks, sources, paragraphs, strict=True):
        if words(paragraph) >= limit:
            out.append(chunk)
        elif source not in seen:
            seen.add(source)
            out.append(paragraph)
    return out


@SUMMARIZERS.register("llm_extract")
@attrs.frozen
class LLMExtractor:
    """LongRAG's information extractor (Zhao et al., 2024): what the paragraphs give the question.

    The paragraphs joined with ``separator`` (the authors' code: none), then the LLM asked for
    the information needed to answer the question (``longrag_extract``, up to 1000 tokens);
    its reply, as it is, is the extracted information.

    Recipe: ``{kind: llm_extract}``.
    """

    prompt_version: int = 1
    separator: str = ""

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> str:
        llm = ctx.require_llm("llm_extract extractor")
        prompt = load_prompt("longrag_extract", self.prompt_version)
        reply = llm.complete(
            prompt.request(question=question, evidence=self.separator.join(evidence))
        )
        return reply.text
