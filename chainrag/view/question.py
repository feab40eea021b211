"""One question's page: the question and its gold evidence, then every run's answer with its
steps — for ChainRAG the decomposition, each sub-question before and after rewriting and why,
each walk's seeds and hops with the sufficiency verdicts, the sub-answers and what each
integrator read; for the other methods their rounds, follow-up queries, filtered knowledge
and reservoir hits — the gold evidence marked wherever it appears and the missed items listed,
and the walk as a picture (:mod:`chainrag.view.walk`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chainrag.core.types import Sentence
from chainrag.data.metrics import GoldKey
from chainrag.run.record import RunRecord
from chainrag.run.sources import Unavailable, Units
from chainrag.view.answered import (
    Answered,
    Gold,
    Question,
    found_items,
    gold_for,
    unit_text,
)
from chainrag.view.evidence import (
    gold_evidence,
    retrieved,
    units_of_items,
)
from chainrag.view.html import el, esc, num, usage_text
from chainrag.view.steps import by_prompt, chain_steps, other_steps
from chainrag.view.walk import layout, walk_of, walk_svg


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
        parts.append(chain_steps(answered, gold))
    else:
        parts.append(other_steps(answered, gold))
    parts.append(by_prompt(record))
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
