"""``chainrag models fetch|list`` and ``chainrag serve-llm``: the offline models."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from chainrag.cli.common import Progress, reports_errors
from chainrag.recipes.models import DEFAULT_N_CTX

models_app = typer.Typer(help="Provision and check the offline models.", no_args_is_help=True)


def fetch_bars() -> Progress:
    """One bar at a time for :func:`chainrag.recipes.models.fetch`: bytes while it verifies a file
    (``verifying NAME``), parts while it assembles one (``part 3/22``); gone when done."""
    return Progress("part", units={"verifying": "B"}, unit_scale={"verifying"}, leave=False,
                    bar_of=lambda label: label.split(" ")[0], single=True)  # fmt: skip


@models_app.command("fetch")
@reports_errors()
def models_fetch(
    llm: Annotated[
        list[str] | None,
        typer.Option(help="Local LLM(s) to provision (default: qwen2.5-coder-1.5b)."),
    ] = None,
) -> None:
    """Assemble and verify the local GGUF model(s) in the model cache (idempotent)."""
    from chainrag.recipes import models

    for name in llm or ["qwen2.5-coder-1.5b"]:
        model = models.get_model(name)
        typer.echo(f"{name}: checking {models.model_path(model)}")
        with fetch_bars() as bars:
            status = models.fetch(model, progress=bars)
        typer.echo(f"{name}: ok, {status.size / 2**20:,.0f} MiB, sha256 verified: {status.path}")


@models_app.command("list")
def models_list(
    verify: Annotated[
        bool, typer.Option(help="Hash every file now instead of trusting the last check.")
    ] = False,
) -> None:
    """Show each offline model, its path, its size and whether it verifies."""
    from chainrag.recipes import models

    typer.echo(f"model cache: {models.model_cache_dir()}  (set ${models.CACHE_ENV} to move it)")
    for status in models.statuses(full=verify):
        size = f"{status.size / 2**20:,.0f} MiB" if status.size else "-"
        state = {"ok": "verified", "missing": "not fetched"}.get(status.state, status.state)
        typer.echo(f"  {status.model.name:<20} {state:<12} {size:>10}  {status.path}")
        typer.echo(f"  {'':<20} {status.model.description}")
    typer.echo("  spaCy en_core_web_sm and all-MiniLM-L6-v2 are pinned Python packages.")


@reports_errors()
def serve_llm(
    llm: Annotated[str, typer.Option(help="Local LLM to serve.")] = "qwen2.5-coder-1.5b",
    n_ctx: Annotated[int, typer.Option(help="Context window (tokens).")] = DEFAULT_N_CTX,
    n_threads: Annotated[int, typer.Option(help="CPU threads.")] = 2,
) -> None:
    """Run the managed local LLM server in the foreground until Ctrl-C (to share between runs)."""
    from chainrag.llm.server import LocalServer

    try:
        server = LocalServer.for_model(llm, n_ctx=n_ctx, n_threads=n_threads)
        typer.echo(f"starting {llm} (log: {server.log_path}) ...")
        with server:
            typer.echo(f"serving {llm} at {server.api_base} (pid {server.pid}); Ctrl-C stops it.")
            typer.echo(
                f"use it from a recipe:  llm: {{kind: local_gguf, model: {llm}, "
                f"api_base: {server.api_base}}}"
            )
            while server.process is not None and server.process.poll() is None:
                time.sleep(1.0)
            typer.secho(f"the server exited; log: {server.log_path}", fg="red", err=True)
            raise typer.Exit(1)
    except KeyboardInterrupt:
        typer.echo("stopped.")
