"""HippoRAG's query linking (Gutiérrez et al. 2024, §3.2), as ``HippoRAG.query_ner`` and
``link_node_by_dpr`` do it: the LLM names the query's entities (prompt ``query_ner@v1``), each is
cleaned as the graph's phrases are and linked to its most similar phrase by the recipe's
embedder; a linked phrase's reset weight is 1 / (passages naming it) with node specificity,
1 without (the paper's "w/o node specificity" ablation).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from chainrag.components.phrases.graph import clean_phrase
from chainrag.components.phrases.openie import reference_json_dict
from chainrag.core.phrase_graph import Linking, PhraseGraph
from chainrag.core.types import FloatArray
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.protocols.index import Embedder
from chainrag.recipes.registry import ENTITY_LINKERS


def read_query_entities(reply: str) -> tuple[tuple[str, ...], bool]:
    """A query NER reply's entities, cleaned, in order, and whether it was read: the code's
    ``eval(reply)['named_entities']`` then ``processing_phrases`` of each, where anything that
    fails (no JSON object, no key, an entity that is not text) gives no entities."""
    found = reference_json_dict(reply)
    value = found.get("named_entities") if found is not None else None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return (), False
    return tuple(clean_phrase(v) for v in value), True


def link_nearest(
    entities: Sequence[str], vectors: FloatArray, graph: PhraseGraph, specificity: bool
) -> Linking:
    """Each entity (its vector a row of ``vectors``) linked to the phrase of highest cosine
    (the first of equals), and the reset weights of the phrases linked."""
    sims = np.asarray(vectors @ graph.vectors.T, dtype=np.float64)
    linked = sims.argmax(axis=1)
    reset = np.zeros(len(graph.phrases))
    counts = graph.passages_per_phrase()
    for phrase in linked:
        reset[phrase] = 1.0 / counts[phrase] if specificity and counts[phrase] > 0 else 1.0
    scores = tuple(float(sims[i, p]) for i, p in enumerate(linked))
    return Linking(tuple(entities), tuple(int(p) for p in linked), scores, reset)


@ENTITY_LINKERS.register("query_ner")
@attrs.frozen
class QueryNERLinker:
    """HippoRAG's query linking (§3.2): the query's named entities, each to its nearest phrase.

    The LLM names the entities (an unreadable reply links nothing); each is linked to the
    phrase of highest cosine and gives it a reset weight.
    Recipe: ``{kind: query_ner, node_specificity: true}``.
    """

    node_specificity: bool = True
    """Weigh a linked phrase 1 / (passages naming it); false: 1 (the paper's ablation)."""
    prompt_version: int = 1
    """The version of the query NER prompt (``query_ner@v1``: the authors')."""

    def __call__(self, query: str, graph: PhraseGraph, embedder: Embedder, ctx: Context) -> Linking:
        llm = ctx.require_llm("query_ner linking")
        request = load_prompt("query_ner", self.prompt_version).request(question=query)
        entities, read = read_query_entities(llm.complete(request).text)
        if not entities or not graph.phrases:
            return Linking(entities, reset=np.zeros(len(graph.phrases)), read=read)
        vectors = embedder(list(entities), ctx, "passage")
        return attrs.evolve(
            link_nearest(entities, vectors, graph, self.node_specificity), read=read
        )
