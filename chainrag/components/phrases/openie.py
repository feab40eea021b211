"""HippoRAG's LLM OpenIE (Gutiérrez et al. 2024, §3.1): a passage's named entities, then its
triples given those entities, each one LLM call with the authors' prompts (``openie_ner@v1``,
``openie_triples@v1``).

A reply is read as the authors' code reads it (``src/processing.py``'s ``extract_json_dict``,
the first brace-balanced JSON object of the reply): a reply without one, or without the key
the step asks for, gives no entities or no triples — never an error — and the extraction says
so (``ner_read``, ``triples_read``), so a graph counts the replies it could not read.

Extractions are kept by passage text in a text store (``$CHAINRAG_CACHE/annotations/
openie.sqlite``), in a space made of this component's identity and the LLM's
(:class:`~chainrag.protocols.llm.IdentifiedLLM`: its endpoint, model and sampling): a passage
shared by several questions, recipes or runs is read once per LLM. An LLM that cannot say what
it is (a scripted fake) is asked every time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from chainrag.core.paths import cache_root
from chainrag.core.phrase_graph import Extraction
from chainrag.core.text_store import Codec, TextStore, digest, stored
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.protocols.llm import LLM, IdentifiedLLM
from chainrag.recipes.registry import OPEN_IE
from chainrag.recipes.structure import identity

_JSON_DICT = re.compile(r"\{(?:[^{}]|(?:\{(?:[^{}]|(?:\{[^{}]*\})*)*\})*)*\}")
"""The authors' pattern (``extract_json_dict``): an object with at most two levels inside."""


def reference_json_dict(text: str) -> dict[str, Any] | None:
    """The first JSON object of ``text`` as the authors' ``extract_json_dict`` finds it: the
    first match of their brace pattern, read with ``json.loads``; None where there is none or
    it does not parse (their ``''``)."""
    found = _JSON_DICT.search(text)
    if found is None:
        return None
    try:
        value = json.loads(found.group())
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def read_entities(reply: str) -> tuple[tuple[str, ...], bool]:
    """The entities of a NER reply, de-duplicated and sorted (the code's ``np.unique``), and
    whether the reply was read; a reply without ``named_entities`` gives none, as the code's."""
    found = reference_json_dict(reply)
    if found is None or "named_entities" not in found:
        return (), False
    value = found["named_entities"]
    items = value if isinstance(value, list) else [value]
    names = {str(v) for v in items if isinstance(v, str | int | float) and not isinstance(v, bool)}
    return tuple(sorted(names)), True


def read_triples(reply: str) -> tuple[tuple[tuple[str, ...], ...], bool]:
    """The triples of a triples reply, each as the LLM wrote it (strings; a triple that is not
    a list is dropped), and whether the reply was read; a reply without ``triples`` gives
    none, as the code's ``eval(...)["triples"]`` failing does."""
    found = reference_json_dict(reply)
    if found is None or "triples" not in found:
        return (), False
    value = found["triples"]
    rows = value if isinstance(value, list) else []
    return tuple(tuple(str(s) for s in row) for row in rows if isinstance(row, list)), True


def _codec() -> Codec[Extraction]:
    def encode(e: Extraction) -> bytes:
        data = [list(e.entities), [list(t) for t in e.triples], e.ner_read, e.triples_read]
        return json.dumps(data).encode()

    def decode(raw: bytes) -> Extraction:
        entities, triples, ner_read, triples_read = json.loads(raw)
        return Extraction(
            tuple(entities), tuple(tuple(t) for t in triples), bool(ner_read), bool(triples_read)
        )

    return encode, decode


@OPEN_IE.register("llm_openie")
@attrs.frozen
class LLMOpenIE:
    """HippoRAG's LLM OpenIE (§3.1), two calls a passage with the authors' prompts.

    The named entities first, then the triples given them; an unreadable reply gives nothing
    and is marked on the extraction. Recipe: ``{kind: llm_openie}``.
    """

    ner_prompt_version: int = 1
    """The version of the NER prompt (``openie_ner@v1``: the authors')."""
    triples_prompt_version: int = 1
    """The version of the triples prompt (``openie_triples@v1``: the authors')."""
    triples_max_tokens: int = attrs.field(default=4096, validator=attrs.validators.ge(1))
    """The triples reply's token limit (the code's 4,096)."""

    def __call__(self, texts: Sequence[str], ctx: Context) -> tuple[Extraction, ...]:
        llm = ctx.require_llm("llm_openie")
        space = self.space(llm)
        if space is None:
            return tuple(self.extract(text, llm) for text in texts)
        path = cache_root() / "annotations" / "openie.sqlite"
        store = ctx.models.get(("text store", str(path)), lambda: TextStore(path))
        made = stored(
            store,
            space,
            texts,
            lambda part: [self.extract(t, llm) for t in part],
            _codec(),
            chunk=1,
        )
        return tuple(made)

    def space(self, llm: LLM) -> str | None:
        """The store's space for ``llm``'s extractions; None for an LLM that says no identity."""
        who = llm.identity() if isinstance(llm, IdentifiedLLM) else None
        return None if who is None else digest({"component": identity(self), "llm": who})

    def extract(self, text: str, llm: LLM) -> Extraction:
        """One passage's extraction: the NER call, then the triples call given its entities."""
        ner = load_prompt("openie_ner", self.ner_prompt_version)
        entities, ner_read = read_entities(llm.complete(ner.request(passage=text)).text)
        prompt = load_prompt("openie_triples", self.triples_prompt_version)
        named = json.dumps({"named_entities": list(entities)})
        request = attrs.evolve(
            prompt.request(passage=text, named_entity_json=named),
            max_tokens=self.triples_max_tokens,
        )
        triples, triples_read = read_triples(llm.complete(request).text)
        return Extraction(entities, triples, ner_read, triples_read)
