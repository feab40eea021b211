"""Changes to a recipe from the command line: ``--set PATH=VALUE`` and ``--llm NAME``.

    data = apply(resolve("recipes/chainrag/ansint.yaml"),
                 parse_all(["retrieval.seed.k=5"]), llm="gpt-4o-mini")
    recipe = structure(data, "recipes/chainrag/ansint.yaml")

``--set retrieval.seed.k=5`` is the recipe with that one value changed: PATH is the dotted path
of a field (``llm.temperature``, ``index.edges.ss.m``), VALUE is read as YAML (``5`` an int,
``null`` none, ``{kind: none}`` a component, ``"5"`` a string), and the result is merged over
the resolved recipe as a last ``base:`` would be — a mapping merges key by key, a component of
another ``kind`` replaces the old one whole — then typed and checked like the file, so a wrong
value is an error naming it. ``--llm NAME`` puts the ``llm:`` section of one of
``recipes/llms/`` (``gpt-4o-mini``, ``glm-4-plus``, ``qwen-plus``…; or the path of any recipe
file) over the recipe's, before the ``--set`` changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.errors import Problem, RecipeError
from chainrag.recipes.listing import RECIPES
from chainrag.recipes.recipe import Checked, Recipe, check, merge, parse_yaml, resolve, structure

LLMS = RECIPES / "llms"
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


@attrs.frozen
class Override:
    """One ``--set PATH=VALUE``: the field's path, the value read as YAML, and the text."""

    path: tuple[str, ...]
    value: Any
    text: str

    def nested(self) -> dict[str, Any]:
        """The change as a mapping: ``{"retrieval": {"seed": {"k": 5}}}``."""
        value: Any = self.value
        for key in reversed(self.path):
            value = {key: value}
        return dict(value)


def parse_override(text: str) -> Override:
    """``PATH=VALUE`` read; a RecipeError naming the text where it is not one."""
    where = f"--set {text}"
    path, sep, raw = text.partition("=")
    keys = tuple(path.strip().split("."))
    if not sep or not all(_KEY.match(k) for k in keys):
        raise RecipeError(
            "--set",
            [Problem(where, "expected PATH=VALUE with a dotted field path, such as "
                     "retrieval.seed.k=5 or llm.temperature=0")],
        )  # fmt: skip
    value = parse_yaml(raw, where) if raw.strip() else ""
    return Override(keys, value, text)


def parse_all(texts: Iterable[str]) -> tuple[Override, ...]:
    return tuple(parse_override(t) for t in texts)


LITELLM_DEFAULTS: dict[str, Any] = {"kind": "litellm", "temperature": 0.2, "concurrency": 8}
"""The ``llm:`` of ``--llm MODEL`` for a litellm model string no overlay names: what every API
overlay in ``recipes/llms/`` sets, so that ``--llm openai/gpt-4o-mini`` and ``--llm gpt-4o-mini``
(its overlay) are one recipe, with one digest."""


def llm_file(name: str) -> Path | None:
    """The recipe file whose ``llm:`` ``--llm NAME`` takes: NAME itself where it is a recipe
    file's path, else ``recipes/llms/NAME.yaml``; None where NAME is neither (a model's name)."""
    given = Path(name)
    if given.suffix in (".yaml", ".yml") or given.is_file():
        if not given.is_file():
            raise RecipeError("--llm", [Problem(f"--llm {name}", "no such recipe file")])
        return given
    overlay = LLMS / f"{name}.yaml"
    return overlay if _KEY.match(name) and overlay.is_file() else None


def overlays() -> dict[str, dict[str, Any]]:
    """The ``llm:`` section of each overlay in ``recipes/llms/``, by the overlay's name."""
    found = {}
    for path in sorted(LLMS.glob("*.yaml")):
        section = resolve(path).get("llm")
        if isinstance(section, Mapping):
            found[path.stem] = dict(section)
    return found


def llm_section(name: str, ask_litellm: bool = True) -> dict[str, Any]:
    """The ``llm:`` section ``--llm NAME`` puts over a recipe, NAME tried in this order:

    1. a recipe file's path (``my-llm.yaml``): its ``llm:``;
    2. an overlay's name (``gpt-4o-mini``: ``recipes/llms/gpt-4o-mini.yaml``): its ``llm:``;
    3. a local model's name (``qwen2.5-coder-1.5b``): the managed local server with it;
    4. any model string litellm knows a provider for (``openai/gpt-4o-mini``,
       ``anthropic/...``, ``ollama/qwen2.5:7b``, ``hosted_vllm/NAME``): the overlay whose
       model it is, else :data:`LITELLM_DEFAULTS` with it.

    A RecipeError names NAME and what was tried where it is none of them; with
    ``ask_litellm`` false, litellm is not asked (nor imported: 3 s), and a NAME that is none of
    1-3 is taken as its model string unchecked."""
    from chainrag.recipes.models import LOCAL_MODELS
    from chainrag.recipes.providers import unknown_model

    path = llm_file(name)
    if path is not None:
        section = resolve(path).get("llm")
        if not isinstance(section, Mapping):
            raise RecipeError("--llm", [Problem(f"--llm {name}", f"{path} has no llm: section")])
        return dict(section)
    if name in LOCAL_MODELS:
        return {"kind": "local_gguf", "model": name}
    known = overlays()
    for section in known.values():
        if section.get("kind") == "litellm" and section.get("model") == name:
            return section
    if ask_litellm and (reason := unknown_model(name)):
        local = ", ".join(LOCAL_MODELS)
        raise RecipeError(
            "--llm",
            [Problem(f"--llm {name}", f"not a recipe file, an LLM overlay ({', '.join(known)}), "
                     f"a local model ({local}) or a model litellm knows: {reason}")],
        )  # fmt: skip
    return {**LITELLM_DEFAULTS, "model": name}


def apply(
    data: Mapping[str, Any],
    overrides: Sequence[Override] = (),
    llm: str | None = None,
    ask_litellm: bool = True,
) -> dict[str, Any]:
    """The resolved recipe ``data`` with ``--llm``'s section and then each ``--set`` merged
    over it. ``--llm`` replaces the ``llm:`` section whole, so that nothing of the recipe's own
    LLM (an ``api_base``, a local model's ``prompt_cache``) leaks into the new one."""
    out = dict(data)
    if llm is not None:
        out["llm"] = llm_section(llm, ask_litellm)
    for override in overrides:
        out = merge(out, override.nested())
    return out


def describe(overrides: Sequence[str], llm: str | None) -> tuple[str, ...]:
    """The changes as a run records and a command says them: ``--llm NAME``, then each
    ``--set PATH=VALUE`` as given."""
    return ((f"--llm {llm}",) if llm else ()) + tuple(f"--set {o}" for o in overrides)


def load_changed(
    path: str | Path,
    overrides: Sequence[Override] = (),
    llm: str | None = None,
    roots: Iterable[str | Path] = (),
    ask_litellm: bool = True,
) -> Recipe:
    """A recipe file loaded with ``--llm`` and ``--set`` applied, typed and checked as the file
    is (an error names the field; a ``--set`` value's own problem names the ``--set``);
    ``ask_litellm``: as :func:`llm_section`'s."""
    return structure(apply(resolve(path, roots), overrides, llm, ask_litellm), str(path))


def check_changed(
    path: str | Path,
    overrides: Sequence[Override] = (),
    llm: str | None = None,
    *,
    load_plugins: bool = False,
) -> Checked:
    """:func:`chainrag.recipes.recipe.check_recipe` with ``--llm`` and ``--set`` applied."""
    return check(apply(resolve(path), overrides, llm), str(path), load_plugins=load_plugins)


LOCAL_EMBEDDERS = {"hashed_bow": {"kind": "hashed_bow"}, "all-minilm-l6-v2": {"kind": "flag_model"},
                   "minilm": {"kind": "flag_model"}}  # fmt: skip
"""``--embedder NAME`` for the embedders that ship: no model (``hashed_bow``) or the offline
all-MiniLM-L6-v2 (``flag_model``'s default)."""

LOCAL_RERANKERS = {"none": {"kind": "none"}, "dense": {"kind": "dense"}}
"""``--reranker NAME`` for the rerankers that need no model folder."""


def encoder_section(option: str, name: str, ask_litellm: bool = True) -> dict[str, Any]:
    """The component ``--embedder NAME`` or ``--reranker NAME`` (``option``) puts in the
    recipe, NAME tried in this order: a model folder on this machine (``flag_model``, or
    ``flag_reranker`` for a BGE reranker's folder); a model that ships (:data:`LOCAL_EMBEDDERS`,
    :data:`LOCAL_RERANKERS`); any model string litellm knows a provider for (the ``litellm``
    kind: ``text-embedding-3-small``, ``cohere/rerank-english-v3.0``, ``hosted_vllm/NAME``
    with ``--set index.embedder.api_base=URL``). A RecipeError names what was tried;
    ``ask_litellm``: as :func:`llm_section`'s."""
    from chainrag.recipes.providers import unknown_model

    embedder = option == "--embedder"
    if Path(name).is_dir():
        kind = "flag_model" if embedder else "flag_reranker"
        return {"kind": kind, "model_path": str(Path(name).resolve())}
    local = LOCAL_EMBEDDERS if embedder else LOCAL_RERANKERS
    if name in local:
        return dict(local[name])
    if ask_litellm and (reason := unknown_model(name)):
        raise RecipeError(option, [Problem(f"{option} {name}", (
            f"not a model folder, a model that ships ({', '.join(local)}) or a model "
            f"litellm knows: {reason}"))])  # fmt: skip
    return {"kind": "litellm", "model": name}


def encoder_changes(
    embedder: str | None, reranker: str | None, ask_litellm: bool = True
) -> list[str]:
    """``--embedder`` and ``--reranker`` as the ``--set`` changes they make: the index's
    embedder (which the seed retriever, a dense reranker and a similarity judge share), and the
    seed retriever's reranker (ChainRAG's BGE-Reranker, before the k seeds)."""
    import json

    changes = []
    if embedder is not None:
        section = encoder_section("--embedder", embedder, ask_litellm)
        changes.append(f"index.embedder={json.dumps(section)}")
    if reranker is not None:
        section = encoder_section("--reranker", reranker, ask_litellm)
        changes.append(f"retrieval.seed.reranker={json.dumps(section)}")
    return changes
