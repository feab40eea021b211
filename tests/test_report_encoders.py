"""The report's usage columns show the remote encoders' work a question by stage (embedding
tokens sent for passages and for queries, rerank searches) where a run's records hold it, "–"
for a run beside it without, and nothing new where no run has any."""

from __future__ import annotations

from pathlib import Path

from chainrag.core.types import EncoderUsage
from chainrag.report import find_runs, markdown, rows_of

from .run_records import record, write_run

PAID = {"embed passages": EncoderUsage(requests=1, tokens=900, sent=30),
        "embed queries": EncoderUsage(requests=1, tokens=12, sent=1),
        "rerank": EncoderUsage(requests=2, searches=2, sent=40)}  # fmt: skip
REPLAY = {"embed passages": EncoderUsage(stored=30), "embed queries": EncoderUsage(stored=1),
          "rerank": EncoderUsage(stored=40)}  # fmt: skip


def header(report: str) -> str:
    return next(line for line in report.splitlines() if line.startswith("| method"))


def test_the_encoders_columns_show_their_work_a_question_by_stage(tmp_path: Path) -> None:
    write_run(tmp_path / "musique" / "naive", [
        record("q1", {"naive": 1.0}, encoders=PAID),
        record("q2", {"naive": 0.5}, encoders=REPLAY)])  # fmt: skip
    write_run(tmp_path / "musique" / "ansint", [record("q1", {"ansint": 1.0}),
                                                record("q2", {"ansint": 0.0})])  # fmt: skip
    runs = find_runs([tmp_path])
    by_name = {run.name: rows_of(run)[0] for run in runs}
    assert by_name["naive"].encoders == {"embed passages": 450.0, "embed queries": 6.0,
                                         "rerank": 1.0}  # fmt: skip
    assert by_name["ansint"].encoders == {}
    report = markdown(runs)
    assert "| calls/q | tokens/q | passage emb. tokens/q | query emb. tokens/q | " \
           "rerank searches/q | s/q |" in header(report)  # fmt: skip
    naive = next(line for line in report.splitlines() if line.startswith("| NaiveRAG"))
    assert naive.endswith("| 450 | 6 | 1.0 | 2.0 |")
    ansint = next(line for line in report.splitlines() if line.startswith("| ChainRAG"))
    assert ansint.endswith("| – | – | – | 2.0 |")
    assert "the remote encoders' work a question by stage" in report


def test_runs_without_remote_encoders_report_as_before(tmp_path: Path) -> None:
    write_run(tmp_path / "musique" / "naive", [record("q1", {"naive": 1.0})])
    report = markdown(find_runs([tmp_path]))
    assert header(report).endswith("| calls/q | tokens/q | s/q |")
    assert "emb. tokens" not in report and "remote encoders" not in report
