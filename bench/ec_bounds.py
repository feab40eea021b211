"""What each way of bounding the EC layer does to its size, its build time and retrieval.

    .venv/bin/python bench/ec_bounds.py [--questions 82] [--no-corpus] [--repeats 3]
                                        [--max-sentences 50 200 1000] [--nearest 1 3 10 30]
                                        [--scale 1000000]

Sentences and entities are real: the 2Wiki dev set's paragraphs, split and tagged by spaCy
(en_core_web_sm), embedded by the offline all-MiniLM-L6-v2. Two settings:

- per question: each question's own paragraphs make its own graph (the paper's setting);
- pooled: one graph over every dev question's paragraphs plus, unless ``--no-corpus``, the
  HippoRAG 2Wiki corpus (``2wiki_hipporag_corpus``, chainrag/data/files/hipporag/).

Options (each row): the paper's EC (``entity_cooccurrence``, all NER labels, BM25 key entities
with α = 60); NER labels without NORP, ORDINAL, CARDINAL, QUANTITY, PERCENT, MONEY, DATE and
TIME (``ner: {labels: [...]}``; key entities scored again over what is left); ``max_sentences``
and ``nearest`` at a few values; and no EC layer at all, for reference. Last, the pooled
graph's key entities repeated to ``--scale`` sentences: the default builder's error (or not)
and the size and time of ``nearest: 10`` there.

Columns: undirected EC edges (summed over the questions' graphs in the per-question setting);
the share of them that the 13 key entities in most sentences make (edges whose two sentences
share one of them; only entities that make edges under the option count, and per question the
pooled graph's 13 are used); seconds to build the EC layer (median of ``--repeats``; key
entities and NER not included); and a retrieval figure that needs no LLM: the mean share of a
question's gold supporting sentences among "the 3 dense seeds (MiniLM) and their one-hop EC ∪ SS
∪ SA neighbours, strongest first, cut to 3000 words" (SS: m = 10; SA: window 3; weights 1). Also
the mean words that set holds, and the recall's mean difference from the paper's row with the
number of questions on which it is higher / lower (a paired comparison). "guard bound" is the
edge count the ``max_edges`` guard computes from sentence counts before any product (exact count
or above); "bound at 1M" is that bound for a corpus of 1M sentences in which every key entity
keeps its share of the sentences (right for the hubs, pessimistic for rare entities, which in a
larger corpus mostly are new entities, not more mentions). spaCy and embedding results are
cached (the first run pays for them: on this 2-core machine, busy with other work, 10 s to
split, 86 s of NER and 15 min of embeddings for the 23,308 sentences).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import numpy as np
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.index.edges import (
    EntityCooccurrence,
    LayerTooLargeError,
    SimilarityTopK,
    StructuralAdjacency,
    cooccurrence_bounds,
    key_incidence,
    nearest_pair_count,
    sentence_counts,
)
from chainrag.components.index.embedders import FlagModelEmbedder
from chainrag.components.index.key_entities import BM25KeyEntities
from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences
from chainrag.components.retrieval.expanders import expand_hops
from chainrag.components.retrieval.retrievers import top_k_hits
from chainrag.context import StageContext
from chainrag.core.budget import words
from chainrag.core.paths import cache_root
from chainrag.core.types import GraphInputs, Passage, QAExample, ScoredEntity, Sentence, Verdict
from chainrag.data.datasets import load_corpus, load_dataset, pool
from chainrag.data.metrics import retrieval_scores
from chainrag.index.build import EmbeddingCache, entity_name
from chainrag.index.graph import SentenceGraph
from chainrag.protocols.context import Context

NUMERIC_LABELS = ("NORP", "ORDINAL", "CARDINAL", "QUANTITY", "PERCENT", "MONEY", "DATE", "TIME")
TOP = 13

Key = tuple[str, str]


@attrs.frozen
class Tagged:
    """Split and NER output of a list of passages: per passage its sentences' (text, start,
    end), per sentence its mentions' (name, label)."""

    sentences: list[list[tuple[str, int, int]]]
    mentions: list[list[tuple[str, str]]]


# --------------------------------------------------------------------------- inputs


def passages_of(examples: Sequence[QAExample], corpus: bool) -> list[Passage]:
    """The pooled dev paragraphs, then the corpus passages not among them (by title and text)."""
    passages = list(pool(examples)[0].passages)
    if corpus:
        seen = {(p.title, p.text) for p in passages}
        extra = [p for p in load_corpus("2wiki_hipporag_corpus") if (p.title, p.text) not in seen]
        passages += [attrs.evolve(p, pid=str(len(passages) + i)) for i, p in enumerate(extra)]
    return passages


def tag(passages: Sequence[Passage], ctx: Context) -> Tagged:
    """spaCy sentences and entity mentions of ``passages``, cached on disk by their texts."""
    key = hashlib.sha256("\x00".join(p.text for p in passages).encode()).hexdigest()[:32]
    path = cache_root() / "bench" / f"ec_bounds_{key}.json"
    if path.is_file():
        split_rows, mention_rows = json.loads(path.read_text())
        return Tagged(
            [[(t, a, b) for t, a, b in p] for p in split_rows],
            [[(name, label) for name, label in s] for s in mention_rows],
        )
    start = time.perf_counter()
    split = SpacySentences()(passages, ctx)
    print(f"  split {len(passages)} passages: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    start = time.perf_counter()
    found = SpacyNER()([s.text for s in split], ctx)
    print(f"  NER {len(split)} sentences: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    sentences: list[list[tuple[str, int, int]]] = [[] for _ in passages]
    for s in split:
        sentences[s.passage].append((s.text, s.start, s.end))
    mentions = [[(entity_name(m), m.label) for m in row] for row in found]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([sentences, mentions]))
    return Tagged(sentences, mentions)


@attrs.frozen
class Setting:
    """One graph's inputs: its sentences (passage indexes local to ``passages``), each
    sentence's entity mentions as (name, label), and its embeddings."""

    passages: tuple[Passage, ...]
    sentences: tuple[Sentence, ...]
    mentions: list[list[tuple[str, str]]]
    vectors: np.ndarray = attrs.field(eq=False)


def setting_of(
    chosen: Sequence[Passage], where: dict[Key, int], tagged: Tagged, vectors: np.ndarray
) -> Setting:
    """The sentences of ``chosen`` passages (found in the tagged list through ``where``)."""
    first = np.cumsum([0] + [len(p) for p in tagged.sentences])
    sentences: list[Sentence] = []
    rows: list[int] = []
    for local, passage in enumerate(chosen):
        g = where[(passage.title, passage.text)]
        for position, (text, start, end) in enumerate(tagged.sentences[g]):
            sentences.append(
                Sentence(len(sentences), text, local, passage.title, position, start, end)
            )
            rows.append(int(first[g]) + position)
    mentions = [tagged.mentions[r] for r in rows]
    return Setting(tuple(chosen), tuple(sentences), mentions, vectors[rows])


# --------------------------------------------------------------------------- options


@attrs.frozen
class Option:
    """One row of the table: an EC builder (None: no EC layer) and whether the numeric and
    nationality entity types are left out before key entities are chosen."""

    label: str
    builder: EntityCooccurrence | None
    named_only: bool = False


def options(max_sentences: Sequence[int], nearest: Sequence[int]) -> list[Option]:
    out = [
        Option("paper (unbounded, all labels)", EntityCooccurrence(max_edges=None)),
        Option("labels without NORP..TIME", EntityCooccurrence(max_edges=None), True),
    ]
    out += [
        Option(f"max_sentences: {m}", EntityCooccurrence(max_sentences=m)) for m in max_sentences
    ]
    out += [Option(f"nearest: {k}", EntityCooccurrence(nearest=k)) for k in nearest]
    return [*out, Option("no EC layer", None)]


def key_entities_of(setting: Setting, named_only: bool) -> tuple[tuple[ScoredEntity, ...], ...]:
    """BM25 key entities (α = 60) of the setting's sentences, over all their entity types or
    only the named ones."""
    names = [
        [n for n, label in row if n and not (named_only and label in NUMERIC_LABELS)]
        for row in setting.mentions
    ]
    return BM25KeyEntities(alpha=60)(names)


def top_names(keys: tuple[tuple[ScoredEntity, ...], ...], builder: EntityCooccurrence) -> set[str]:
    """The 13 key entities in most sentences among those that make edges under ``builder``."""
    incidence, _ = key_incidence(keys, len(keys))
    counts = np.bincount(incidence.indices, minlength=incidence.shape[1])
    names = np.asarray(sorted({e.name for row in keys for e in row}), dtype=object)
    makes = (counts >= 2) & (counts <= (builder.max_sentences or counts.max(initial=0)))
    order = np.lexsort((names[makes], -counts[makes]))
    return set(names[makes][order][:TOP].tolist())


def only(keys: tuple[tuple[ScoredEntity, ...], ...], names: set[str]) -> GraphInputs:
    kept = tuple(tuple(e for e in row if e.name in names) for row in keys)
    return GraphInputs(sentences_for_keys(kept), kept)


def sentences_for_keys(keys: Sequence[object]) -> tuple[Sentence, ...]:
    return tuple(Sentence(i, "", 0, "", i, 0, 0) for i in range(len(keys)))


def timed(fn: Callable[[], sparse.csr_matrix], repeats: int) -> tuple[sparse.csr_matrix, float]:
    """The result of ``fn`` and its median seconds over ``repeats`` runs."""
    times, out = [], None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    assert out is not None
    return out, statistics.median(times)


# --------------------------------------------------------------------------- measuring


@attrs.frozen
class Graph:
    """A setting with its fixed layers (SS, SA), its key entities per option kind, and the
    questions it answers (with their query embeddings)."""

    setting: Setting
    layers: dict[str, sparse.csr_matrix]
    keys: dict[bool, tuple[tuple[ScoredEntity, ...], ...]]
    questions: list[tuple[QAExample, np.ndarray]]


def graph_of(setting: Setting, questions: list[tuple[QAExample, np.ndarray]]) -> Graph:
    inputs = GraphInputs(setting.sentences, (), setting.vectors)
    layers = {"ss": SimilarityTopK(m=10)(inputs), "sa": StructuralAdjacency(window=3)(inputs)}
    keys = {flag: key_entities_of(setting, flag) for flag in (False, True)}
    return Graph(setting, layers, keys, questions)


def recall_of(graph: Graph, ec: sparse.csr_matrix | None) -> tuple[list[float], list[int]]:
    """Per question: gold-sentence recall and words of the seeds + one-hop neighbours set."""
    s = graph.setting
    layers = dict(graph.layers) | ({"ec": ec} if ec is not None else {})
    n = len(s.sentences)
    view = SentenceGraph(
        passages=s.passages,
        sentences=s.sentences,
        embeddings=s.vectors,
        embedder=FlagModelEmbedder(),
        entities=(),
        incidence=sparse.csr_matrix((n, 0), dtype=np.float32),
        key_entities=(),
        layers=layers,
    ).view()
    texts = [x.text for x in s.sentences]
    recalls, totals = [], []
    for example, query in graph.questions:
        seeds = [h.index for h in top_k_hits(s.vectors @ query, 3)]
        got = expand_hops(seeds, view.neighbours, lambda u: words(texts[u]),
                          lambda _: Verdict(False), word_budget=3000, max_hops=1)  # fmt: skip
        scores = retrieval_scores(example, [s.sentences[u] for u in got.units])
        recalls.append(scores.recall_all)
        totals.append(scores.words)
    return recalls, totals


@attrs.frozen
class Measured:
    """One option on one or more graphs (sums and per-question lists)."""

    edges: int = 0
    top_edges: int = 0
    bound: int = 0
    seconds: float = 0.0
    recalls: tuple[float, ...] = ()
    words: tuple[int, ...] = ()

    def __add__(self, other: Measured) -> Measured:
        return Measured(
            self.edges + other.edges,
            self.top_edges + other.top_edges,
            self.bound + other.bound,
            self.seconds + other.seconds,
            self.recalls + other.recalls,
            self.words + other.words,
        )


def measure(graph: Graph, option: Option, top: set[str] | None, repeats: int) -> Measured:
    """``option`` on ``graph``; ``top``: the hub names whose edges are counted (None: the
    graph's own 13 largest)."""
    if option.builder is None:
        recalls, totals = recall_of(graph, None)
        return Measured(recalls=tuple(recalls), words=tuple(totals))
    builder = option.builder
    keys = graph.keys[option.named_only]
    inputs = GraphInputs(graph.setting.sentences, keys)
    ec, seconds = timed(lambda: builder(inputs), repeats)
    hubs = top_names(keys, builder) if top is None else top
    top_edges = builder(only(keys, hubs)).nnz // 2
    counts = sentence_counts(key_incidence(keys, len(keys))[0])
    recalls, totals = recall_of(graph, ec)
    bound = edge_bound(counts, builder)
    return Measured(ec.nnz // 2, top_edges, bound, seconds, tuple(recalls), tuple(totals))


def edge_bound(counts: np.ndarray, builder: EntityCooccurrence, scale: float = 1.0) -> int:
    """The guard's upper bound of the edges ``builder`` makes from key entities in ``counts``
    sentences, each count first multiplied by ``scale`` (a corpus ``scale`` times larger in
    which every entity keeps its share of the sentences)."""
    counts = np.round(counts * scale).astype(np.int64)
    if builder.max_sentences is not None:
        counts = counts[counts <= builder.max_sentences]
    if builder.nearest is not None:
        return nearest_pair_count(counts, builder.nearest)
    return cooccurrence_bounds(counts)[1] // 2


# --------------------------------------------------------------------------- the run


def build_graphs(
    dev: list[QAExample], questions: int, corpus: bool, ctx: Context
) -> tuple[list[Graph], Graph]:
    """The per-question graphs and the pooled graph (of every ``dev`` question's paragraphs)
    for the first ``questions`` questions."""
    passages, examples = passages_of(dev, corpus), dev[:questions]
    where = {(p.title, p.text): i for i, p in enumerate(passages)}
    tagged = tag(passages, ctx)
    cache, embedder = EmbeddingCache(), FlagModelEmbedder()
    texts = [s[0] for p in tagged.sentences for s in p]
    vectors = cache.embed(embedder, texts, ctx)
    queries = cache.embed(embedder, [e.question for e in examples], ctx, "query")
    one = [
        graph_of(setting_of(e.passages, where, tagged, vectors), [(e, q)])
        for e, q in zip(examples, queries, strict=True)
    ]
    pooled = [attrs.evolve(e, passages=tuple(passages)) for e in examples]
    setting = setting_of(passages, where, tagged, vectors)
    return one, graph_of(setting, list(zip(pooled, queries, strict=True)))


HEAD = ["option", "EC edges", f"top-{TOP} share", "guard bound", "EC build s", "gold recall"]
HEAD_AFTER = ["vs paper (+/−)", "words"]


def table(title: str, rows: list[tuple[str, Measured, int | None]]) -> str:
    """A Markdown table of measured options (``int``: the guard's bound at 1M sentences)."""
    projecting = rows[0][2] is not None
    head = [*HEAD, *HEAD_AFTER, *(["bound at 1M"] if projecting else [])]
    paper = rows[0][1].recalls
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, m, projected in rows:
        cells = [
            label,
            f"{m.edges:,}",
            f"{m.top_edges / m.edges:.1%}" if m.edges else "–",
            f"{m.bound:,}" if m.edges else "–",
            f"{m.seconds:.3f}",
            f"{statistics.mean(m.recalls):.3f}",
            paired(m.recalls, paper),
            f"{statistics.mean(m.words):.0f}",
        ]
        if projecting:
            cells.append(f"{projected:,}" if m.edges else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired(recalls: Sequence[float], paper: Sequence[float]) -> str:
    """Mean difference from the paper's row, and on how many questions it is higher/lower."""
    diff = np.asarray(recalls) - np.asarray(paper)
    return f"{diff.mean():+.3f} ({int((diff > 0).sum())}/{int((diff < 0).sum())})"


def run(
    one: list[Graph], pooled: Graph, choices: list[Option], repeats: int
) -> tuple[list[tuple[str, Measured, int | None]], list[tuple[str, Measured, int | None]]]:
    """Each option measured per question and pooled (with its bound at 1M sentences)."""
    scale = 1_000_000 / len(pooled.setting.sentences)
    per_question: list[tuple[str, Measured, int | None]] = []
    shared: list[tuple[str, Measured, int | None]] = []
    for option in choices:
        print(f"  {option.label}", file=sys.stderr)
        whole = measure(pooled, option, None, repeats)
        projected, hubs = 0, None
        if option.builder is not None:
            keys = pooled.keys[option.named_only]
            hubs = top_names(keys, option.builder)
            counts = sentence_counts(key_incidence(keys, len(keys))[0])
            projected = edge_bound(counts, option.builder, scale)
        split = sum((measure(g, option, hubs, repeats) for g in one), Measured())
        per_question.append((option.label, split, None))
        shared.append((option.label, whole, projected))
    return per_question, shared


def at_scale(pooled: Graph, sentences: int, nearest: int) -> str:
    """The pooled graph's key entities repeated to ``sentences`` sentences (each entity keeps
    its share): what the default EC builder and ``nearest`` do there."""
    keys = pooled.keys[False]
    tiled = (keys * (sentences // len(keys) + 1))[:sentences]
    inputs = GraphInputs(sentences_for_keys(tiled), tiled)
    lines = [f"**at {sentences:,} sentences** (the pooled key entities repeated)", ""]
    start = time.perf_counter()
    try:
        EntityCooccurrence()(inputs)
        lines.append("- default: built (no error)")
    except LayerTooLargeError as exc:
        lines.append(f"- default: error after {time.perf_counter() - start:.1f} s: {exc}")
    bounded, seconds = timed(lambda: EntityCooccurrence(nearest=nearest)(inputs), 1)
    lines.append(f"- nearest: {nearest}: {bounded.nnz // 2:,} edges in {seconds:.1f} s")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=82, help="2Wiki dev questions (82)")
    parser.add_argument("--no-corpus", action="store_true", help="pool the dev paragraphs only")
    parser.add_argument("--repeats", type=int, default=3, help="EC builds timed per option")
    parser.add_argument("--max-sentences", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--nearest", type=int, nargs="+", default=[1, 3, 10, 30])
    parser.add_argument(
        "--scale", type=int, default=1_000_000, help="sentences of the at-scale check (0: skip)"
    )
    args = parser.parse_args()
    one, pooled = build_graphs(
        load_dataset("2wiki"), args.questions, not args.no_corpus, StageContext()
    )
    choices = options(args.max_sentences, args.nearest)
    per_question, shared = run(one, pooled, choices, args.repeats)
    n_one = sum(len(g.setting.sentences) for g in one)
    print(table(f"per question: {len(one)} graphs, {n_one:,} sentences in all", per_question))
    print()
    n, p = len(pooled.setting.sentences), len(pooled.setting.passages)
    print(table(f"pooled: one graph of {n:,} sentences, {p:,} passages", shared))
    if args.scale:
        print()
        print(at_scale(pooled, args.scale, 10))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
