"""What every command shares: one way to report a refused input, one progress bar
(:class:`~chainrag.core.progress.Progress`, which the Python API uses too).

A command parses its options, calls one library function and prints. Errors the user can fix
(:class:`~chainrag.core.errors.ChainragError`, each naming its input) become ``FAIL message`` in red
on stderr and exit 1 through :func:`reports_errors`; anything else reaches
:func:`chainrag.cli.entry`, which reports it as a bug (exit 70).
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer

from chainrag.core.errors import ChainragError
from chainrag.core.progress import Progress

if TYPE_CHECKING:
    from pathlib import Path

    from chainrag.recipes.recipe import Recipe

__all__ = [
    "DETECT_HELP", "RESUME_HINT", "ApiBaseOption", "LLMOption", "Progress", "SetOption",
    "changed_recipe", "deprecated", "fail", "recipe_argument", "renamed", "reports_errors",
    "with_api_base",
]  # fmt: skip

P = ParamSpec("P")
R = TypeVar("R")

RESUME_HINT = "finished work is kept; run the same command to resume"
DETECT_HELP = (
    "Also state, beside each paired difference, how many paired questions a true difference "
    "of D F1 points needs to be detected (80% power, two-sided 5%): the larger of "
    "((1.96 + 0.84) x SD / D)^2 at the spread of the differences seen and the fewest whose "
    "flip floor is at most D (183 for 3 points)."
)
T = TypeVar("T")

SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        help="Change one field of the recipe, typed and checked like the file (repeatable): "
        "--set retrieval.seed.k=5 --set llm.temperature=0. VALUE is read as YAML.",
    ),
]
LLMOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        metavar="MODEL",
        help="Answer with this LLM in place of the recipe's llm: section: a recipe file's path, "
        "an overlay of recipes/llms/ (gpt-4o-mini, glm-4-plus, qwen-plus, openai-compatible, "
        "…), a local model (qwen2.5-coder-1.5b) or any litellm model string "
        "(openai/gpt-4o-mini, anthropic/…, ollama/qwen2.5:7b, hosted_vllm/NAME with --api-base).",
    ),
]
ApiBaseOption = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        metavar="URL",
        help="The LLM's server (a vLLM, ollama or llama.cpp server's /v1 URL), as "
        "--set llm.api_base=URL: --llm openai/NAME --api-base http://127.0.0.1:8000/v1.",
    ),
]


EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        metavar="MODEL",
        help="Embed with this model in place of the recipe's index embedder: a model folder, "
        "a model that ships (hashed_bow, all-minilm-l6-v2) or any litellm model string "
        "(text-embedding-3-small, cohere/embed-english-v3.0, hosted_vllm/NAME with "
        "--set index.embedder.api_base=URL).",
    ),
]
RerankerOption = Annotated[
    str | None,
    typer.Option(
        "--reranker",
        metavar="MODEL",
        help="Rerank the seed candidates with this model: a reranker's folder, none, dense, or "
        "any litellm rerank model string (cohere/rerank-english-v3.0, infinity/NAME with "
        "--set retrieval.seed.reranker.api_base=URL).",
    ),
]


def with_encoders(
    overrides: list[str] | None, embedder: str | None, reranker: str | None
) -> list[str]:
    """The ``--set`` changes with ``--embedder`` and ``--reranker`` first (as the ``--set``
    changes they make: :func:`chainrag.recipes.overrides.encoder_changes`); exit 1 naming the
    option where a name is none of what it may be."""
    from chainrag.recipes.overrides import encoder_changes

    try:
        return [*encoder_changes(embedder, reranker), *(overrides or ())]
    except ChainragError as exc:
        raise fail(str(exc)) from None


def with_api_base(overrides: list[str] | None, api_base: str | None) -> list[str]:
    """The ``--set`` changes with ``--api-base URL`` as the first, ``llm.api_base=URL``; exit 2
    naming the option where URL is not an http(s) URL or carries credentials."""
    changes = list(overrides or ())
    if api_base is None:
        return changes
    from urllib.parse import urlsplit

    parts = urlsplit(api_base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise fail(f"--api-base {api_base}: expected an http:// or https:// URL such as "
                   "http://127.0.0.1:8000/v1", 2)  # fmt: skip
    if parts.username or parts.password:
        raise fail("--api-base: the URL carries credentials; put the key in the environment "
                   "variable the provider reads (OPENAI_API_KEY for openai/…)", 2)  # fmt: skip
    return [f"llm.api_base={json.dumps(api_base)}", *changes]


class OldSpelling(FutureWarning):
    """An old spelling of a command line, still working for this release."""


def deprecated(old: str, new: str) -> None:
    """Warn that the spelling ``old`` is now ``new`` (and works for this release): the
    ``chainrag`` command prints it as a ``note:`` line on stderr (:func:`show_notes`)."""
    warnings.warn(f"{old} is now {new}; {old} works for this release only", OldSpelling,
                  stacklevel=2)  # fmt: skip


def show_notes() -> None:
    """Print FutureWarnings (an old spelling, an old corpus name) as one ``note:`` line on
    stderr, not Python's two-line warning; other warnings as Python prints them."""
    default = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, FutureWarning):
            typer.secho(f"note: {message}", fg="yellow", err=True)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def renamed(old: str, new: str, old_value: T | None, new_value: T) -> T:
    """The value of an option renamed from ``old`` to ``new``: the old spelling's when given
    (with a deprecation line), else the new one's."""
    if old_value is None:
        return new_value
    deprecated(old, new)
    return old_value


BUG_HINT = "please report it with the traceback recorded in"
"""What to do with a question's chainrag bug, followed by the file its traceback is in (a crash
of the command itself says so with the traceback printed: :func:`chainrag.cli.entry`)."""


def fail(message: str, code: int = 1, *, prefix: str = "FAIL ") -> typer.Exit:
    """Print ``FAIL message`` in red on stderr; the exit to raise (``raise fail(...)``).

    ``prefix=""`` prints the message alone (as click prints a usage error).
    """
    typer.secho(f"{prefix}{message}", fg="red", err=True)
    return typer.Exit(code)


def reports_errors(
    hint: str | None = None, *, prefix: str = "FAIL "
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a command: a :class:`ChainragError` it raises is printed by :func:`fail`
    (followed by ``(hint)`` when given, e.g. :data:`RESUME_HINT`; after ``prefix``) and exits 1.

    The command keeps its signature (``functools.wraps``), so typer reads its options as before.
    """

    def decorate(command: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(command)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return command(*args, **kwargs)
            except ChainragError as exc:
                raise fail(f"{exc}\n({hint})" if hint else str(exc), prefix=prefix) from None

        return wrapper

    return decorate


def recipe_argument(given: Path | None, old: Path | None) -> Path:
    """The recipe of a command that takes it as its argument: the argument, or the old
    ``--recipe`` spelling (with a deprecation line); exit 2 when there is neither."""
    if given is not None and old is not None:
        raise fail("give the recipe once: as the argument (--recipe is its old spelling)", 2)
    if old is not None:
        deprecated("--recipe FILE", "the RECIPE argument")
        return old
    if given is None:
        raise fail("missing the RECIPE argument (a recipe file)", 2)
    return given


def changed_recipe(path: Path, overrides: list[str] | None, llm: str | None) -> Recipe:
    """The recipe file with ``--llm`` and each ``--set`` applied; an input error is printed by
    :func:`fail` (exit 1)."""
    from chainrag.recipes.overrides import load_changed, parse_all

    try:
        return load_changed(path, parse_all(overrides or ()), llm)
    except ChainragError as exc:
        raise fail(str(exc)) from None
