"""Does a sufficiency judge tell enough evidence from too little? (ChainRAG §3.2's check.)

ChainRAG stops expanding when its judge says the gathered sentences suffice, so a judge that
says "yes" to anything turns the walk into one hop. This probe asks the recipe's judge, for
each question, about three sets of the question's own paragraphs (one numbered unit each):

- ``all gold``: every gold supporting paragraph (should be "yes");
- ``gold minus one``: the gold paragraphs without the last one, for questions with two or more
  (a multi-hop question then lacks a hop: should mostly be "no");
- ``distractors``: as many non-gold paragraphs as there are gold ones (should be "no").

It reports the share of "yes" per set and the judge's discrimination, yes(all gold) −
yes(distractors): 100 points for a perfect judge, 0 for one that cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.types import QAExample, Verdict
from chainrag.experiments.probes import LLMProbe
from chainrag.experiments.shares import Shares, probe_table
from chainrag.protocols.context import Context
from chainrag.recipes.recipe import Recipe

SETS = ("all gold", "gold minus one", "distractors")


class JudgeProbeError(ChainragError):
    """The recipe or dataset cannot run this probe; the message says why."""


@attrs.frozen
class Probe:
    qid: str
    evidence_set: str
    paragraphs: int
    words: int
    said_yes: bool
    raw: str


def judge_of(recipe: Recipe) -> Callable[[str, Sequence[str], Context], Verdict]:
    """The sufficiency judge of the recipe's expander, or a clear error."""
    judge = recipe.judge
    if judge is None:
        raise JudgeProbeError(
            f"recipe {recipe.name!r} has no sufficiency judge (retrieval.expander.judge); "
            "use a ChainRAG recipe such as recipes/chainrag/ansint.yaml"
        )
    return judge


def gold_passages(example: QAExample) -> list[int]:
    """Indexes of the gold supporting paragraphs: MuSiQue's own, or (HotpotQA, 2Wiki) those
    whose title has a supporting sentence."""
    if example.supporting_passages:
        return sorted(set(example.supporting_passages))
    titles = {s.title for s in example.supporting_sentences}
    return [i for i, p in enumerate(example.passages) if p.title in titles]


def distractors(example: QAExample, gold: Sequence[int]) -> list[int]:
    """As many of the question's non-gold paragraphs as it has gold ones, the first ones."""
    golden = set(gold)
    return [i for i in range(len(example.passages)) if i not in golden][: len(gold)]


def paragraph_texts(example: QAExample) -> list[str]:
    """The question's paragraphs as a judge reads them: ``title: text`` (the text alone
    where there is no title)."""
    return [f"{p.title}: {p.text}" if p.title else p.text for p in example.passages]


def evidence_sets(example: QAExample) -> dict[str, list[str]]:
    """The three paragraph sets of one question (``gold minus one`` only with 2+ gold)."""
    gold = gold_passages(example)
    if not gold:
        return {}
    text = paragraph_texts(example)
    others = distractors(example, gold)
    sets = {"all gold": [text[i] for i in gold]}
    if len(gold) >= 2:
        sets["gold minus one"] = [text[i] for i in gold[:-1]]
    if others:
        sets["distractors"] = [text[i] for i in others]
    return sets


def run(
    judge: Callable[[str, Sequence[str], Context], Verdict],
    examples: Iterable[QAExample],
    ctx: Context,
) -> list[Probe]:
    probes = []
    for example in examples:
        for name, paragraphs in evidence_sets(example).items():
            verdict = judge(example.question, paragraphs, ctx)
            words = sum(len(p.split()) for p in paragraphs)
            probes.append(Probe(example.qid, name, len(paragraphs), words, verdict.ok, verdict.raw))
    return probes


SHARES: Shares[Probe] = Shares(
    group=lambda p: p.evidence_set,
    groups=SETS,
    means=(("paragraphs", lambda p: p.paragraphs, ".1f"), ("words", lambda p: p.words, ".0f")),
    hit=lambda p: p.said_yes,
    header=("evidence", "said yes %"),
    contrast=("all gold", "distractors", "yes", "judge"),
)


def table(probes: Sequence[Probe], dataset: str, judge_name: str) -> str:
    questions = len({p.qid for p in probes})
    title = f"Sufficiency judge {judge_name} on {dataset} ({questions} questions)"
    return probe_table(title, probes, SHARES)


PROBE = LLMProbe("judge", judge_of, run, table)
"""``chainrag experiment judge``: :func:`~chainrag.experiments.probes.run_llm_probe` runs it."""
