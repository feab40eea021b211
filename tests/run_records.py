"""Run records and run folders made by hand, for the tests of the report and the analyses: a
record with the scores, usage and trace a test names, written through the real line writer."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from chainrag.core.notes import MethodNotes
from chainrag.core.types import Answer, EncoderUsage, NamedAnswer, Prediction, StepTrace, Usage
from chainrag.run.meta import LLMIdentity, ModelIdentities, RunMeta, meta_data
from chainrag.run.record import RetrievalRecord, RunRecord, ScoredAnswer, record_line

NO_USAGE = Usage()


def record(
    qid: str,
    f1s: Mapping[str, float] = {},
    *,
    texts: Mapping[str, str] = {},
    gold: Sequence[str] = ("x",),
    question_type: str = "",
    retrieval: RetrievalRecord | None = None,
    usage: Usage = NO_USAGE,
    steps: Sequence[StepTrace] = (),
    seconds: float = 2.0,
    notes: MethodNotes | None = None,
    encoders: Mapping[str, EncoderUsage] = {},
) -> RunRecord:
    """A question answered with one variant per ``f1s`` key (EM = F1; the text ``texts`` gives,
    else "x"), the first the primary; ``notes``: what the method says of its answers;
    ``encoders``: the remote encoders' usage by stage."""
    answers = {v: ScoredAnswer(texts.get(v, "x"), f1, f1) for v, f1 in f1s.items()}
    named = tuple(NamedAnswer(v, Answer(texts.get(v, "x"))) for v in f1s)
    trace = Prediction(named, tuple(steps), usage=usage, notes=notes,
                       encoder_usage=tuple(sorted(encoders.items())))  # fmt: skip
    return RunRecord(qid, "musique", f"question {qid}?", question_type, tuple(gold), answers,
                     retrieval, trace, seconds)  # fmt: skip


def meta(name: str, dataset: str = "musique", llm: str = "qwen2.5-coder-1.5b") -> RunMeta:
    """The ``run.json`` of a run of recipe ``name`` on ``dataset`` (no session recorded)."""
    models = ModelIdentities(LLMIdentity("local_gguf", llm), {})
    return RunMeta(1, name, "", f"{name}.yaml", "sha256:0", "Method", dataset, "data.jsonl",
                   "sha256:1", {}, models, ())  # fmt: skip


def write_run(
    folder: Path,
    records: Sequence[RunRecord],
    *,
    name: str | None = None,
    dataset: str = "musique",
    tail: str = "",
) -> Path:
    """A run folder holding ``records`` (and ``tail`` after their lines, e.g. a torn line); its
    ``run.json`` names recipe ``name`` (the folder's name by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    run = meta(name or folder.name, dataset)
    (folder / "run.json").write_text(json.dumps(meta_data(run)))
    lines = "".join(json.dumps(record_line(r)) + "\n" for r in records)
    (folder / "predictions.jsonl").write_text(lines + tail)
    return folder
