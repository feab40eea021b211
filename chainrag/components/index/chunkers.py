"""Chunkers: passages → fixed-size word chunks (NaiveRAG's index, the "w/o Graph" ablation),
whole passages (Patwa et al.), and LongRAG's (Zhao et al., 2024) windows of punctuation-ended
pieces with sentence overlap."""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from chainrag.core.types import Chunk, Passage
from chainrag.recipes.registry import CHUNKERS

_WORD = re.compile(r"\S+")
_STOPS = ("!", "。", "，", "！", "?", "？", ",", ".", ";")
_PIECE_END = re.compile(f"({'|'.join(map(re.escape, _STOPS))})")
_NON_WORD = re.compile(r"[\W]")
_CJK = re.compile(r"([\u4e00-\u9fa5])")


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


def longrag_word_count(text: str) -> int:
    """Words as LongRAG's ``gen_index.py`` counts them (``get_word_count``): the lower-cased
    text split at every non-word character, each CJK character a word of its own."""
    return sum(
        1 for word in _NON_WORD.split(text.lower()) for part in _CJK.split(word) if part.strip()
    )


def punctuation_pieces(text: str, keep_tail: bool = False) -> list[tuple[int, int]]:
    """``[start, end)`` spans of ``text`` cut after each of ``! 。 ， ！ ? ？ , . ;`` (the cut
    mark stays with the piece before it), as ``gen_index.py``'s ``split_sentences`` makes its
    "sentences". The text after the last mark is dropped, as there, unless ``keep_tail``; a
    text with no mark at all is one piece."""
    parts = _PIECE_END.split(text)
    if len(parts) == 1:
        return [(0, len(text))]
    spans, start = [], 0
    for i in range(0, len(parts) - 1, 2):
        end = start + len(parts[i]) + len(parts[i + 1])
        spans.append((start, end))
        start = end
    if keep_tail and start < len(text):
        spans.append((start, len(text)))
    return spans


def sentence_windows(
    counts: Sequence[int], size: int, min_sentences: int, overlap: int
) -> list[list[int]]:
    """The pieces of each of LongRAG's chunks, in order (``split_sentences``, line by line):
    pieces gather until their words (``counts``) reach ``size`` less the words of the previous
    chunk's last ``overlap`` pieces, which the chunk then starts with (only where it would
    start after piece ``overlap``); a last chunk of fewer than ``min_sentences`` pieces is
    appended to the previous one, its overlap pieces repeated as the reference repeats them."""
    chunks: list[list[int]] = []
    gathered, overlap_words, start = 0, 0, 0
    for i, count in enumerate(counts):
        gathered += count
        if gathered >= size - overlap_words or i == len(counts) - 1:
            if i + 1 > overlap:
                overlap_words = sum(counts[i + 1 - overlap : i + 1])
            if chunks and start > overlap:
                start -= overlap
            if chunks and i == len(counts) - 1 and i - start + 1 < min_sentences:
                chunks[-1] += range(start, i + 1)
            else:
                chunks.append(list(range(start, i + 1)))
            gathered, start = 0, i + 1
    return chunks


@CHUNKERS.register("sentence_chunks", example={"size": 4, "min_sentences": 2, "overlap": 1})
@attrs.frozen
class SentenceChunks:
    """LongRAG's chunks (Zhao et al., 2024): punctuation-ended pieces up to ``size`` words.

    As the authors' ``gen_index.py --chunk_size 200 --min_sentence 2 --overlap 2``: each
    passage's text cut after each punctuation mark (commas too) into pieces, pieces gathered
    into chunks of about ``size`` words, each chunk after the first starting with the previous
    one's last ``overlap`` pieces, a last chunk of fewer than ``min_sentences`` pieces joined
    to the one before; never across passages.

    Words are counted as the reference counts them (:func:`longrag_word_count`, which splits
    at apostrophes and hyphens too). As there, a passage with no punctuation is one chunk
    whatever its length, and the text after a passage's last mark is dropped unless
    ``keep_tail`` (not the reference's); the passage text is chunked without its title.
    Recipe: ``{kind: sentence_chunks, size: 200, min_sentences: 2, overlap: 2}``.
    """

    size: int = attrs.field(default=200, validator=attrs.validators.ge(1))
    min_sentences: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    overlap: int = attrs.field(default=2, validator=attrs.validators.ge(0))
    keep_tail: bool = False

    def __call__(self, passages: Sequence[Passage]) -> tuple[Chunk, ...]:
        chunks: list[Chunk] = []
        for p_index, passage in enumerate(passages):
            pieces = punctuation_pieces(passage.text, self.keep_tail)
            counts = [longrag_word_count(passage.text[a:b]) for a, b in pieces]
            windows = sentence_windows(counts, self.size, self.min_sentences, self.overlap)
            for position, window in enumerate(windows):
                text = "".join(passage.text[slice(*pieces[j])] for j in window)
                start, end = pieces[window[0]][0], pieces[window[-1]][1]
                if text.strip():
                    chunks.append(
                        Chunk(len(chunks), text, p_index, passage.title, position, start, end)
                    )
        return tuple(chunks)
