"""One question's page: the question and its gold evidence, then every run's answer with its
steps — for ChainRAG the decomposition, each sub-question before and after rewriting and why,
each walk's seeds and hops with the sufficiency verdicts, the sub-answers and what each
integrator read; for the other methods their rounds, follow-up queries, filtered knowledge
and reservoir hits — the gold evidence marked wherever it appears and the missed items listed,
and the walk as a picture (:mod:`chainrag.view.walk`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from chainrag.core.types import QAExample, Sentence, StepTrace, SubAnswer, Usage
from chainrag.data.metrics import GoldKey, Level
from chainrag.report.runs import Run
from chainrag.run.record import RunRecord
from chainrag.view.evidence import (
    ChainNotes,
    GoldItem,
    gold_cover,
    gold_evidence,
    retrieved,
    rewrite_reason,
    units_of_items,
)
from chainrag.view.html import el, esc, num, usage_text
from chainrag.view.sources import Unavailable, Units
from chainrag.view.walk import combined, hop_levels, layout, walk_of, walk_svg

SHOW_UNITS = 12
"""Units listed before the rest of a list folds away."""


@attrs.frozen
class Answered:
    """One run's record of a question, with what its part of the page needs.

    Attributes:
        key: The run's key in the page's filters (its name, unique per dataset).
        labels: Answer variant -> its label in the report (``ChainRAG (AnsInt)``).
        units: The index's units for this question, or why they are not shown.
        chain: What the recipe says of its steps, for a ChainRAG run (else None).
    """

    key: str
    run: Run
    record: RunRecord
    labels: Mapping[str, str]
    units: Units | Unavailable
    chain: ChainNotes | None = None


@attrs.frozen
class Question:
    """A question as the page shows it: its number on the page, the dataset's record of it
    (or why there is none) and every run's answer."""

    number: int
    dataset: str
    qid: str
    example: QAExample | Unavailable
    answered: tuple[Answered, ...]

    @property
    def first(self) -> RunRecord:
        return self.answered[0].record

    @property
    def anchor(self) -> str:
        return f"q-{self.number}"


@attrs.frozen
class Gold:
    """A question's gold evidence as one run's units cover it (``cover``: unit -> items; None
    when the units or the dataset's record are not available)."""

    level: Level
    items: tuple[GoldItem, ...]
    cover: Mapping[int, frozenset[GoldKey]] | None


def gold_for(question: Question, answered: Answered) -> Gold | None:
    """The gold evidence as ``answered``'s units cover it (None without the dataset)."""
    example = question.example
    if isinstance(example, Unavailable):
        return None
    level, items = gold_evidence(example)
    units = answered.units
    cover = None
    if isinstance(units, Units):
        cover = gold_cover(example, units.units, level, [i.key for i in items])
    return Gold(level, items, cover)


def found_items(gold: Gold, steps: Sequence[StepTrace]) -> set[GoldKey]:
    """The gold items the steps' units cover (empty without the cover)."""
    if gold.cover is None:
        return set()
    return {k for u in retrieved(steps) for k in gold.cover.get(u, ())}


# --------------------------------------------------------------------------- units


def unit_text(units: Units | Unavailable, unit: int) -> str:
    if isinstance(units, Unavailable):
        return ""
    if 0 <= unit < len(units.units):
        return units.units[unit].text
    return f"(unit {unit} is not in the index found: it has {len(units.units)})"


def unit_item(unit: int, units: Units | Unavailable, gold: Gold | None, mark: str = "") -> str:
    """One unit as a list item: its number, passage title and text; gold marked."""
    is_gold = gold is not None and gold.cover is not None and unit in gold.cover
    classes = "unit" + (" gold" if is_gold else "") + (f" {mark}" if mark else "")
    title = ""
    if isinstance(units, Units) and 0 <= unit < len(units.units):
        title = el("span", esc(units.units[unit].title), class_="title")
    star = el("span", "★", class_="star", title="gold evidence") if is_gold else ""
    note = el("span", esc(mark), class_="mark") if mark else ""
    body = f'<span class="uid">[{unit}]</span>{star}{note} {title} {esc(unit_text(units, unit))}'
    return el("li", body, class_=classes, data_unit=unit)


def unit_list(
    units_shown: Sequence[int],
    units: Units | Unavailable,
    gold: Gold | None,
    marks: Mapping[int, str] | None = None,
    what: str = "units",
) -> str:
    """The units as a list; past :data:`SHOW_UNITS` the rest folds into a ``<details>``."""
    marks = marks or {}
    items = [unit_item(u, units, gold, marks.get(u, "")) for u in units_shown]
    if isinstance(units, Unavailable):  # numbers only (and marks): one line
        shown = (f"[{u} {marks[u]}]" if u in marks else f"[{u}]" for u in units_shown)
        return el("p", esc(" ".join(shown)), class_="numbers")
    head = el("ol", "".join(items[:SHOW_UNITS]), class_="units")
    if len(items) <= SHOW_UNITS:
        return head
    n_gold = sum(1 for u in units_shown[SHOW_UNITS:] if gold and gold.cover and u in gold.cover)
    more = f"{len(items) - SHOW_UNITS} more {what}" + (f" ({n_gold} gold)" if n_gold else "")
    rest = el("ol", "".join(items[SHOW_UNITS:]), class_="units", start=SHOW_UNITS + 1)
    return head + el("details", el("summary", esc(more)) + rest, class_="more")


# --------------------------------------------------------------------------- one question


def question_section(question: Question, previous: str | None, following: str | None) -> str:
    """The question's ``<section>`` (hidden until its list row or a link opens it)."""
    record = question.first
    nav = [el("a", "← questions", href="#questions")]
    if previous:
        nav.append(el("a", "‹ previous", href=f"#{previous}"))
    if following:
        nav.append(el("a", "next ›", href=f"#{following}"))
    kind = f" · {esc(record.question_type)}" if record.question_type else ""
    parts = [
        el("nav", " ".join(nav), class_="qnav"),
        el("h2", esc(record.question)),
        el("p", f"{esc(question.dataset)} · {esc(question.qid)}{kind}", class_="meta"),
        _gold_answers(record.gold),
        _gold_block(question),
        *(_method_block(question, a) for a in question.answered),
    ]
    return el(
        "section",
        "\n".join(parts),
        class_="view question",
        id=question.anchor,
        data_dataset=question.dataset,
    )


def _gold_answers(gold: Sequence[str]) -> str:
    if not gold:
        return el("p", "No gold answer.", class_="gold-answer")
    aliases = f" · aliases: {esc('; '.join(gold[1:]))}" if len(gold) > 1 else ""
    return el("p", f"Gold answer: <b>{esc(gold[0])}</b>{aliases}", class_="gold-answer")


def _gold_block(question: Question) -> str:
    example = question.example
    if isinstance(example, Unavailable):
        return el("p", f"Gold evidence not shown: {esc(example.reason)}", class_="note")
    parts = []
    if example.decomposition:
        rows = "".join(
            el("tr", el("td", str(i)) + el("td", esc(s.question)) + el("td", esc(s.answer)))
            for i, s in enumerate(example.decomposition, 1)
        )
        head = el("tr", el("th", "#") + el("th", "gold sub-question") + el("th", "answer"))
        parts.append(el("table", head + rows, class_="gold-steps"))
    level, items = gold_evidence(example)
    found_by: dict[GoldKey, list[str]] = {}
    for answered in question.answered:
        gold = gold_for(question, answered)
        if gold is not None and gold.cover is not None:
            for key in found_items(gold, answered.record.trace.steps):
                found_by.setdefault(key, []).append(answered.run.name)
    lines = []
    for item in items:
        who = found_by.get(item.key, [])
        found = f"found by {', '.join(who)}" if who else "found by no run whose units are shown"
        lines.append(
            el(
                "li",
                f"<b>{esc(item.title)}</b> {esc(item.text)} "
                + el("span", esc(found), class_="found-by"),
                class_="gold-item",
            )
        )
    title = f"Gold evidence ({len(items)} supporting {level}s)"
    parts.append(el("h3", esc(title)) + el("ol", "".join(lines), class_="gold-evidence"))
    return el("div", "".join(parts), class_="gold")


def _answers(record: RunRecord, labels: Mapping[str, str]) -> str:
    rows = []
    for variant, scored in record.answers.items():
        right = "right" if scored.em == 1.0 else "partly" if scored.f1 > 0 else "wrong"
        rows.append(
            el(
                "tr",
                el("td", esc(labels.get(variant, variant)))
                + el("td", esc(scored.text) or "<i>(none)</i>", class_=right)
                + el("td", f"EM {num(scored.em)}")
                + el("td", f"F1 {num(scored.f1)}"),
            )
        )
    raw = next(
        (
            n.answer.raw
            for n in record.trace.answers
            if n.answer.raw and n.answer.raw.strip() != n.answer.text.strip()
        ),
        "",
    )
    generation = el("details", el("summary", "the LLM's whole reply") + el("pre", esc(raw)))
    return el("table", "".join(rows), class_="answers") + (generation if raw else "")


def _method_block(question: Question, answered: Answered) -> str:
    record = answered.record
    label = answered.labels.get(record.primary, answered.run.name)
    scored = record.scored
    summary = (
        f"{esc(label)} <span class='run'>{esc(answered.run.name)}</span> — "
        f"<b>{esc(scored.text) or '(no answer)'}</b> · F1 {num(scored.f1)} · "
        f"{esc(usage_text(record.usage))} · {record.seconds:.1f} s wall"
    )
    gold = gold_for(question, answered)
    parts = [_answers(record, answered.labels), _units_note(answered, record)]
    if answered.chain is not None:
        parts.append(_chain_steps(answered, gold))
    else:
        parts.append(_other_steps(answered, gold))
    parts.append(_by_prompt(record))
    parts.append(_missed(answered, gold))
    parts.append(_walk(question, answered, gold))
    return el(
        "details",
        el("summary", summary) + "\n".join(p for p in parts if p),
        class_="method",
        data_method=answered.key,
        open=True,
    )


def _units_note(answered: Answered, record: RunRecord) -> str:
    units = answered.units
    if isinstance(units, Unavailable):
        return el("p", f"Unit texts not shown: {esc(units.reason)}.", class_="note")
    words = record.retrieval.scores.get("words") if record.retrieval is not None else None
    shown = retrieved(record.trace.steps)
    if words is not None and all(0 <= u < len(units.units) for u in shown):
        mine = sum(len(units.units[u].text.split()) for u in shown)
        if mine != int(words):
            return el(
                "p",
                esc(
                    f"The index found ({units.source}) may not be the one the run "
                    f"searched: its retrieved units hold {mine} words, the record "
                    f"says {int(words)}."
                ),
                class_="note warn",
            )
    return ""


# --------------------------------------------------------------------------- ChainRAG


def _verdicts(step: StepTrace, notes: ChainNotes) -> str:
    if step.expansion is None or not step.expansion.verdicts:
        return ""
    after = notes.expander == "iterative_hops"
    items = []
    for i, verdict in enumerate(step.expansion.verdicts):
        when = f"after hop {i + 1}" if after else f"check {i + 1}"
        word = "yes, enough" if verdict.ok else "no, go on"
        raw = f" <q>{esc(verdict.raw)}</q>" if verdict.raw else ""
        items.append(el("li", f"{when}: <b>{word}</b>{raw}", class_="yes" if verdict.ok else "no"))
    return el("div", "Sufficiency: " + el("ul", "".join(items), class_="verdicts"))


def answered_note(answer: SubAnswer) -> str:
    """Nothing for an answer; " (not answered)" for a reply the method read as none, unless
    its text says so already ("unanswerable")."""
    if answer.answered or "unanswerable" in answer.answer.lower():
        return ""
    return " (not answered)"


def noun(units: Units | Unavailable) -> str:
    """What the units are: sentences, chunks, or (not known) units."""
    if isinstance(units, Unavailable) or not units.units:
        return "units"
    return "sentences" if isinstance(units.units[0], Sentence) else "chunks"


def _walk_units(step: StepTrace, answered: Answered, gold: Gold | None) -> str:
    expansion = step.expansion
    what = noun(answered.units)
    if expansion is None or (expansion.hops == 0 and expansion.seeds == expansion.units):
        retrieved = expansion.units if expansion is not None else step.retrieved
        words = f", {expansion.words} words" if expansion is not None else ""
        return el("p", esc(f"Retrieved {len(retrieved)} {what}{words}:"), class_="walk-head") + (
            unit_list(retrieved, answered.units, gold)
        )
    layers = answered.units.layers if isinstance(answered.units, Units) else None
    levels = hop_levels(
        expansion.units, expansion.seeds, expansion.hops, combined(layers) if layers else None
    )
    by_hop: dict[int | None, list[int]] = {}
    for unit, level in zip(expansion.units, levels, strict=True):
        by_hop.setdefault(level, []).append(unit)
    parts = [
        el("div", f"Seeds ({len(expansion.seeds)}):", class_="hop")
        + unit_list(list(expansion.seeds), answered.units, gold)
    ]
    for level in sorted((k for k in by_hop if k), key=lambda k: k or 0):
        units = by_hop[level]
        parts.append(
            el("div", f"Hop {level}: {len(units)} added", class_="hop")
            + unit_list(units, answered.units, gold)
        )
    if None in by_hop:
        units = by_hop[None]
        parts.append(
            el(
                "div",
                f"Hops 1–{expansion.hops}: {len(units)} added (which hop is not "
                "known without the graph)",
                class_="hop",
            )
            + unit_list(units, answered.units, gold)
        )
    head = (
        f"{len(expansion.units)} {what}, {expansion.words} words, "
        f"{expansion.hops} hop{'s' if expansion.hops != 1 else ''}"
    )
    return el("div", el("p", esc(head), class_="walk-head") + "".join(parts), class_="retrieval")


def _chain_steps(answered: Answered, gold: Gold | None) -> str:
    notes = answered.chain
    assert notes is not None
    trace = answered.record.trace
    parts = []
    if trace.decomposition is not None:
        d = trace.decomposition
        fallback = " (fallback: the decomposer's output was unusable, the question itself "
        fallback += "was used)" if d.fallback else ""
        raw = el("details", el("summary", "the decomposer's reply") + el("pre", esc(d.raw)))
        parts.append(
            el(
                "p",
                f"Decomposed into {len(d.sub_questions)} sub-question"
                f"{'s' if len(d.sub_questions) != 1 else ''}{esc(fallback if d.fallback else '')}:",
            )
            + el("ol", "".join(el("li", esc(q)) for q in d.sub_questions))
            + raw
        )
    for i, step in enumerate(trace.steps):
        body = [el("h4", f"Step {i + 1}: {esc(step.question)}")]
        if step.rewritten is not None:
            body.append(el("p", f"Rewritten: <b>{esc(step.rewritten)}</b>", class_="rewritten"))
        body.append(el("p", esc(rewrite_reason(trace.steps, i, notes)), class_="why"))
        body.append(_walk_units(step, answered, gold))
        body.append(_verdicts(step, notes))
        if step.answer is not None:
            state = answered_note(step.answer)
            body.append(
                el("p", f"Sub-answer: <b>{esc(step.answer.answer)}</b>{state}", class_="sub-answer")
            )
            if step.summary is not None:
                body.append(
                    el(
                        "p",
                        f"Summary of this step's sentences, which step {i + 2}'s "
                        f"answerer read: <q>{esc(step.summary)}</q>",
                        class_="summary",
                    )
                )
            elif not step.answer.answered and notes.summarizer and i + 1 < len(trace.steps):
                body.append(
                    el(
                        "p",
                        "Unanswered: the summarizer condensed this step's sentences "
                        f"into a summary that step {i + 2}'s answerer read (its text is "
                        "not in this trace, written before traces kept it).",
                        class_="note",
                    )
                )
        body.append(el("p", "LLM: " + esc(usage_text(step.usage)), class_="usage"))
        parts.append(el("div", "".join(body), class_="step"))
    parts.append(_integration(answered))
    return "".join(parts)


def _integration(answered: Answered) -> str:
    notes = answered.chain
    assert notes is not None
    trace = answered.record.trace
    answers = {n.name: n.answer.text for n in trace.answers}
    parts = []
    for integrator in notes.integrators:
        name = integrator.kind.replace("_", "")
        answer = el("b", esc(answers.get(name, "(not in the trace)")))
        if integrator.kind == "ans_int":
            which = "as decomposed" if integrator.original_sub_questions else "as rewritten"
            pairs = "".join(
                el(
                    "li",
                    esc(
                        step.question
                        if integrator.original_sub_questions
                        else step.rewritten or step.question
                    )
                    + " → "
                    + el("b", esc(step.answer.answer if step.answer else "–")),
                )
                for step in trace.steps
            )
            parts.append(
                el(
                    "div",
                    f"<b>AnsInt</b> read the sub-questions ({which}) with their "
                    f"sub-answers:" + el("ol", pairs) + f"and answered {answer}.",
                    class_="integrator",
                )
            )
        elif integrator.kind == "cxt_int":
            units = retrieved(trace.steps)
            words = ""
            if isinstance(answered.units, Units):
                count = sum(len(unit_text(answered.units, u).split()) for u in units)
                words = f", {count} words"
            budget = f"{integrator.word_budget} words" if integrator.word_budget else "its budget"
            rerank = integrator.reranker or "none"
            parts.append(
                el(
                    "div",
                    f"<b>CxtInt</b> read the {len(units)} distinct sentences the "
                    f"steps retrieved{words}, reranked against the question (reranker: "
                    f"{esc(rerank)}) and cut at {budget}, and answered {answer}.",
                    class_="integrator",
                )
            )
        else:
            parts.append(
                el("div", f"<b>{esc(integrator.kind)}</b> answered {answer}.", class_="integrator")
            )
    return el("div", el("h4", "Integration") + "".join(parts), class_="integration")


# --------------------------------------------------------------------------- other methods


def _other_steps(answered: Answered, gold: Gold | None) -> str:
    trace = answered.record.trace
    parts = []
    if trace.decomposition is not None:
        d = trace.decomposition
        parts.append(
            el("p", f"Decomposed into {len(d.sub_questions)} sub-questions:")
            + el("ol", "".join(el("li", esc(q)) for q in d.sub_questions))
        )
    if trace.read is not None:
        parts.append(
            el("p", f"The reader answered the rewritten question: <b>{esc(trace.read)}</b>")
        )
    for i, step in enumerate(trace.steps):
        body = [el("h4", f"Step {i + 1}: {esc(step.question)}")]
        if step.from_memory:
            body.append(
                el(
                    "p",
                    "Answered from the knowledge reservoir: a stored item matched "
                    "this query, so nothing was retrieved.",
                    class_="reservoir",
                )
            )
        elif step.kept is not None:
            kept = set(step.kept)
            marks = {u: ("kept" if u in kept else "dropped") for u in step.retrieved}
            body.append(
                el("p", f"Retrieved {len(step.retrieved)}; the knowledge filter kept {len(kept)}:")
                + unit_list(step.retrieved, answered.units, gold, marks)
            )
        else:
            body.append(_walk_units(step, answered, gold))
        if step.answer is not None:
            state = answered_note(step.answer)
            body.append(
                el("p", f"Answer: <b>{esc(step.answer.answer)}</b>{state}", class_="sub-answer")
            )
        if step.usage != Usage():
            body.append(el("p", "LLM: " + esc(usage_text(step.usage)), class_="usage"))
        parts.append(el("div", "".join(body), class_="step"))
    return "".join(parts)


def _by_prompt(record: RunRecord) -> str:
    rows = "".join(
        el("tr", el("td", esc(p)) + el("td", esc(usage_text(u))))
        for p, u in record.trace.usage_by_prompt
    )
    if not rows:
        return ""
    return el("details", el("summary", "LLM use by prompt") + el("table", rows, class_="prompts"))


def _missed(answered: Answered, gold: Gold | None) -> str:
    record = answered.record
    if gold is None or not gold.items:
        return ""
    if gold.cover is None:
        recall = record.retrieval.scores.get("recall@all") if record.retrieval else None
        if recall is None:
            return ""
        return el(
            "p",
            f"Gold evidence retrieved (recall over everything retrieved): {100 * recall:.0f}%",
            class_="recall",
        )
    found = found_items(gold, record.trace.steps)
    missed = [item for item in gold.items if item.key not in found]
    head = (
        f"Gold evidence: {len(gold.items) - len(missed)} of {len(gold.items)} {gold.level}s found"
    )
    if not missed:
        return el("p", esc(head) + ", none missed.", class_="recall")
    lines = "".join(el("li", f"<b>{esc(m.title)}</b> {esc(m.text)}") for m in missed)
    return el("div", el("p", esc(head) + "; missed:") + el("ol", lines), class_="missed")


def _walk(question: Question, answered: Answered, gold: Gold | None) -> str:
    steps = answered.record.trace.steps
    units = answered.units
    if not any(s.retrieved for s in steps):
        return ""
    if isinstance(units, Units) and not all(isinstance(u, Sentence) for u in units.units[:1]):
        return el("p", "Chunk index: no sentence graph, no walk to draw.", class_="note")
    if not any(s.expansion is not None for s in steps):
        return ""
    cover = gold.cover if gold is not None and gold.cover is not None else {}
    missed: list[int] = []
    if gold is not None and gold.cover is not None:
        found = found_items(gold, steps)
        missed = units_of_items(cover, [i.key for i in gold.items if i.key not in found])
    layers = units.layers if isinstance(units, Units) else None
    walk = walk_of(steps, set(cover), missed, layers)
    ident = f"{question.anchor}-{answered.key}-walk".replace("/", "-")
    svg = walk_svg(walk, layout(walk), lambda u: unit_text(units, u), ident=ident)
    note = (
        ""
        if walk.graph
        else el(
            "p",
            "Without the question's graph: the walk's nodes as the trace records them, no edges.",
            class_="note",
        )
    )
    return el(
        "div", el("h4", "The walk") + note + el("div", svg, class_="svg-box"), class_="walk-box"
    )
