"""A prediction's trace as text a person reads (``chainrag ask``)."""

from __future__ import annotations

from collections.abc import Sequence

from chainrag.core.types import Prediction, Usage


def _usage(u: Usage) -> str:
    cost = f", ${u.cost_usd:.5f}" if u.cost_usd else ""
    return (
        f"{u.calls} calls, {u.cache_hits} cached, {u.prompt_tokens}+{u.completion_tokens} tokens, "
        f"{u.latency_s:.1f} s{cost}"
    )


def _short(text: str, width: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def render(prediction: Prediction, texts: Sequence[str], show: int = 4) -> str:
    """The answers, the decomposition and every step, with up to ``show`` retrieved units."""
    lines = []
    for i, named in enumerate(prediction.answers):
        mark = "answer" if i == 0 else "also"
        lines.append(f"{mark} ({named.name}): {named.answer.text}")
    if prediction.read is not None:
        lines.append(f"read for: {prediction.read}")
    decomposition = prediction.decomposition
    if decomposition is not None:
        note = "  (fallback: the question itself)" if decomposition.fallback else ""
        lines.append(f"decomposed into {len(decomposition.sub_questions)} sub-question(s){note}")
    for n, step in enumerate(prediction.steps, 1):
        memory = "memory: " if step.from_memory else ""
        lines.append(f"step {n}: {memory}{step.question}")
        if step.rewritten:
            lines.append(f"  rewritten: {step.rewritten}")
        if step.expansion is not None:
            e = step.expansion
            verdicts = ", ".join("yes" if v.ok else "no" for v in e.verdicts) or "none"
            lines.append(
                f"  retrieved {len(e.units)} units ({len(e.seeds)} seeds, {e.hops} hops, "
                f"{e.words} words; sufficiency: {verdicts})"
            )
        elif step.retrieved:
            kept = "" if step.kept is None else f", the filter kept {len(step.kept)}"
            lines.append(f"  retrieved {len(step.retrieved)} units{kept}")
        for unit in step.retrieved[:show]:
            mark = "" if step.kept is None else " kept" if unit in step.kept else " dropped"
            lines.append(f"    [{unit}]{mark} {_short(texts[unit])}")
        if len(step.retrieved) > show:
            lines.append(f"    … {len(step.retrieved) - show} more")
        if step.answer is not None:
            state = "" if step.answer.answered else "  (unanswered)"
            lines.append(f"  answer: {step.answer.answer}{state}")
        if step.summary is not None:
            lines.append(f"  summary for the next step: {_short(step.summary)}")
    lines.append(f"LLM: {_usage(prediction.usage)}")
    for prompt, usage in prediction.usage_by_prompt:
        lines.append(f"  {prompt}: {_usage(usage)}")
    return "\n".join(lines)
