"""``chainrag train adapter`` and ``chainrag train reranker`` (Patwa et al.): each parses its
options, calls one workflow of :mod:`chainrag.training` and prints the report it returns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, cast, get_args

import typer

from chainrag.cli.common import Progress, deprecated, fail, reports_errors
from chainrag.core.device import Device

train_app = typer.Typer(help="Train Patwa et al.'s adapter and reranker.", no_args_is_help=True)

TEACHER_HELP = (
    "auto (a --teacher-path, else the LLM of --llm-recipe, else gold labels), path, llm, gold, "
    "or a rerank model litellm knows (cohere/rerank-english-v3.0; a server: --teacher-api-base)."
)
DEVICE_HELP = (
    "Where the fit runs: auto (the GPU when torch sees one, else the CPU), cpu or cuda, as an "
    "encoder's device: says."
)
BALANCE_HELP = (
    "Each epoch: every pair the teacher scores >= 0.5 and as many others, drawn anew (gold "
    "labels are ~15% positive)."
)


def parse_component(text: str, protocol: Any, what: str) -> Any:
    """A component from an inline YAML mapping such as ``{kind: flag_model}``; a mapping that
    is not one is a :class:`~chainrag.core.errors.RecipeError` naming each problem under
    ``what``."""
    from cattrs.errors import BaseValidationError

    from chainrag.core.errors import RecipeError
    from chainrag.recipes.recipe import parse_yaml
    from chainrag.recipes.structure import CONVERTER, problems

    data = parse_yaml(text, what)
    try:
        return CONVERTER.structure(data, protocol)
    except BaseValidationError as exc:
        raise RecipeError(what, problems(exc, what)) from None


def device_option(text: str) -> Device:
    """``--device``'s value, one of auto, cpu and cuda; exit 2 naming it otherwise."""
    if text not in get_args(Device):
        raise fail(f"--device must be auto, cpu or cuda, not {text!r}", 2)
    return cast("Device", text)


def echo_after(bars: Progress) -> Callable[[str], None]:
    """``typer.echo`` once the bars on screen are closed, so a line never lands on a bar."""

    def say(line: str) -> None:
        bars.close()
        typer.echo(line)

    return say


@train_app.command("adapter")
@reports_errors()
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
    device: Annotated[str, typer.Option(help=DEVICE_HELP)] = "auto",
) -> None:
    """Train Patwa et al.'s linear adapter on the HippoRAG train questions (gold paragraphs
    positive; distractors and other questions' gold negative), split by question; report
    separation accuracy and strict Hit@K (K = 2..5) before and after on the dev sets."""
    from chainrag.protocols.index import Embedder
    from chainrag.training import TrainConfig
    from chainrag.training import train_adapter as run
    from chainrag.training.adapter import EVAL_SETS
    from chainrag.training.common import TRAIN_SETS

    base = parse_component(embedder, Embedder, "--embedder")
    on = device_option(device)
    config = TrainConfig(epochs=epochs, margin=margin, penalty=penalty, seed=seed)
    with Progress(units={"training": "epoch"}) as bars:
        report = run(base, out, train_sets=train or TRAIN_SETS, eval_sets=evaluate or EVAL_SETS,
                     eval_limit=eval_limit, config=config, say=echo_after(bars),
                     progress=bars, device=on)  # fmt: skip
    typer.echo(report.table())
    typer.echo(f"\nsaved {out} and {report.json_path} in {report.seconds} s")
    typer.echo(f"use it: embedder: {{kind: linear_adapter, base: {embedder}, path: {out}}}")


@train_app.command("reranker")
@reports_errors()
def train_reranker(
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="Folder for the student (a cross_encoder path)."),
    ] = None,
    teacher: Annotated[str, typer.Option(help=TEACHER_HELP)] = "auto",
    teacher_path: Annotated[
        str | None, typer.Option(help="A local FlagReranker/CrossEncoder folder.")
    ] = None,
    llm_recipe: Annotated[
        Path | None, typer.Option(help="A recipe whose llm: judges relevance 0-10.")
    ] = None,
    teacher_api_base: Annotated[
        str | None, typer.Option(help="The server of a remote reranker teacher.")
    ] = None,
    train: Annotated[
        list[str] | None, typer.Option(help="Training question sets (default: both).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=2, help="Questions per set.")] = None,
    epochs: Annotated[int, typer.Option(min=1)] = 2,
    max_length: Annotated[int, typer.Option(min=16, help="Tokens per pair.")] = 256,
    lr: Annotated[float, typer.Option(min=0.0, help="AdamW learning rate.")] = 3e-5,
    balance: Annotated[bool, typer.Option(help=BALANCE_HELP)] = False,
    seed: Annotated[int, typer.Option()] = 0,
    device: Annotated[str, typer.Option(help=DEVICE_HELP)] = "auto",
    out: Annotated[
        Path | None, typer.Option("--out", hidden=True, help="Old spelling of --out-dir.")
    ] = None,
) -> None:
    """Distil a teacher's relevance scores into a small cross-encoder initialised from the
    offline MiniLM; report NDCG@10 against the teacher, strict Hit@K, MRR and milliseconds
    per question against no reranker (the dense order), on held-out questions."""
    from chainrag.training import DistillConfig, choose_teacher, distill_reranker
    from chainrag.training.common import TRAIN_SETS

    out = student_folder(out_dir, out)
    on = device_option(device)
    chosen = choose_teacher(teacher, teacher_path, llm_recipe, teacher_api_base)
    config = DistillConfig(epochs=epochs, max_length=max_length, seed=seed, lr=lr, balance=balance)
    units = {"teacher (LLM)": "pair", "training the student": "batch"}
    with Progress(units=units) as bars:
        report = distill_reranker(out, chosen, train_sets=train or TRAIN_SETS, limit=limit,
                                  config=config, say=echo_after(bars), progress=bars,
                                  device=on)  # fmt: skip
    typer.echo(report.table())
    typer.echo(f"\nsaved the student to {out} ({report.seconds} s); use it: "
               f"reranker: {{kind: cross_encoder, model_path: {out}}}")  # fmt: skip


def student_folder(out_dir: Path | None, out: Path | None) -> Path:
    """The folder ``--out-dir`` names (or ``--out``, its old spelling, with a line that says
    so); exit code 2 without one."""
    if out is not None:
        deprecated("--out", "--out-dir")
    found = out if out is not None else out_dir
    if found is None:
        raise fail("missing --out-dir: the folder the student goes to", 2)
    return found
