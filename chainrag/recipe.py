"""Recipes: YAML files declaring a method, its stages and every parameter.

A recipe has four sections besides its name: ``llm`` (which model answers), ``index`` (how a
context becomes a sentence graph or chunks), ``retrieval`` (seeds and expansion), and ``method``
(the per-question flow and its stages). Components are named by registry key:

    retrieval:
      seed: {kind: dense_rerank, candidates: 100, k: 3, reranker: {kind: none}}

Loading is strict (see :mod:`chainrag.structure`) and reports every problem in a file at once.
A recipe may extend others with ``base:`` (a path or list of paths, relative to the file):
mappings merge key by key, lists and scalars replace, ``null`` removes an inherited key, and a
component whose ``kind`` changes is replaced whole rather than merged. ``name`` is never
inherited: it defaults to the file's stem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs
import yaml

from chainrag.errors import PluginError, Problem, RecipeError
from chainrag.protocols import (
    NER,
    Chunker,
    EdgeBuilder,
    Embedder,
    Expander,
    KeyEntityScorer,
    Method,
    SeedRetriever,
    SentenceSplitter,
)
from chainrag.registry import load_plugin
from chainrag.structure import CONVERTER, describe, problems, unstructure

LOCAL_MODELS = ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b")
"""Models the ``local_gguf`` LLM kind can serve (provisioned by ``chainrag models fetch``)."""


@attrs.frozen
class LLMSpec:
    """Which LLM answers and how it is sampled.

    ``kind: local_gguf`` starts a managed llama.cpp server on 127.0.0.1 for one of
    :data:`LOCAL_MODELS`; ``kind: litellm`` sends ``model`` to litellm as is
    (``openai/gpt-4o-mini``, ``zhipuai/glm-4-plus``, ``openai/NAME`` with ``api_base``).
    API keys are read from the environment by litellm, never from a recipe. ``json_mode`` says
    how a JSON schema reaches the model (see :class:`chainrag.llm.backend.LiteLLMBackend`);
    ``auto`` picks llama.cpp's form for local models and OpenAI's where litellm supports it.
    """

    kind: Literal["local_gguf", "litellm"] = "local_gguf"
    model: str = "qwen2.5-coder-1.5b"
    api_base: str | None = None
    temperature: float = attrs.field(default=0.2, validator=attrs.validators.ge(0.0))
    max_tokens: int = attrs.field(default=512, validator=attrs.validators.ge(1))
    seed: int | None = 0
    timeout_s: float = attrs.field(default=120.0, validator=attrs.validators.gt(0.0))
    max_retries: int = attrs.field(default=4, validator=attrs.validators.ge(0))
    concurrency: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    json_mode: Literal["auto", "json_schema", "json_object", "instructions"] = "auto"

    def __attrs_post_init__(self) -> None:
        if self.kind == "local_gguf" and self.model not in LOCAL_MODELS:
            raise ValueError(
                f"local_gguf model {self.model!r} is not one of {', '.join(LOCAL_MODELS)} "
                "(for any other model use kind: litellm)"
            )


@attrs.frozen
class IndexSpec:
    """How a context (or corpus) is indexed: a sentence graph, or chunks when ``chunker`` is set.

    The sentence graph (ChainRAG §3.1) needs ``splitter`` and the edge layers in ``edges``,
    each a named edge builder (``ec``, ``ss``, ``sa``); chunk mode needs ``chunker`` and no edges.
    """

    embedder: Embedder | None = None
    splitter: SentenceSplitter | None = None
    ner: NER | None = None
    key_entities: KeyEntityScorer | None = None
    edges: dict[str, EdgeBuilder] = attrs.field(factory=dict)
    chunker: Chunker | None = None

    def __attrs_post_init__(self) -> None:
        if self.chunker is not None and (self.splitter is not None or self.edges):
            raise ValueError("an index has either a chunker or a splitter with edges, not both")
        if self.edges and self.splitter is None:
            raise ValueError("edges need a sentence splitter: set index.splitter")


@attrs.frozen
class RetrievalSpec:
    """Seed retrieval, graph expansion and the weights that combine the edge layers."""

    seed: SeedRetriever
    expander: Expander | None = None
    edge_weights: dict[str, float] = attrs.field(factory=dict)


@attrs.frozen
class Recipe:
    """A whole experiment configuration; its resolved form is saved next to every result."""

    name: str
    description: str = ""
    plugins: tuple[str, ...] = ()
    llm: LLMSpec = LLMSpec()
    index: IndexSpec | None = None
    retrieval: RetrievalSpec | None = None
    method: Method | None = None

    def __attrs_post_init__(self) -> None:
        if self.retrieval is not None and self.index is not None:
            missing = sorted(set(self.retrieval.edge_weights) - set(self.index.edges))
            if missing:
                built = ", ".join(self.index.edges) or "none"
                raise ValueError(
                    "retrieval.edge_weights names edge layers the index does not build: "
                    f"{', '.join(missing)} (index.edges has: {built})"
                )


# --------------------------------------------------------------------------- YAML


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2 booleans and duplicate keys as errors.

    YAML 1.1 reads ``no``, ``off`` and ``y`` as booleans (the "Norway problem"); recipes take
    only ``true``/``false``. A key given twice in one mapping is an error, not a silent override.
    """


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    __import__("re").compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, list | dict):
            continue  # unhashable; SafeLoader reports it
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str, source: str) -> Any:
    """Parse recipe YAML safely; a syntax error becomes a :class:`RecipeError` with its line."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise RecipeError(
            source, [Problem(source, f"invalid YAML{where}: {exc.problem}")]
        ) from None
    except yaml.YAMLError as exc:
        raise RecipeError(source, [Problem(source, f"invalid YAML: {exc}")]) from None


# --------------------------------------------------------------------------- base: inheritance


def merge(base: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``child`` over ``base``: mappings merge, anything else replaces, null removes.

    Two mappings whose ``kind`` differ are different components: the child's replaces the
    base's whole, so parameters of the old kind do not leak into the new one.
    """
    out = dict(base)
    for key, value in child.items():
        old = out.get(key)
        if value is None:
            out.pop(key, None)
        elif (
            isinstance(old, Mapping)
            and isinstance(value, Mapping)
            and not _kind_changes(old, value)
        ):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def _kind_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return "kind" in new and new.get("kind") != old.get("kind")


def resolve(path: str | Path) -> dict[str, Any]:
    """Read a recipe file and everything it extends into one mapping (not yet structured)."""
    return _resolve(Path(path), str(path), ())


def _resolve(path: Path, label: str, chain: tuple[Path, ...]) -> dict[str, Any]:
    real = path.resolve()
    if real in chain:
        cycle = " -> ".join(str(p) for p in (*chain, real))
        raise RecipeError(label, [Problem(f"{label}.base", f"base cycle: {cycle}")])
    if not path.is_file():
        raise RecipeError(label, [Problem(label, "recipe file not found")])
    data = parse_yaml(path.read_text(encoding="utf-8"), label)
    if not isinstance(data, Mapping):
        raise RecipeError(
            label, [Problem(label, f"expected a mapping at the top, got {describe(data)}")]
        )
    bases = data.get("base", [])
    bases = [bases] if isinstance(bases, str) else bases
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise RecipeError(label, [Problem(f"{label}.base", "expected a path or a list of paths")])
    merged: dict[str, Any] = {}
    for i, base in enumerate(bases):
        base_path = path.parent / base
        if not base_path.is_file():
            where = f"{label}.base" if isinstance(data["base"], str) else f"{label}.base[{i}]"
            raise RecipeError(label, [Problem(where, f"base recipe not found: {base_path}")])
        parent = _resolve(base_path, str(base_path), (*chain, real))
        parent.pop("name", None)
        merged = merge(merged, parent)
    own = {k: v for k, v in data.items() if k != "base"}
    resolved = merge(merged, own)
    resolved.setdefault("name", path.stem)
    return resolved


# --------------------------------------------------------------------------- load / dump


def structure(data: Any, source: str) -> Recipe:
    """Build a :class:`Recipe` from plain data; every problem is reported with its path."""
    if not isinstance(data, Mapping):
        raise RecipeError(
            source, [Problem(source, f"expected a mapping at the top, got {describe(data)}")]
        )
    found: list[Problem] = []
    plugins = data.get("plugins", [])
    if isinstance(plugins, list):
        for i, module in enumerate(plugins):
            if isinstance(module, str):
                try:
                    load_plugin(module)
                except PluginError as exc:
                    found.append(Problem(f"{source}.plugins[{i}]", str(exc)))
    try:
        recipe = CONVERTER.structure(data, Recipe)
    except Exception as exc:
        found.extend(problems(exc, source))
        raise RecipeError(source, _unique(found)) from None
    if found:
        raise RecipeError(source, found)
    return recipe


def _unique(items: Iterable[Problem]) -> list[Problem]:
    return list(dict.fromkeys(items))


def load_recipe(path: str | Path) -> Recipe:
    """Load, resolve and validate a recipe file."""
    return structure(resolve(path), str(path))


def dump_recipe(recipe: Recipe) -> str:
    """The fully resolved recipe as YAML: every default explicit; loads back to an equal object."""
    text: str = yaml.safe_dump(unstructure(recipe), sort_keys=False, allow_unicode=True)
    return text


def recipe_files(paths: Iterable[str | Path]) -> list[Path]:
    """The recipe files named by ``paths``: files as given, folders searched for *.yaml/*.yml."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml")))
        else:
            out.append(p)
    return out
