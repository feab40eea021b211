"""The stand-in's answers to HippoRAG's and IRCoT's prompts: passage NER and triples as JSON,
query NER, IRCoT's thoughts (ending with "So the answer is:" after a step or two), the QA
reader's "Answer:". Each is made from the request's own last message, deterministically, so a
change in what was retrieved changes the replies. :func:`hipporag_reply` is None for any other
prompt.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

Body = dict[str, Any]
_NAME = re.compile(r"\b[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _names(text: str, at_most: int = 6) -> list[str]:
    """Capitalised word runs of ``text``, once each, in order."""
    return list(dict.fromkeys(_NAME.findall(text)))[:at_most]


def _messages(body: Body) -> tuple[str, str]:
    """The system message and the last user message of a chat body."""
    messages = body.get("messages", [])
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    return system, users[-1] if users else ""


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[-1].split(end, 1)[0] if start in text else ""


def _passage_ner(user: str) -> str:
    return json.dumps({"named_entities": _names(_between(user, "```", "```"))})


def _triples(user: str) -> str:
    found = re.search(r'\{"named_entities": (\[.*\])\}', user)
    names = json.loads(found.group(1)) if found else []
    return json.dumps({"triples": [[names[0], "is related to", t] for t in names[1:]]})


def _query_ner(user: str) -> str:
    return json.dumps({"named_entities": _names(user.split("Question:", 1)[-1])})


def _first_passage_names(user: str) -> list[str]:
    return _names(user.split("\n\n", 1)[0]) or ["unknown"]


def _thought(user: str) -> str:
    names = _first_passage_names(user)
    so_far = user.rsplit("Thought:", 1)[-1].strip()
    if so_far or _digest(user) % 2 == 0:
        return f"So the answer is: {names[-1]}."
    return f"{names[0]} is named in the passages."


def _reader(user: str) -> str:
    names = _first_passage_names(user.removeprefix("Wikipedia Title: "))
    return f"The passages name {names[0]}.\nAnswer: {names[-1]}"


def hipporag_reply(body: Body) -> str | None:
    """The reply to one of HippoRAG's or IRCoT's prompts, None for any other."""
    system, user = _messages(body)
    if "extract named entities from the given paragraph" in system:
        return _passage_ner(user)
    if "RDF (Resource Description Framework) graph" in system:
        return _triples(user)
    if system.startswith("You're a very effective entity extraction system."):
        return _query_ner(user)
    if 'If you reach what you believe to be the final step, start with "So the answer' in system:
        return _thought(user)
    if 'Conclude with "Answer: "' in system:
        return _reader(user)
    return None
