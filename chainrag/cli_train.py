"""``chainrag train adapter`` and ``chainrag train reranker`` (seed 002)."""

from __future__ import annotations

import json
import math
import time
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from chainrag.errors import ChainragError

train_app = typer.Typer(help="Train seed 002's adapter and reranker.", no_args_is_help=True)

TRAIN_SETS = ("musique_train", "hotpotqa_train")
EVAL_SETS = ("musique", "hotpotqa", "2wiki")
TEACHER_HELP = (
    "auto (a --teacher-path, else the LLM of --llm-recipe, else gold labels), path, llm or gold."
)


def _fail(message: str) -> typer.Exit:
    typer.secho(f"FAIL {message}", fg="red", err=True)
    return typer.Exit(1)


def parse_component(text: str, protocol: Any, what: str) -> Any:
    """A component from an inline YAML mapping such as ``{kind: flag_model}``."""
    from chainrag.recipe import parse_yaml
    from chainrag.structure import CONVERTER

    data = parse_yaml(text, what)
    return CONVERTER.structure(data, protocol)


def _table(rows: list[tuple[str, str, str]], head: tuple[str, str, str]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


@train_app.command("adapter")
def train_adapter(
    out: Annotated[Path, typer.Option(help="The adapter file to write (.npz).")],
    train: Annotated[
        list[str] | None, typer.Option(help="Training question sets (default: both).")
    ] = None,
    evaluate: Annotated[
        list[str] | None,
        typer.Option("--eval", help="Dev sets for strict Hit@K (default: all three)."),
    ] = None,
    eval_limit: Annotated[int, typer.Option(min=1, help="Questions per dev set.")] = 200,
    embedder: Annotated[
        str, typer.Option(help="The base embedder, as an inline recipe mapping.")
    ] = "{kind: flag_model}",
    epochs: Annotated[int, typer.Option(min=1)] = 30,
    margin: Annotated[float, typer.Option(min=0.0)] = 0.2,
    penalty: Annotated[float, typer.Option(min=0.0, help="Weight of the change penalty.")] = 1.0,
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Train seed 002's linear adapter on the HippoRAG train questions (gold paragraphs
    positive; distractors and other questions' gold negative), split by question; report
    separation accuracy and strict Hit@K (K = 2..5) before and after on the dev sets."""
    import random

    import attrs
    from tqdm import tqdm

    from chainrag import adapter as ad
    from chainrag.context import Context
    from chainrag.data import load_dataset
    from chainrag.index import EmbeddingCache
    from chainrag.protocols.index import Embedder

    started = time.perf_counter()
    try:
        base = parse_component(embedder, Embedder, "--embedder")
        examples = [e for name in (train or TRAIN_SETS) for e in load_dataset(name)]
        dev = {name: load_dataset(name, eval_limit) for name in (evaluate or EVAL_SETS)}
    except ChainragError as exc:
        raise _fail(str(exc)) from None
    config = ad.TrainConfig(epochs=epochs, margin=margin, penalty=penalty, seed=seed)
    pairs = ad.pair_set(examples, random.Random(seed))  # noqa: S311 (reproducible sampling)
    if len(pairs.questions) < 2:
        raise _fail("fewer than 2 training questions with gold paragraphs")
    fit_q, val_q = ad.split_questions(len(pairs.questions), config.validation, seed)
    typer.echo(
        f"{len(pairs.questions)} questions ({len(fit_q)} train / {len(val_q)} validation), "
        f"{len(pairs.passages)} paragraphs, {len(ad.triplets(pairs, fit_q))} training triplets"
    )
    ctx, cache = Context(), EmbeddingCache()
    typer.echo("embedding with the base embedder…")
    queries = cache.embed(base, pairs.questions, ctx, role="query")
    passages = cache.embed(base, pairs.passages, ctx, role="passage")
    with tqdm(total=epochs, desc="training", unit="epoch") as bar:

        def progress(epoch: int, loss: float) -> None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}")

        trained, history = ad.train(queries, passages, pairs, fit_q, config, repr(base), progress)
    before = ad.separation(queries, passages, pairs, fit_q, val_q)
    after = ad.separation(
        trained.apply(queries, "query"), trained.apply(passages, "passage"), pairs, fit_q, val_q
    )
    hits: dict[str, dict[str, dict[int, float]]] = {}
    for name, questions in dev.items():
        typer.echo(f"strict Hit@K on {name} ({len(questions)} questions)…")

        def plain(texts: Any, role: Any) -> Any:
            return cache.embed(base, list(texts), ctx, role=role)

        def adapted(texts: Any, role: Any) -> Any:
            return trained.apply(plain(texts, role), role)

        hits[name] = {"base": ad.strict_hits(questions, plain),
                      "adapted": ad.strict_hits(questions, adapted)}  # fmt: skip
    report = {
        "train_sets": list(train or TRAIN_SETS),
        "questions": {"train": len(fit_q), "validation": len(val_q)},
        "config": attrs.asdict(config),
        "separation": {"base": before, "adapted": after},
        "strict_hit": hits,
        "loss": history,
        "seconds": round(time.perf_counter() - started, 1),
    }
    trained.save(out, {"report": report})
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    rows = [
        ("separation accuracy (validation, train threshold)",
         f"{100 * before['accuracy']:.1f}%", f"{100 * after['accuracy']:.1f}%"),
        ("separation accuracy (validation, oracle threshold)",
         f"{100 * before['oracle_accuracy']:.1f}%", f"{100 * after['oracle_accuracy']:.1f}%"),
        ("Pearson r", f"{before['pearson_r']:.3f}", f"{after['pearson_r']:.3f}"),
    ]  # fmt: skip
    for name, result in hits.items():
        for k in result["base"]:
            rows.append((f"{name} strict Hit@{k}", f"{100 * result['base'][k]:.1f}%",
                         f"{100 * result['adapted'][k]:.1f}%"))  # fmt: skip
    typer.echo(_table(rows, ("metric", "base", "adapted")))
    typer.echo(f"\nsaved {out} and {out.with_suffix('.json')} in {report['seconds']} s")
    typer.echo(f"use it: embedder: {{kind: linear_adapter, base: {embedder}, path: {out}}}")


@train_app.command("reranker")
def train_reranker(
    out: Annotated[Path, typer.Option(help="Folder for the student (a cross_encoder path).")],
    teacher: Annotated[
        str,
        typer.Option(help=TEACHER_HELP),
    ] = "auto",
    teacher_path: Annotated[
        str | None, typer.Option(help="A local FlagReranker/CrossEncoder folder.")
    ] = None,
    llm_recipe: Annotated[
        Path | None, typer.Option(help="A recipe whose llm: judges relevance 0-10.")
    ] = None,
    train: Annotated[
        list[str] | None, typer.Option(help="Training question sets (default: both).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=2, help="Questions per set.")] = None,
    epochs: Annotated[int, typer.Option(min=1)] = 2,
    max_length: Annotated[int, typer.Option(min=16, help="Tokens per pair.")] = 256,
    lr: Annotated[float, typer.Option(min=0.0, help="AdamW learning rate.")] = 3e-5,
    balance: Annotated[
        bool,
        typer.Option(
            help="Each epoch: every pair the teacher scores >= 0.5 and as many others, drawn "
            "anew (gold labels are ~15% positive)."
        ),
    ] = False,
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Distil a teacher's relevance scores into a small cross-encoder initialised from the
    offline MiniLM; report NDCG@10 against the teacher, strict Hit@K, MRR and milliseconds
    per question against no reranker (the dense order), on held-out questions."""
    import attrs
    from tqdm import tqdm

    from chainrag import distill as ds
    from chainrag.adapter import split_questions
    from chainrag.components.embedders import FlagModelEmbedder, offline_minilm_path
    from chainrag.context import Context
    from chainrag.data import load_dataset
    from chainrag.index import EmbeddingCache

    started = time.perf_counter()
    if teacher not in ("auto", "path", "llm", "gold"):
        raise _fail(f"--teacher must be auto, path, llm or gold, not {teacher!r}")
    kind = teacher
    if kind == "auto":
        kind = "path" if teacher_path else "llm" if llm_recipe else "gold"
    if kind == "path" and not (teacher_path and Path(teacher_path).exists()):
        raise _fail(f"--teacher-path {teacher_path!r} does not exist (a local reranker folder)")
    if kind == "llm" and llm_recipe is None:
        raise _fail("--teacher llm needs --llm-recipe (a recipe whose llm: judges relevance)")
    try:
        examples = [e for name in (train or TRAIN_SETS) for e in load_dataset(name, limit)]
    except ChainragError as exc:
        raise _fail(str(exc)) from None
    config = ds.DistillConfig(
        epochs=epochs, max_length=max_length, seed=seed, lr=lr, balance=balance
    )
    pairs = ds.pairs_of(examples)
    n_questions = len({p.question for p in pairs})
    fit_q, held_q = split_questions(n_questions, config.validation, seed)
    held = set(held_q)
    typer.echo(f"{n_questions} questions ({len(fit_q)} train / {len(held_q)} held out), "
               f"{len(pairs)} pairs; teacher: {kind}")  # fmt: skip
    unreadable = 0
    if kind == "path":
        assert teacher_path is not None
        scores = ds.cross_encoder_teacher(teacher_path, pairs)
    elif kind == "llm":
        from chainrag.llm import open_llm
        from chainrag.paths import cache_root
        from chainrag.recipe import load_recipe

        try:
            spec = load_recipe(llm_recipe).llm  # type: ignore[arg-type]
            with (
                open_llm(spec, cache_path=cache_root() / "llm-cache.sqlite") as llm,
                tqdm(total=len(pairs), desc="teacher (LLM)", unit="pair") as bar,
            ):
                scores, unreadable = ds.llm_teacher(llm, pairs, lambda i: bar.update(1))
        except ChainragError as exc:
            raise _fail(str(exc)) from None
    else:
        scores = ds.gold_teacher(pairs)
    fit_pairs = [i for i, p in enumerate(pairs) if p.question not in held]
    per_epoch = ds.epoch_size(scores[fit_pairs], balance)
    total_steps = epochs * math.ceil(per_epoch / config.batch_size)
    with tqdm(total=total_steps, desc="training the student", unit="batch") as bar:

        def progress(step: int, loss: float) -> None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}")

        model, tokenizer, history = ds.train_student(
            offline_minilm_path(), [pairs[i] for i in fit_pairs], scores[fit_pairs], config,
            progress,
        )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    dense, ctx, cache = FlagModelEmbedder(), Context(), EmbeddingCache()
    orders: dict[str, list[list[int]]] = {"none (dense order)": [], "teacher": [], "student": []}
    golds, gains, seconds = [], [], {"none (dense order)": 0.0, "student": 0.0}
    rows_of_question: dict[int, list[int]] = {}
    for i, pair in enumerate(pairs):
        rows_of_question.setdefault(pair.question, []).append(i)
    for q in held_q:
        rows = rows_of_question[q]
        group = [pairs[i] for i in rows]
        passages = cache.embed(dense, [p.passage for p in group], ctx, role="passage")
        query, spent = ds.timed(partial(dense, [group[0].query], ctx, role="query"))
        orders["none (dense order)"].append(ds.by_score(passages @ query[0]))
        seconds["none (dense order)"] += spent
        student, spent = ds.timed(
            partial(ds.student_scores, model, tokenizer, group, config.max_length)
        )
        seconds["student"] += spent
        orders["student"].append(ds.by_score(student))
        orders["teacher"].append(ds.by_score(scores[rows]))
        golds.append({j for j, p in enumerate(group) if p.gold})
        gains.append(scores[rows])
    metrics = {name: ds.ranking_metrics(o, golds, gains) for name, o in orders.items()}
    for name, spent in seconds.items():
        metrics[name]["ms_per_question"] = 1000 * spent / max(len(held_q), 1)
    report = {
        "teacher": kind, "teacher_path": teacher_path, "train_sets": list(train or TRAIN_SETS),
        "questions": {"train": len(fit_q), "held_out": len(held_q)}, "pairs": len(pairs),
        "unreadable_llm_scores": unreadable, "config": attrs.asdict(config), "loss": history,
        "metrics": metrics, "seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip
    (out / "distill_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    keys = list(metrics["student"])
    lines = ["| ranking | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name, values in metrics.items():
        cells = ["–" if k not in values else f"{values[k]:.1f}" if k.startswith("ms") else
                 f"{100 * values[k]:.1f}" if k.startswith("hit") else f"{values[k]:.3f}"
                 for k in keys]  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    typer.echo("\n".join(lines))
    typer.echo(f"\nsaved the student to {out} ({report['seconds']} s); use it: "
               f"reranker: {{kind: cross_encoder, model_path: {out}}}")  # fmt: skip
