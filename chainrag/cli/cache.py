"""``chainrag cache``: the caches under ``$CHAINRAG_CACHE``, their sizes, and clearing them."""

from __future__ import annotations

from typing import Annotated

import typer

from chainrag.cli.common import reports_errors

cache_app = typer.Typer(
    help="The caches (vectors, spaCy's annotations, indexes, LLM answers): sizes, clearing.",
    invoke_without_command=True,
)


def size_text(n: int) -> str:
    """Bytes as a short human size."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


@cache_app.callback()
@reports_errors()
def cache_sizes(ctx: typer.Context) -> None:
    """Print every cache, where it is and its size (``chainrag cache clear`` empties them)."""
    if ctx.invoked_subcommand is not None:
        return
    from chainrag.core.paths import CACHE_ENV, cache_root
    from chainrag.index.stores import stores

    typer.echo(f"cache: {cache_root()}  (set ${CACHE_ENV} to move it)")
    found = stores()
    for store in found:
        typer.echo(f"  {store.name:<12} {size_text(store.bytes):>12}  {store.path}")
    typer.echo(f"  {'total':<12} {size_text(sum(s.bytes for s in found)):>12}")


@cache_app.command("clear")
@reports_errors()
def cache_clear(
    embeddings: Annotated[bool, typer.Option(help="The vectors by text.")] = False,
    annotations: Annotated[bool, typer.Option(help="spaCy's sentences and entities.")] = False,
    indexes: Annotated[bool, typer.Option(help="The built indexes of questions.")] = False,
    llm: Annotated[bool, typer.Option(help="The LLM's response cache.")] = False,
    rerank: Annotated[bool, typer.Option(help="A remote reranker's scores.")] = False,
) -> None:
    """Delete caches: those named, or all of them when none is. Everything is recomputed
    when next needed (the LLM's answers by new calls)."""
    from chainrag.index.stores import STORES, clear

    chosen = [name for name, on in zip(STORES, (embeddings, annotations, indexes, llm, rerank),
                                       strict=True) if on] or list(STORES)  # fmt: skip
    for store in clear(chosen):
        typer.echo(f"cleared {store.name}: {size_text(store.bytes)}  ({store.path})")
