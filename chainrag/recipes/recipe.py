"""Recipes: YAML files declaring a method, its stages and every parameter.

A recipe has four sections besides its name: ``llm`` (which model answers), ``index`` (how a
context becomes a sentence graph or chunks), ``retrieval`` (seeds and expansion), and ``method``
(the per-question flow and its stages). Components are named by registry key:

    retrieval:
      seed: {kind: dense_rerank, candidates: 100, k: 3, reranker: {kind: none}}

Loading is strict (see :mod:`chainrag.recipes.structure`) and reports every problem in a file
at once; whatever is wrong with a file (not UTF-8, bad YAML, nested too deep, an integer too
long, an unusable ``base:`` path, a plugin failing on import) is a :class:`RecipeError`, never a
traceback. A recipe may extend others with ``base:`` (a path relative to the file, or a
recipe's name such as ``chainrag/ansint``; or a list of them): mappings merge key by key,
lists, scalars and ``null`` replace (a ``null`` means what it means without ``base:``: a
component set to null is none, a mapping entry set to null is no entry, a key that cannot be
null is an error), and a component whose ``kind`` changes is replaced whole rather than merged.
``name`` is never inherited: it defaults to the file's stem. Each file of a chain is read once;
``base:`` files must lie inside the recipe's tree or another allowed root
(:func:`recipe_roots`).

Loading a recipe to run it imports its ``plugins:``; validating it need not
(:func:`check_recipe`), since importing a module runs its code.

This module holds the schema (:class:`Recipe` and its sections) and loading, checking and
dumping; reading YAML safely is :mod:`chainrag.recipes.yaml_file`, the ``base:`` chain
:mod:`chainrag.recipes.bases` (their names are importable from here too).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
import yaml

from chainrag.core.errors import (
    ChainragError,
    PluginError,
    Problem,
    RecipeError,
    UnknownComponentError,
)
from chainrag.core.parts import parts
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
    SufficiencyJudge,
)
from chainrag.protocols.parts import ChecksRecipe, Judged
from chainrag.recipes.bases import (
    MAX_BASE_DEPTH,
    ROOTS_ENV,
    SHIPPED_RECIPES,
    merge,
    recipe_roots,
    recipe_tree,
    resolve,
)
from chainrag.recipes.llm_params import key_env_problem, params_problem
from chainrag.recipes.models import LOCAL_MODELS
from chainrag.recipes.registry import find_plugin, load_plugin
from chainrag.recipes.structure import (
    CONVERTER,
    describe,
    identity,
    leaf_problems,
    leaves,
    type_name,
    unstructure,
)
from chainrag.recipes.yaml_file import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_INT_CHARS,
    MAX_VALUES,
    parse_yaml,
)
from chainrag.recipes.yaml_file import recipe_error as _error

__all__ = [
    "MAX_BASE_DEPTH", "MAX_BYTES", "MAX_DEPTH", "MAX_INT_CHARS", "MAX_VALUES", "ROOTS_ENV",
    "SHIPPED_RECIPES", "Checked", "IndexSpec", "LLMSpec", "Recipe", "RetrievalSpec", "check",
    "check_recipe", "dump_recipe", "load_recipe", "merge", "parse_yaml", "recipe_files",
    "recipe_roots", "recipe_tree", "resolve", "structure", "structure_stored",
]  # fmt: skip


@attrs.frozen
class LLMSpec:
    """Which LLM answers and how it is sampled.

    ``kind: local_gguf`` starts a managed llama.cpp server on 127.0.0.1 for one of
    :data:`~chainrag.recipes.models.LOCAL_MODELS`; ``kind: litellm`` sends ``model`` to litellm
    as is (``openai/gpt-4o-mini``, ``zhipuai/glm-4-plus``, ``openai/NAME`` with ``api_base``).
    API keys are read from the environment by litellm, never from a recipe. ``json_mode`` says
    how a JSON schema reaches the model (see :class:`chainrag.llm.backend.LiteLLMBackend`);
    ``auto`` picks llama.cpp's form for local models and OpenAI's where litellm supports it.
    ``prompt_cache`` is how the managed server (``local_gguf`` without ``api_base``) treats the
    previous request's prompt: ``fresh`` evaluates every prompt in full, so a request gets the
    same answer whatever came before it; ``aligned`` keeps the whole ``n_batch``-token chunks of
    the previous prompt that the new one shares and evaluates the rest as a fresh evaluation
    would, so its answers are ``fresh``'s, bit for bit, in less time where prompts begin alike;
    ``reuse`` evaluates only what follows the prefix shared with the previous request, faster
    still, but an answer can then depend on the request before it (ggml-org/llama.cpp#4902).
    Unset (``null``) is ``aligned`` on the managed server and means nothing elsewhere. Since
    ``fresh`` and ``aligned`` give the same answers, a run may go on in either (see
    :func:`chainrag.run.meta.answer_recipe`). ``n_ctx`` is the managed server's context window
    in tokens (unset: :data:`chainrag.recipes.models.DEFAULT_N_CTX`); a prompt that fits a
    smaller window gets the same logits, bit for bit, in a larger one, so it only decides which
    prompts are refused as too long. ``requests_per_minute`` and ``tokens_per_minute`` are the
    provider's limits (your account's tier): live requests are paced under them
    (:mod:`chainrag.llm.pacing`), so that a run meets them rather than discovers them by 429s.
    Like ``n_ctx``, they change no answer and stay out of the recipe's digest, and so does how
    the endpoint is reached: ``api_base`` (a served model moved to another port),
    ``concurrency``, ``timeout_s``, ``max_retries`` and ``api_key_env`` (each session of a run
    records them; see :mod:`chainrag.core.endpoint`). ``params`` passes further keywords to
    every litellm call as they are (``{top_p: 0.9}``, ``extra_body: {top_k: 20}``,
    ``extra_headers``, ``stop``), for any kind; a keyword chainrag sets itself is refused,
    naming the field that sets it (:mod:`chainrag.recipes.llm_params`). Set, they are part of
    the digest and of the response cache's key; unset (``{}``), neither. ``api_key_env`` names
    the environment variable that holds the endpoint's key (``VLLM_API_KEY`` for a server
    started with ``--api-key``), in place of the one litellm reads for the provider
    (``OPENAI_API_KEY``): the recipe names the variable, never the key.
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
    prompt_cache: Literal["fresh", "aligned", "reuse"] | None = None
    n_ctx: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(512))
    )
    requests_per_minute: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    tokens_per_minute: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0.0))
    )
    params: dict[str, Any] = attrs.field(factory=dict, hash=False)
    api_key_env: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.kind == "local_gguf" and self.model not in LOCAL_MODELS:
            raise ValueError(
                f"local_gguf model {self.model!r} is not one of {', '.join(LOCAL_MODELS)} "
                "(for any other model use kind: litellm)"
            )
        if problem := params_problem(self.params):
            raise ValueError(f"llm.params: {problem}")
        if self.api_key_env is not None and (problem := key_env_problem(self.api_key_env)):
            raise ValueError(f"llm.api_key_env {problem}")


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


def folder_name_problem(name: str) -> str | None:
    """What makes ``name`` unusable as one folder's name inside another (empty, ``.``,
    ``..``, a ``/`` or ``\\``, a NUL), None where it is usable."""
    if name in ("", ".", ".."):
        return f"{name!r} is not a folder's name"
    bad = next((c for c in ("/", "\\", "\0") if c in name), None)
    return f"{name!r} contains {bad!r}" if bad else None


def _check_name(_: Recipe, __: attrs.Attribute[str], name: str) -> None:
    problem = folder_name_problem(name)
    if problem:
        raise ValueError(
            f"name {problem}: a recipe's name is its run folder's name, which stays inside "
            "--out-dir (a name such as ansint-gpt-4o-mini)"
        )


@attrs.frozen
class Recipe:
    """A whole experiment configuration; its resolved form is saved next to every result.
    ``name`` names its run folder (see :func:`folder_name_problem`)."""

    name: str = attrs.field(validator=_check_name)
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
        for path, part in parts(self):
            if isinstance(part, ChecksRecipe):
                try:
                    part.check_recipe(self)
                except ValueError as exc:
                    raise ValueError(f"{path}: {exc}") from None

    @property
    def judge(self) -> SufficiencyJudge | None:
        """The sufficiency judge of the recipe's expander, None where it has none."""
        expander = self.retrieval.expander if self.retrieval is not None else None
        return expander.judge if isinstance(expander, Judged) else None


# --------------------------------------------------------------------------- load / dump


@attrs.frozen
class Checked:
    """A recipe as validation found it, plugins loaded or not.

    ``recipe`` is None when part of the recipe names components that no loaded code provides
    but a plugin that was not loaded might; ``unchecked`` says which parts (those parts, and
    checks that span them such as edge weights against edge layers, were not checked).
    """

    name: str
    recipe: Recipe | None
    unchecked: tuple[Problem, ...] = ()


def structure(data: Any, source: str) -> Recipe:
    """Build a :class:`Recipe` from plain data, importing its plugins; every problem is
    reported with its path."""
    recipe = check(data, source, load_plugins=True).recipe
    assert recipe is not None  # with plugins loaded an unknown component is an error
    return recipe


def check(data: Any, source: str, *, load_plugins: bool) -> Checked:
    """Validate plain recipe data; import its ``plugins:`` only when ``load_plugins``.

    Without ``load_plugins`` each plugin must be a module the import system can find, but
    none is imported (a module runs code when imported). A component kind no built-in or
    already loaded code provides is then not an error but an unchecked part, when the recipe
    names a plugin that was not loaded; every other problem is an error as usual.
    """
    if not isinstance(data, Mapping):
        raise _error(source, f"expected a mapping at the top, got {type_name(data)}")
    found, unloaded = _plugins(data.get("plugins", []), source, load_plugins)
    try:
        recipe: Recipe | None = CONVERTER.structure(data, Recipe)
        parts: list[tuple[str, BaseException]] = []
    except Exception as exc:
        recipe, parts = None, leaves(exc, source)
    unchecked = [_unchecked(where, leaf, unloaded) for where, leaf in parts if unloaded
                 and isinstance(leaf, UnknownComponentError)]  # fmt: skip
    for where, leaf in parts:
        if not (unloaded and isinstance(leaf, UnknownComponentError)):
            found.extend(leaf_problems(leaf, where))
    if found:
        raise RecipeError(source, _unique(found))
    name = recipe.name if recipe else data.get("name")
    return Checked(name if isinstance(name, str) else Path(source).stem, recipe, tuple(unchecked))


def _plugins(modules: Any, source: str, load: bool) -> tuple[list[Problem], tuple[str, ...]]:
    """Problems with the recipe's plugins, and the ones not imported."""
    found: list[Problem] = []
    if not isinstance(modules, list):
        return found, ()  # structuring reports the type
    named = [(i, m) for i, m in enumerate(modules) if isinstance(m, str)]
    for i, module in named:
        try:
            load_plugin(module) if load else find_plugin(module)
        except PluginError as exc:
            found.append(Problem(f"{source}.plugins[{i}]", str(exc)))
    return found, tuple(m for _, m in named if m not in sys.modules)


def _unchecked(where: str, leaf: UnknownComponentError, unloaded: Sequence[str]) -> Problem:
    return Problem(
        where,
        f"not checked: {leaf.stage} {describe(leaf.key)} is not built in and may come from "
        f"plugin(s) {', '.join(unloaded)}, not loaded (pass --load-plugins)",
    )


def _unique(items: Iterable[Problem]) -> list[Problem]:
    return list(dict.fromkeys(items))


def structure_stored(data: Any, source: str) -> Recipe | None:
    """A recipe stored as plain data (a run's ``recipe.yaml``, an index manifest's ``index:``)
    as today's components, or None where it no longer structures. Comparing the result with
    ``==`` ignores a parameter a component gained since, at its default."""
    try:
        return structure(data, source)
    except ChainragError:
        return None


def load_recipe(path: str | Path, roots: Iterable[str | Path] = ()) -> Recipe:
    """Load, resolve and validate a recipe file, importing its plugins (running a recipe
    runs its code). ``roots``: more folders its ``base:`` files may come from."""
    return structure(resolve(path, roots), str(path))


def check_recipe(
    path: str | Path, *, load_plugins: bool = False, roots: Iterable[str | Path] = ()
) -> Checked:
    """Load, resolve and validate a recipe file, importing its plugins only if asked
    (see :func:`check`)."""
    return check(resolve(path, roots), str(path), load_plugins=load_plugins)


def dump_recipe(recipe: Recipe, placement: bool = True) -> str:
    """The fully resolved recipe as YAML: every default explicit; loads back to an equal object
    (with ``placement`` False: without where its encoders run, the form its digest is made of)."""
    data = unstructure(recipe) if placement else identity(recipe)
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
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
