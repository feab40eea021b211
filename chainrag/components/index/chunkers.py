"""Chunkers: passages → fixed-size word chunks (NaiveRAG's index, the "w/o Graph" ablation)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from chainrag.core.types import Chunk, Passage
from chainrag.recipes.registry import CHUNKERS

_WORD = re.compile(r"\S+")


def word_windows(n_words: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """``[start, end)`` word windows of ``size`` with ``overlap``, covering ``n_words`` words."""
    if n_words == 0:
        return []
    step = size - overlap
    starts = range(0, max(n_words - overlap, 1), step)
    return [(s, min(s + size, n_words)) for s in starts]


@CHUNKERS.register("word_chunks", example={"size": 5, "overlap": 1})
@attrs.frozen
class WordChunks:
    """Splits each passage into chunks of ``size`` words, never across passages.

    Recipe: ``{kind: word_chunks, size: 100, overlap: 0}``.
    """

    size: int = attrs.field(default=100, validator=attrs.validators.ge(1))
    overlap: int = 0

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.overlap < self.size:
            raise ValueError(f"'overlap' must be in [0, size), got {self.overlap!r}")

    def __call__(self, passages: Sequence[Passage]) -> tuple[Chunk, ...]:
        chunks: list[Chunk] = []
        for p_index, passage in enumerate(passages):
            spans = [m.span() for m in _WORD.finditer(passage.text)]
            for position, (a, b) in enumerate(word_windows(len(spans), self.size, self.overlap)):
                start, end = spans[a][0], spans[b - 1][1]
                text = " ".join(passage.text[s:e] for s, e in spans[a:b])
                chunks.append(
                    Chunk(len(chunks), text, p_index, passage.title, position, start, end)
                )
        return tuple(chunks)


@CHUNKERS.register("titled_passages")
@attrs.frozen
class TitledPassages:
    """One unit per passage, its title, a line break, its text: HippoRAG's corpus passage.

    What HippoRAG's OpenIE reads and IRCoT's prompts show; a passage without a title is its
    text. Recipe: ``{kind: titled_passages}``.
    """

    def __call__(self, passages: Sequence[Passage]) -> tuple[Chunk, ...]:
        return tuple(
            Chunk(i, f"{p.title}\n{p.text}" if p.title else p.text, i, p.title, 0, 0, len(p.text))
            for i, p in enumerate(passages)
        )


@CHUNKERS.register("passages")
@attrs.frozen
class WholePassages:
    """One unit per passage (Patwa et al. retrieves whole paragraphs), its text led by the
    title ("Title: text") when ``with_title``. Recipe: ``{kind: passages, with_title: true}``.
    """

    with_title: bool = True

    def __call__(self, passages: Sequence[Passage]) -> tuple[Chunk, ...]:
        out = []
        for i, p in enumerate(passages):
            text = f"{p.title}: {p.text}" if self.with_title and p.title else p.text
            out.append(Chunk(i, text, i, p.title, 0, 0, len(p.text)))
        return tuple(out)
