"""Each run's own steps on one question's page: for ChainRAG the decomposition, each
sub-question before and after rewriting and why, each walk's seeds and hops with the
sufficiency verdicts, the sub-answers and what each integrator read; for the other methods
their rounds, follow-up queries, filtered knowledge and reservoir hits; LLM use by prompt."""

from __future__ import annotations

from chainrag.core.notes import Integration, MethodNotes
from chainrag.core.types import Decomposition, Sentence, StepTrace, SubAnswer, Usage
from chainrag.run.record import RunRecord
from chainrag.run.sources import Unavailable, Units
from chainrag.view.answered import (
    Answered,
    Gold,
    unit_list,
    unit_text,
)
from chainrag.view.evidence import retrieved, rewrite_reason
from chainrag.view.html import el, esc, usage_text
from chainrag.view.walk import combined, hop_levels

# --------------------------------------------------------------------------- ChainRAG


def _verdicts(step: StepTrace, notes: MethodNotes) -> str:
    if step.expansion is None or not step.expansion.verdicts:
        return ""
    after = notes.expander == "iterative_hops"
    items = []
    for i, verdict in enumerate(step.expansion.verdicts):
        when = f"after hop {i + 1}" if after else f"check {i + 1}"
        word = "yes, enough" if verdict.ok else "no, go on"
        if not verdict.checked:
            word = "not checked (judge: none)"
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


def chain_steps(answered: Answered, gold: Gold | None) -> str:
    notes = answered.chain
    assert notes is not None
    assert notes.rewriting is not None
    trace = answered.record.trace
    parts = [] if trace.decomposition is None else [_decomposition(trace.decomposition)]
    for i, step in enumerate(trace.steps):
        body = [el("h4", f"Step {i + 1}: {esc(step.question)}")]
        if step.rewritten is not None:
            body.append(el("p", f"Rewritten: <b>{esc(step.rewritten)}</b>", class_="rewritten"))
        why = rewrite_reason(trace.steps, i, notes.rewriting)
        body.append(el("p", esc(why), class_="why"))
        body.append(_walk_units(step, answered, gold))
        body.append(_verdicts(step, notes))
        if step.answer is not None:
            body.append(_sub_answer(step, i, len(trace.steps), notes))
        body.append(el("p", "LLM: " + esc(usage_text(step.usage)), class_="usage"))
        parts.append(el("div", "".join(body), class_="step"))
    parts.append(integration(answered))
    return "".join(parts)


def _decomposition(d: Decomposition) -> str:
    """The sub-questions the decomposer gave, and its raw reply."""
    n = len(d.sub_questions)
    fallback = (
        " (fallback: the decomposer's output was unusable, the question itself was used)"
        if d.fallback
        else ""
    )
    raw = el("details", el("summary", "the decomposer's reply") + el("pre", esc(d.raw)))
    return (
        el("p", f"Decomposed into {n} sub-question{'s' if n != 1 else ''}{esc(fallback)}:")
        + el("ol", "".join(el("li", esc(q)) for q in d.sub_questions))
        + raw
    )


def _sub_answer(step: StepTrace, i: int, steps: int, notes: MethodNotes) -> str:
    """Step ``i``'s sub-answer, and the summary the next step read when it went unanswered."""
    assert step.answer is not None
    state = answered_note(step.answer)
    out = el("p", f"Sub-answer: <b>{esc(step.answer.answer)}</b>{state}", class_="sub-answer")
    if step.summary is not None:
        out += el("p", f"Summary of this step's sentences, which step {i + 2}'s answerer read: "
                  f"<q>{esc(step.summary)}</q>", class_="summary")  # fmt: skip
    elif not step.answer.answered and notes.summarizes and i + 1 < steps:
        out += el("p", "Unanswered: the summarizer condensed this step's sentences into a "
                  f"summary that step {i + 2}'s answerer read (its text is not in this trace, "
                  "written before traces kept it).", class_="note")  # fmt: skip
    return out


_CHOOSERS = {
    "form_checked": "an answer checked against the question's form",
    "choose": "one of two integrations' answers, chosen by the LLM where they differ",
}
"""Integrators that pick one of their parts' answers; their answer's first pick says why."""


def integration(answered: Answered) -> str:
    """What each integrator of the recipe read and answered, its answer found by its name
    (two integrators of one kind give answers of two names)."""
    notes = answered.chain
    assert notes is not None
    named = {n.name: n.answer for n in answered.record.trace.answers}
    parts = []
    for integrator in notes.integrations:
        found = named.get(integrator.name)
        answer = el("b", esc(found.text if found else "(not in the trace)"))
        if integrator.kind == "ans_int":
            text = ans_int_text(integrator, answered, answer)
        elif integrator.kind == "cxt_int":
            text = cxt_int_text(integrator, answered, answer)
        elif integrator.kind in _CHOOSERS:
            why = found.picks[0].said if found and found.picks else ""
            text = (f"<b>{integrator.kind}</b> ({_CHOOSERS[integrator.kind]}) "
                    f"answered {answer} {esc(why)}.")  # fmt: skip
        else:
            text = f"<b>{esc(integrator.kind)}</b> answered {answer}."
        if integrator.named:
            text = f"<b>{esc(integrator.name)}</b>: {text}"
        parts.append(el("div", text, class_="integrator"))
    return el("div", el("h4", "Integration") + "".join(parts), class_="integration")


def ans_int_text(integrator: Integration, answered: Answered, answer: str) -> str:
    """What AnsInt read (each sub-question, as decomposed or rewritten, with its answer)."""
    original = integrator.reads.sub_questions == "decomposed"
    which = "as decomposed" if original else "as rewritten"
    pairs = "".join(
        el(
            "li",
            esc(step.question if original else step.rewritten or step.question)
            + " → "
            + el("b", esc(step.answer.answer if step.answer else "–")),
        )
        for step in answered.record.trace.steps
    )
    return (f"<b>AnsInt</b> read the sub-questions ({which}) with their sub-answers:"
            + el("ol", pairs) + f"and answered {answer}.")  # fmt: skip


def cxt_int_text(integrator: Integration, answered: Answered, answer: str) -> str:
    """What CxtInt read: the distinct sentences retrieved, reranked, cut at its budget."""
    units = retrieved(answered.record.trace.steps)
    words = ""
    if isinstance(answered.units, Units):
        count = sum(len(unit_text(answered.units, u).split()) for u in units)
        words = f", {count} words"
    reads = integrator.reads
    budget = f"{reads.word_budget} words" if reads.word_budget else "its budget"
    rerank = reads.reranker or "none"
    return (f"<b>CxtInt</b> read the {len(units)} distinct sentences the steps retrieved"
            f"{words}, reranked against the question (reranker: {esc(rerank)}) and cut at "
            f"{budget}, and answered {answer}.")  # fmt: skip


# --------------------------------------------------------------------------- other methods


def other_steps(answered: Answered, gold: Gold | None) -> str:
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
        if step.summary is not None:
            body.append(el("p", "Extracted from their passages, which the answer read after "
                           f"them: <q>{esc(step.summary)}</q>", class_="summary"))  # fmt: skip
        if step.answer is not None:
            state = answered_note(step.answer)
            body.append(
                el("p", f"Answer: <b>{esc(step.answer.answer)}</b>{state}", class_="sub-answer")
            )
        if step.usage != Usage():
            body.append(el("p", "LLM: " + esc(usage_text(step.usage)), class_="usage"))
        parts.append(el("div", "".join(body), class_="step"))
    return "".join(parts)


def by_prompt(record: RunRecord) -> str:
    rows = "".join(
        el("tr", el("td", esc(p)) + el("td", esc(usage_text(u))))
        for p, u in record.trace.usage_by_prompt
    )
    if not rows:
        return ""
    return el("details", el("summary", "LLM use by prompt") + el("table", rows, class_="prompts"))
