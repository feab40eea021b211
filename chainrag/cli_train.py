"""``chainrag train adapter`` and ``chainrag train reranker`` (seed 002)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from chainrag.errors import ChainragError

train_app = typer.Typer(help="Train seed 002's adapter and reranker.", no_args_is_help=True)

TRAIN_SETS = ("musique_train", "hotpotqa_train")
EVAL_SETS = ("musique", "hotpotqa", "2wiki")


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
