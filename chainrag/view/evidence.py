"""The gold evidence of a question and which retrieved units cover it; and why ChainRAG
rewrote a sub-question or not, from how its record says it decides
(:class:`~chainrag.core.notes.Rewriting`).

Gold evidence is the dataset's: supporting sentences (HotpotQA, 2Wiki) or supporting
paragraphs (MuSiQue); a unit covers a gold item as :func:`chainrag.data.metrics.covers` says,
the rule the run's Recall@k was scored with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from chainrag.components.reasoning.rewrite_triggers import has_substring, has_whole_word
from chainrag.core.notes import Rewriting
from chainrag.core.types import QAExample, StepTrace
from chainrag.data.metrics import GoldKey, Level, covers, gold_items
from chainrag.view.sources import Unit


@attrs.frozen
class GoldItem:
    """One gold supporting paragraph or sentence, with its text from the dataset file; a
    supporting fact whose title names no passage has ``passage`` -1 and no text."""

    key: GoldKey
    title: str
    text: str

    @property
    def passage(self) -> int:
        return self.key[0]


def gold_evidence(example: QAExample) -> tuple[Level, tuple[GoldItem, ...]]:
    """The question's gold evidence, in passage and sentence order."""
    level, keys = gold_items(example)
    items = []
    for passage, sentence in sorted(keys):
        if passage < 0:
            items.append(GoldItem((passage, sentence), "(a title none of the passages has)", ""))
            continue
        p = example.passages[passage]
        if sentence < 0:
            items.append(GoldItem((passage, sentence), p.title, p.text))
        else:
            start, end = p.sentence_spans[sentence]
            items.append(GoldItem((passage, sentence), p.title, p.text[start:end]))
    return level, tuple(items)


def gold_cover(
    example: QAExample, units: Sequence[Unit], level: Level, gold: Iterable[GoldKey]
) -> dict[int, frozenset[GoldKey]]:
    """Unit index -> the gold items it covers, for the units that cover any."""
    wanted = set(gold)
    out = {}
    for i, unit in enumerate(units):
        if 0 <= unit.passage < len(example.passages):
            found = covers(unit, example.passages, level) & wanted
            if found:
                out[i] = frozenset(found)
    return out


def units_of_items(cover: Mapping[int, frozenset[GoldKey]], items: Iterable[GoldKey]) -> list[int]:
    """The units covering any of ``items``, in index order."""
    wanted = set(items)
    return sorted(u for u, keys in cover.items() if keys & wanted)


def retrieved(steps: Sequence[StepTrace]) -> list[int]:
    """Every unit the steps retrieved, in order of first retrieval."""
    return list(dict.fromkeys(u for step in steps for u in step.retrieved))


# --------------------------------------------------------------------------- ChainRAG's rewriting


def trigger_words(question: str, notes: Rewriting) -> list[str]:
    """The trigger words found in ``question`` (whole words for ``pronoun_words``, anywhere
    for ``substring``; other triggers are not known here, so none)."""
    if notes.trigger == "pronoun_words":
        return [w for w in notes.words if has_whole_word(question, [w])]
    if notes.trigger == "substring":
        return [w for w in notes.words if has_substring(question, [w])]
    return []


def rewrite_reason(steps: Sequence[StepTrace], i: int, notes: Rewriting) -> str:
    """Why step ``i`` was (not) rewritten, as ChainRAG decides it: rewriting on, a previous
    step that was answered, the trigger firing (and, with ``confirm_rewrite``, the LLM
    agreeing)."""
    step = steps[i]
    words = trigger_words(step.question, notes)
    found = ", ".join(f"“{w}”" for w in words)
    if step.rewritten is not None:
        why = (
            f"the trigger ({notes.trigger}) matched {found}"
            if words
            else (f"the trigger ({notes.trigger}) fired")
        )
        confirmed = "; the LLM confirmed it refers back" if notes.confirm else ""
        same = (
            " (the rewriter returned it unchanged)"
            if (step.rewritten.strip() == step.question.strip())
            else ""
        )
        return f"rewritten{same}: the previous sub-question was answered and {why}{confirmed}"
    if not notes.on:
        return "not rewritten: rewriting is off in this recipe"
    if i == 0:
        return "not rewritten: the first sub-question has nothing to refer back to"
    previous = steps[i - 1].answer
    if previous is not None and not previous.answered:
        return "not rewritten: the previous sub-question was not answered"
    if words and notes.confirm:
        return f"not rewritten: the trigger matched {found}, but the LLM did not confirm it"
    if notes.trigger not in ("pronoun_words", "substring"):
        return f"not rewritten: the trigger ({notes.trigger}) did not fire"
    return f"not rewritten: no trigger word ({notes.trigger})"
