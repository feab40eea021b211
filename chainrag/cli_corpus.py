"""``chainrag index ... --out DIR``: a corpus index built in a stream, with progress per stage."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from chainrag.errors import ChainragError

STAGE_UNITS = {"split": "passage", "embed": "sentence"}


class StageBars:
    """One tqdm bar per encoding stage: units/s and, where the total is known, time left."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self._bars.get(stage)
        if bar is None:
            unit = STAGE_UNITS.get(stage, "unit")
            bar = tqdm(total=total or None, desc=stage, unit=unit, unit_scale=True, initial=done)
            self._bars[stage] = bar
        bar.n = done
        bar.refresh()

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def build_corpus(
    recipe: Path, corpus: list[str], out: Path, dtype: str, batch_passages: int,
    batch_sentences: int, engine_name: str,
) -> None:  # fmt: skip
    """Build or resume the corpus index of ``corpus`` into ``out`` and print what it holds."""
    from chainrag.context import Context
    from chainrag.corpus.build import build_corpus_index
    from chainrag.recipe import load_recipe

    if dtype not in ("float32", "float16") or engine_name not in ("local", "ray"):
        typer.secho("--dtype is float32 or float16; --engine is local or ray", fg="red", err=True)
        raise typer.Exit(2)
    bars = StageBars()
    started = time.perf_counter()
    try:
        spec = load_recipe(recipe).index
        if spec is None:
            raise ChainragError(f"{recipe} has no index: section")
        ctx = Context()
        engine = _engine(engine_name, ctx)
        manifest = build_corpus_index(
            corpus, spec, out, ctx, batch_passages=batch_passages,
            batch_sentences=batch_sentences, dtype=dtype, engine=engine, progress=bars,  # type: ignore[arg-type]
        )  # fmt: skip
    except ChainragError as exc:
        bars.close()
        typer.secho(f"FAIL {exc}\n(finished batches are kept: run the same command to resume)",
                    fg="red", err=True)  # fmt: skip
        raise typer.Exit(1) from None
    bars.close()
    _say(out, manifest, time.perf_counter() - started)
    _prepare_search(recipe, out)


def _prepare_search(recipe: Path, out: Path) -> None:
    """Build the vector index the recipe's seed retriever searches with, if it names one, so
    that the first question does not pay for it."""
    from chainrag.components.search import ExactSearch
    from chainrag.corpus.store import CorpusIndex
    from chainrag.recipe import load_recipe

    loaded = load_recipe(recipe)
    search = getattr(loaded.retrieval.seed, "search", None) if loaded.retrieval else None
    if search is None or isinstance(search, ExactSearch) or loaded.index is None:
        return
    assert loaded.index.embedder is not None
    started = time.perf_counter()
    CorpusIndex.open(out, loaded.index.embedder).vector_index(search)
    typer.echo(f"vector index for seed retrieval ({search}) ready in "
               f"{time.perf_counter() - started:.1f} s")  # fmt: skip


def _engine(name: str, ctx: Any) -> Any:
    from chainrag.corpus.build import LocalEngine

    if name == "local":
        return LocalEngine(ctx)
    from chainrag.corpus.ray_engine import RayEngine

    return RayEngine()


def _say(out: Path, manifest: dict[str, Any], seconds: float) -> None:
    counts = manifest["counts"]
    edges = ", ".join(f"{k} {v:,}" for k, v in counts["edges"].items()) or "none"
    typer.echo(
        f"{out}: {counts['passages']:,} passages, {counts['sentences']:,} units, "
        f"{counts['entities']:,} entities ({counts['key_entities']:,} key), edges: {edges}"
    )
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in manifest["stages"].items())
    typer.echo(f"stages (this and earlier sessions): {stages}; this session {seconds:.1f} s")
