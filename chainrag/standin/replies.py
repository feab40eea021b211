"""The stand-in's answers: a deterministic reply to every prompt of chainrag's methods, made
from the request's own text, so that a change in what was retrieved changes the answers.

:func:`standin_reply` is the stand-in server's default reply (:mod:`chainrag.standin.server`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from chainrag.standin.hipporag import hipporag_reply

Body = dict[str, Any]


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _after(text: str, label: str) -> str:
    """The first line after ``label`` in ``text`` (numbering like ``[1]`` or ``1.`` dropped)."""
    rest = text.split(label, 1)[1] if label in text else text
    for line in rest.splitlines():
        line = re.sub(r"^\s*(\[\d+\]|\d+[.)]|-)\s*", "", line).strip()
        if line:
            return line
    return ""


def _question(text: str) -> str:
    found = re.findall(r"(?:Main question|Question to rewrite|Question): (.*)", text)
    return found[-1].strip() if found else text.strip().splitlines()[-1]


def _from_schema(schema: Any, text: str) -> Any:
    """A value of ``schema`` made from the request's ``text``: strings are its question."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "array":
        question = _question(text)
        items = [question, f"What is known about {question.split()[-1].strip('?')}?"]
        if schema.get("items", {}).get("type", "string") != "string":
            items = [_from_schema(schema["items"], q) for q in items]
        return items[: schema.get("maxItems", 2)]
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _from_schema(sub, text) for name, sub in props.items()}
    if kind in ("integer", "number"):
        return _digest(text) % 3
    if kind == "boolean":
        return _digest(text) % 2 == 0
    if isinstance(schema, dict) and "enum" in schema:
        return schema["enum"][_digest(text) % len(schema["enum"])]
    words = re.findall(r"[A-Z][\w'-]+", _after(text, "Sentences:")) or ["unknown"]
    return " ".join(words[:2])


def _schema(body: Body) -> Any:
    form = body.get("response_format") or {}
    if form.get("type") == "json_schema":
        return form.get("json_schema", {}).get("schema", {})
    return {"type": "object"} if form.get("type") == "json_object" else None


def _longrag(text: str) -> str | None:
    """LongRAG's prompts (Zhao et al., 2024): a thinking process (the evidence's first line);
    a citation check ("True" in JSON for about a third of the chunks, "False" for a third,
    and for the rest a reply that is no JSON but says True, as a small model may give); the
    extracted information (the paragraphs' first 200 characters); else None."""
    if "give your thinking process for the following question" in text:
        first = text.strip().splitlines()[0] if text.strip() else ""
        return f"The question asks: {_question(text)} The passages say: {first[:200]}"
    if "set the status value to True" in text:
        article = text.split("Given an article:", 1)[-1].split("\nQuestion:", 1)[0]
        verdict = _digest(article) % 3
        return ['{"status": "True"}', '{"status": "False"}', "True: cite it."][verdict]
    if "please output the information you need to cite" in text:
        return text.split("\n\nBased on the above background", 1)[0][:200].strip()
    return None


def standin_reply(body: Body) -> str:
    """A deterministic answer to a chat completion ``body`` that chainrag's methods parse
    (HippoRAG's and IRCoT's prompts: :func:`~chainrag.standin.hipporag.hipporag_reply`).

    JSON of the schema the request asks for; LongRAG's thinking process, citation checks and
    extraction; a yes/no where one is asked (yes for about a third of the evidence texts); a
    summary, a rewritten question, a short answer taken from the first line of the evidence
    (or "unanswerable" for about a quarter of sub-questions): each a function of the prompt's
    text, so a change in what was retrieved changes the answers.
    """
    if (reply := hipporag_reply(body)) is not None:  # HippoRAG's and IRCoT's prompts
        return reply
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    if (schema := _schema(body)) is not None:
        return json.dumps(_from_schema(schema, text))
    if (longrag := _longrag(text)) is not None:
        return longrag
    if "Rewritten question:" in text:
        return _question(text)
    if "Summary:" in text:
        return _after(text, "Sentences:")[:200]
    if "yes or no" in text.lower() and "enough information" in text:
        return "yes" if _digest(_after(text, "Sentences:")) % 3 == 0 else "no"
    if "JSON" in text and "[" in text:
        return json.dumps([_question(text)])
    evidence = next((_after(text, label) for label in ("Sentences:", "Context:",
                     "Sub-questions and answers:", "Passages:",
                     "The following are given passages.") if label in text), "")  # fmt: skip
    if "unanswerable" in text and _digest(evidence + _question(text)) % 4 == 0:
        return "unanswerable"
    words = re.findall(r"[A-Z][\w'-]+", evidence) or evidence.split() or ["yes"]
    return " ".join(words[:2])
