"""The training workflows' typed reports (chainrag.training): what they hold is what the
commands print and the files they write, the teacher's choice, the held-out rankings, and the
adapter's file format living below the training code (no import cycle)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import chainrag.components
from chainrag.cli.main import app
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.index.linear_adapter import LinearAdapter
from chainrag.context import StageContext
from chainrag.index.build import EmbeddingCache
from chainrag.training import (
    AdapterReport,
    BaseAndAdapted,
    DistillConfig,
    DistillReport,
    RankingMetrics,
    Separation,
    Teacher,
    TrainConfig,
    TrainingError,
    choose_teacher,
    distill_reranker,
    train_adapter,
)
from chainrag.training.distill_eval import DENSE, held_out_rankings
from chainrag.training.distill_fit import Pair


class Recorder:
    """Collects what a workflow says and the progress it reports."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.progress: list[tuple[str, int, int, dict[str, str]]] = []

    def say(self, line: str) -> None:
        self.lines.append(line)

    def __call__(self, label: str, done: int, total: int, postfix: dict[str, str]) -> None:
        self.progress.append((label, done, total, postfix))


def _file_json(report: dict[str, Any]) -> Any:
    """``report`` as it reads back from a JSON file (integer keys become strings)."""
    return json.loads(json.dumps(report))


def test_the_adapter_report_is_what_its_files_hold(tmp_path: Path) -> None:
    seen = Recorder()
    out = tmp_path / "a" / "toy.npz"
    report = train_adapter(
        HashedBagOfWords(dim=32), out, train_sets=("musique_train",), eval_sets=("musique",),
        eval_limit=4, config=TrainConfig(epochs=2), cache=EmbeddingCache(tmp_path / "emb"),
        say=seen.say, progress=seen,
    )  # fmt: skip
    assert (report.out, report.json_path) == (out, tmp_path / "a" / "toy.json")
    assert (report.train_questions, report.validation_questions) == (70, 30)
    assert report.train_sets == ("musique_train",) and len(report.loss) == 2
    assert seen.lines == [
        f"100 questions (70 train / 30 validation), {report.paragraphs} paragraphs, "
        f"{report.triplets} training triplets",
        "embedding with the base embedder…",
        "strict Hit@K on musique (4 questions)…",
    ]
    assert [p[:3] for p in seen.progress] == [("training", e, 2) for e in range(3)]
    assert seen.progress[-1][3] == {"loss": f"{report.loss[-1]:.4f}"}
    written = json.loads(report.json_path.read_text())
    assert written == _file_json(report.as_json())
    assert list(written) == ["train_sets", "questions", "config", "separation", "strict_hit",
                             "loss", "seconds"]  # fmt: skip
    with np.load(out, allow_pickle=False) as data:
        assert json.loads(str(data["header"]))["report"] == written
    assert "HashedBagOfWords" in LinearAdapter.load(out).base
    hits = report.strict_hit["musique"]
    assert set(hits.base) == set(hits.adapted) == {2, 3, 4, 5}
    assert 0 <= report.separation.adapted.accuracy <= 1
    table = report.table().splitlines()
    assert table[:2] == ["| metric | base | adapted |", "|---|---|---|"] and len(table) == 9
    assert table[-1] == (f"| musique strict Hit@5 | {100 * hits.base[5]:.1f}% | "
                         f"{100 * hits.adapted[5]:.1f}% |")  # fmt: skip


def _no_gold(tmp_path: Path) -> str:
    """A LongBench file: questions without gold paragraphs, so nothing to train on."""
    path = tmp_path / "lb.jsonl"
    record = {"input": "Q?", "context": "Passage 1:\nT\nsome text", "answers": ["a"]}
    path.write_text("\n".join(json.dumps(record | {"_id": str(i)}) for i in range(3)) + "\n")
    return f"longbench:{path}"


def test_too_few_training_questions_are_refused(tmp_path: Path) -> None:
    data = _no_gold(tmp_path)
    with pytest.raises(TrainingError, match=r"^fewer than 2 training questions with gold"):
        train_adapter(HashedBagOfWords(dim=8), tmp_path / "a.npz", train_sets=(data,),
                      eval_sets=())  # fmt: skip
    result = CliRunner().invoke(app, ["train", "adapter", "--out", str(tmp_path / "a.npz"),
                                      "--train", data, "--eval", data])  # fmt: skip
    assert result.exit_code == 1
    assert "FAIL fewer than 2 training questions with gold paragraphs" in result.output
    assert not (tmp_path / "a.npz").exists()


def _separation(x: float) -> Separation:
    return Separation(accuracy=x, oracle_accuracy=x, pearson_r=x, threshold=0.5,
                      train_accuracy=x)  # fmt: skip


def test_the_adapter_table_and_json() -> None:
    report = AdapterReport(
        out=Path("a.npz"), train_sets=("musique_train",), train_questions=7,
        validation_questions=3, paragraphs=20, triplets=40, config=TrainConfig(epochs=1),
        separation=BaseAndAdapted(_separation(0.5), _separation(0.625)),
        strict_hit={"2wiki": BaseAndAdapted({2: 0.25}, {2: 0.5})}, loss=(0.25,), seconds=1.5,
    )  # fmt: skip
    assert report.table() == "\n".join([
        "| metric | base | adapted |",
        "|---|---|---|",
        "| separation accuracy (validation, train threshold) | 50.0% | 62.5% |",
        "| separation accuracy (validation, oracle threshold) | 50.0% | 62.5% |",
        "| Pearson r | 0.500 | 0.625 |",
        "| 2wiki strict Hit@2 | 25.0% | 50.0% |",
    ])  # fmt: skip
    data = report.as_json()
    assert data["questions"] == {"train": 7, "validation": 3}
    assert data["separation"]["adapted"]["oracle_accuracy"] == 0.625
    assert data["strict_hit"] == {"2wiki": {"base": {2: 0.25}, "adapted": {2: 0.5}}}
    assert data["config"]["epochs"] == 1 and data["seconds"] == 1.5


def test_the_distill_table_and_json() -> None:
    def metrics(x: float, ms: float | None) -> RankingMetrics:
        return RankingMetrics(ndcg=x, hit={2: x, 4: 1.0}, mrr=x, ms_per_question=ms)

    report = DistillReport(
        out=Path("student"), teacher=Teacher("gold"), train_sets=("musique_train",),
        train_questions=3, held_out_questions=1, pairs=80, unreadable_llm_scores=0,
        config=DistillConfig(epochs=1), loss=(0.25,), seconds=2.0,
        metrics={DENSE: metrics(0.5, 12.25), "teacher": metrics(1.0, None),
                 "student": metrics(0.125, 30.0)},
    )  # fmt: skip
    assert report.json_path == Path("student") / "distill_report.json"
    assert report.table() == "\n".join([
        "| ranking | ndcg@10 | hit@2 | hit@4 | mrr | ms_per_question |",
        "|---|---|---|---|---|---|",
        "| none (dense order) | 0.500 | 50.0 | 100.0 | 0.500 | 12.2 |",
        "| teacher | 1.000 | 100.0 | 100.0 | 1.000 | – |",
        "| student | 0.125 | 12.5 | 100.0 | 0.125 | 30.0 |",
    ])  # fmt: skip
    data = report.as_json()
    assert list(data) == [
        "teacher", "teacher_path", "train_sets", "questions", "pairs", "unreadable_llm_scores",
        "config", "loss", "metrics", "seconds",
    ]  # fmt: skip
    assert data["teacher"] == "gold" and data["teacher_path"] is None
    assert data["questions"] == {"train": 3, "held_out": 1}
    assert data["metrics"]["teacher"] == {"ndcg@10": 1.0, "hit@2": 1.0, "hit@4": 1.0, "mrr": 1.0}
    assert list(data["metrics"]["student"]) == ["ndcg@10", "hit@2", "hit@4", "mrr",
                                                "ms_per_question"]  # fmt: skip


def test_the_teacher_is_chosen_by_the_options(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    assert choose_teacher("auto", None, None) == Teacher("gold")
    assert choose_teacher("auto", None, recipe) == Teacher("llm", None, recipe)
    assert choose_teacher("auto", str(tmp_path), recipe) == Teacher("path", str(tmp_path), recipe)
    assert choose_teacher("gold", str(tmp_path), None) == Teacher("gold", str(tmp_path))
    with pytest.raises(
        TrainingError,
        match=r"^--teacher must be auto, path, llm, gold or a rerank "
        r"model litellm knows, not 'x'",
    ):
        choose_teacher("x", None, None)
    with pytest.raises(TrainingError, match=r"^--teacher-path '.*nope' does not exist"):
        choose_teacher("auto", str(tmp_path / "nope"), None)
    with pytest.raises(TrainingError, match=r"^--teacher-path None does not exist"):
        choose_teacher("path", None, None)
    with pytest.raises(TrainingError, match=r"^--teacher llm needs --llm-recipe"):
        choose_teacher("llm", None, None)


def test_held_out_rankings_measure_dense_teacher_and_student(tmp_path: Path) -> None:
    pairs = [Pair(q, f"city {q}", f"passage {q} {j}", j == q) for q in range(3) for j in range(4)]
    scores = np.asarray([1.0 if p.gold else 0.1 * (i % 4) for i, p in enumerate(pairs)])
    asked: list[int] = []

    def student(group: Any) -> np.ndarray:  # the teacher's scores, backwards
        asked.append(len(group))
        return -np.asarray([scores[pairs.index(p)] for p in group])

    metrics = held_out_rankings(pairs, scores, [0, 2], student, HashedBagOfWords(dim=16),
                                EmbeddingCache(tmp_path), StageContext())  # fmt: skip
    assert list(metrics) == [DENSE, "teacher", "student"] and asked == [4, 4]
    assert metrics["teacher"].ndcg == 1.0 and metrics["teacher"].mrr == 1.0
    assert metrics["teacher"].ms_per_question is None
    assert metrics["student"].hit == {2: 0.0, 3: 0.0, 4: 1.0, 5: 1.0}
    assert metrics["student"].mrr == 0.25
    assert all((metrics[n].ms_per_question or 0) > 0 for n in (DENSE, "student"))


def test_the_distill_report_is_what_its_file_holds(tmp_path: Path) -> None:
    seen = Recorder()
    config = DistillConfig(epochs=1, max_length=32, batch_size=64)
    report = distill_reranker(
        tmp_path / "s", Teacher("gold"), train_sets=("musique_train",), limit=3, config=config,
        cache=EmbeddingCache(tmp_path / "emb"), say=seen.say, progress=seen,
    )  # fmt: skip
    assert seen.lines == ["3 questions (2 train / 1 held out), 60 pairs; teacher: gold"]
    assert seen.progress[0] == ("training the student", 0, 1, {})
    assert [p[:3] for p in seen.progress[1:]] == [("training the student", 1, 1)]
    assert (report.pairs, report.train_questions, report.held_out_questions) == (60, 2, 1)
    written = json.loads(report.json_path.read_text())
    assert written == _file_json(report.as_json()) and written["teacher"] == "gold"
    assert report.metrics["teacher"].ndcg == 1.0 and len(report.loss) == 1
    assert (tmp_path / "s" / "config.json").is_file()  # the student, a cross_encoder folder


def _chainrag_imports(path: Path) -> set[str]:
    """Every chainrag module ``path`` imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return {n for n in names if n.startswith("chainrag")}


def test_components_import_no_training_code() -> None:
    """Reading an adapter (its maps, its file, the ``linear_adapter`` embedder) needs nothing
    from chainrag.training, and the embedders nothing of the adapter: no import cycle."""
    folder = Path(chainrag.components.__file__).parent
    for path in folder.rglob("*.py"):
        assert not any(n.startswith("chainrag.training") for n in _chainrag_imports(path)), path
    embedders = folder / "index" / "embedders.py"
    assert not any("linear_adapter" in n for n in _chainrag_imports(embedders))
    assert "chainrag.components.index.linear_adapter.LinearAdapter" in _chainrag_imports(
        folder.parent / "training" / "adapter_fit.py"
    )


def test_a_bad_embedder_option_is_refused_with_its_problems(tmp_path: Path) -> None:
    out = str(tmp_path / "a.npz")
    for option, message in [
        ("{kind: nosuch}", "unknown embedder 'nosuch'"),
        ("{kind: hashed_bow, dim: 1}", "dim"),
        ("{kind: hashed_bow, size: 8}", "size"),
    ]:
        result = CliRunner().invoke(app, ["train", "adapter", "--out", out, "--embedder", option])
        assert result.exit_code == 1, result.output
        assert result.output.startswith("FAIL --embedder: 1 problem\n  - ")
        assert message in result.output and "@ --embedder" in result.output


def test_the_fits_run_where_their_device_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reranker teacher, the student and the adapter fit take a device, as an encoder's
    ``device`` (auto, cpu, cuda); the teacher's CrossEncoder is built on it (it was always the
    CPU); a device this machine lacks is refused before any work, naming the command."""
    import sentence_transformers

    from chainrag.core.device import DeviceError, cuda_available
    from chainrag.training.adapter_fit import PairSet, train
    from chainrag.training.teachers import cross_encoder_teacher

    built: list[str] = []

    class Recorded:
        def __init__(self, path: str, device: str) -> None:
            built.append(device)

        def predict(self, pairs: list[list[str]], **_: Any) -> np.ndarray:
            return np.zeros(len(pairs), dtype=np.float32)

    monkeypatch.setattr(sentence_transformers, "CrossEncoder", Recorded)
    pairs = [Pair(0, "q", "p", True)]
    assert cross_encoder_teacher("some/folder", pairs).tolist() == [0.0]
    cross_encoder_teacher("some/folder", pairs, device="cuda")
    assert built == ["cpu", "cuda"]
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(4, 3)).astype(np.float32)
    pair_set = PairSet(("a", "b"), ("p", "q"), ((0,), (1,)), ((1,), (0,)))
    config = TrainConfig(epochs=2, batch_size=2)
    on_cpu, loss = train(vectors[:2], vectors[2:], pair_set, [0, 1], config, device="cpu")
    again, again_loss = train(vectors[:2], vectors[2:], pair_set, [0, 1], config)
    assert loss == again_loss and np.array_equal(on_cpu.wq, again.wq)
    if not cuda_available():
        with pytest.raises(DeviceError, match="train reranker has device: cuda"):
            distill_reranker(Path("unused"), Teacher("gold"), device="cuda")
        with pytest.raises(DeviceError, match="train adapter has device: cuda"):
            train_adapter(HashedBagOfWords(), Path("unused.npz"), device="cuda")
    wrong = CliRunner().invoke(app, ["train", "adapter", "--out", "a.npz", "--device", "tpu"])
    assert wrong.exit_code == 2 and "--device must be auto, cpu or cuda, not 'tpu'" in wrong.output
