"""Recipes: YAML files declaring a method, its stages and every parameter.

A recipe has four sections besides its name: ``llm`` (which model answers), ``index`` (how a
context becomes a sentence graph or chunks), ``retrieval`` (seeds and expansion), and ``method``
(the per-question flow and its stages). Components are named by registry key:

    retrieval:
      seed: {kind: dense_rerank, candidates: 100, k: 3, reranker: {kind: none}}

Loading is strict (see :mod:`chainrag.recipes.structure`) and reports every problem in a file
at once; whatever is wrong with a file (not UTF-8, bad YAML, nested too deep, an integer too
long, an unusable ``base:`` path, a plugin failing on import) is a :class:`RecipeError`, never a
traceback. A recipe may extend others with ``base:`` (a path or list of paths, relative to the
file): mappings merge key by key, lists, scalars and ``null`` replace (a ``null`` means what it
means without ``base:``: a component set to null is none, a mapping entry set to null is no
entry, a key that cannot be null is an error), and a component whose ``kind`` changes is
replaced whole rather than merged. ``name`` is never inherited: it defaults to the file's
stem. Each file of a chain is read once; ``base:`` files must lie inside the recipe's tree
or another allowed root (:func:`recipe_roots`).

Loading a recipe to run it imports its ``plugins:``; validating it need not
(:func:`check_recipe`), since importing a module runs its code.
"""

from __future__ import annotations

import os
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
    prompts are refused as too long.
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


# --------------------------------------------------------------------------- YAML

MAX_BYTES = 1 << 20
"""A recipe file holds at most 1 MiB."""
MAX_DEPTH = 64
"""Values nest at most this deep (the repository's recipes nest 5 levels)."""
MAX_VALUES = 100_000
"""A file holds at most this many values once YAML aliases are expanded (no alias bombs)."""
MAX_INT_CHARS = 100
"""An integer is written in at most this many characters (Python refuses 4,300 digits)."""


def _error(where: str, message: str, source: str | None = None) -> RecipeError:
    return RecipeError(source or where, [Problem(where, message)])


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2 booleans, duplicate keys as errors, short integers.

    YAML 1.1 reads ``no``, ``off`` and ``y`` as booleans (the "Norway problem"); recipes take
    only ``true``/``false``. A key given twice in one mapping is an error, not a silent override.
    A value SafeLoader's constructors fail on with a Python error (``!!bool maybe`` raises
    KeyError, ``!!timestamp x`` AttributeError, ``!!int ""`` IndexError) is a YAML error at
    its line.
    """

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, RecursionError, MemoryError):
            raise
        except Exception as exc:
            what = describe(node.value) if isinstance(node, yaml.ScalarNode) else "this value"
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            why = f": {exc}" if isinstance(exc, ValueError) else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {what} as {tag}{why}", node.start_mark
            ) from None


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
                None, None, f"duplicate key {describe(key)} (line {mark.line + 1})", mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    if len(text) > MAX_INT_CHARS:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer {len(text)} characters long (at most {MAX_INT_CHARS})",
            node.start_mark,
        )  # fmt: skip
    return loader.construct_yaml_int(node)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def parse_yaml(text: str, source: str) -> Any:
    """Parse recipe YAML safely; whatever is wrong becomes a :class:`RecipeError`.

    Beyond YAML syntax errors (reported with their line), the value must nest at most
    :data:`MAX_DEPTH` levels, hold at most :data:`MAX_VALUES` values with aliases expanded,
    have no alias inside itself, no integer over :data:`MAX_INT_CHARS` characters and no
    string that is not valid Unicode (a lone surrogate such as ``"\\ud800"``).
    """
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise _error(source, f"invalid YAML{where}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise _error(source, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise _error(source, f"invalid YAML: nested more than {MAX_DEPTH} levels deep") from None
    _measure(data, 0, {}, set(), source)
    return data


def _measure(
    node: Any, depth: int, seen: dict[int, tuple[int, int]], open_: set[int], source: str
) -> tuple[int, int]:
    """``(values, height)`` of ``node`` with aliases expanded; raises past the limits."""
    if depth > MAX_DEPTH:
        raise _error(source, f"nested more than {MAX_DEPTH} levels deep")
    if not isinstance(node, dict | list | tuple | set):
        _check_scalar(node, source)
        return 1, 0
    if id(node) in open_:
        raise _error(source, "a YAML alias refers to a value that holds it")
    if id(node) not in seen:
        open_.add(id(node))
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else list(node)
        parts = [_measure(child, depth + 1, seen, open_, source) for child in children]
        open_.discard(id(node))
        seen[id(node)] = (1 + sum(n for n, _ in parts), 1 + max((h for _, h in parts), default=0))
    values, height = seen[id(node)]
    if depth + height > MAX_DEPTH:
        raise _error(source, f"nested more than {MAX_DEPTH} levels deep")
    if values > MAX_VALUES:
        raise _error(source, f"more than {MAX_VALUES:,} values once YAML aliases are expanded")
    return values, height


def _check_scalar(value: Any, source: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(value[exc.start])
            raise _error(
                source, f"a string holds \\u{code:04x}, which is not valid Unicode"
            ) from None


# --------------------------------------------------------------------------- base: inheritance

ROOTS_ENV = "CHAINRAG_RECIPE_ROOTS"
"""More folders ``base:`` files may come from (separated by ``os.pathsep``)."""
SHIPPED_RECIPES = Path(__file__).resolve().parents[2] / "recipes"
"""The repository's own ``recipes/`` folder (when chainrag runs from a checkout)."""
MAX_BASE_DEPTH = 32
"""A ``base:`` chain is at most this many files long."""


def merge(base: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``child`` over ``base``: mappings merge, anything else replaces.

    A ``null`` replaces too, so it means what it means in a recipe without ``base:``
    (structuring reads it: a component set to null is none, a mapping entry set to null is
    no entry; a key that cannot be null is an error). Deleting the key instead would bring
    back its default — ``summarizer: null`` over a base that names one would summarize.
    Two mappings whose ``kind`` differ are different components: the child's replaces the
    base's whole, so parameters of the old kind do not leak into the new one.
    """
    out = dict(base)
    for key, value in child.items():
        old = out.get(key)
        if (
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


def recipe_tree(recipe: Path) -> Path:
    """The tree a recipe file's ``base:`` files must stay in (``recipe`` resolved already).

    That is the nearest folder above the file named ``recipes`` (so that
    ``recipes/ablations/k1.yaml`` may extend ``../chainrag/ansint.yaml``), else its own folder.
    """
    return next((parent for parent in recipe.parents if parent.name == "recipes"), recipe.parent)


def recipe_roots(recipe: Path, extra: Iterable[str | Path] = ()) -> tuple[Path, ...]:
    """Every folder ``base:`` files may come from for a top recipe file ``recipe`` (resolved):
    its :func:`recipe_tree`, the folders in ``extra`` and in ``$CHAINRAG_RECIPE_ROOTS``, and
    the repository's own ``recipes/`` folder."""
    listed = [*extra, *(p for p in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if p)]
    roots = [recipe_tree(recipe), *(_real(Path(p), ROOTS_ENV) for p in listed)]
    if SHIPPED_RECIPES.is_dir():
        roots.append(SHIPPED_RECIPES)
    return tuple(dict.fromkeys(roots))


def _real(path: Path, where: str, source: str | None = None, shown: str = "") -> Path:
    """``path`` resolved (symlinks followed); a path the system refuses is a RecipeError
    (naming the path as ``shown``, by default ``path``)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # too long, a symlink loop, a NUL
        raise _unusable(shown or str(path), exc, where, source) from None


def _unusable(shown: str, exc: Exception, where: str, source: str | None) -> RecipeError:
    reason = getattr(exc, "strerror", None) or str(exc)
    return _error(where, f"unusable path {describe(shown)}: {reason}", source)


def resolve(path: str | Path, roots: Iterable[str | Path] = ()) -> dict[str, Any]:
    """Read a recipe file and everything it extends into one mapping (not yet structured).

    Each file is read once however often the chain names it. ``base:`` files must lie inside
    :func:`recipe_roots` (the recipe's tree, ``roots``, ``$CHAINRAG_RECIPE_ROOTS``, the
    repository's ``recipes/``); a base elsewhere is an error that does not read the file.
    """
    top, label = Path(path), str(path)
    resolver = _Resolver(recipe_roots(_real(top, label), roots))
    return resolver.read(top, label, ())


@attrs.define
class _Resolver:
    """Resolves one recipe's ``base:`` chain, reading each file once (by its real path)."""

    roots: tuple[Path, ...]
    done: dict[Path, dict[str, Any]] = attrs.field(factory=dict)

    def read(self, path: Path, label: str, chain: tuple[Path, ...]) -> dict[str, Any]:
        real = _real(path, label)
        if real in chain:
            cycle = " -> ".join(str(p) for p in (*chain, real))
            raise _error(f"{label}.base", f"base cycle: {cycle}", label)
        if len(chain) > MAX_BASE_DEPTH:
            raise _error(f"{label}.base", f"base chain longer than {MAX_BASE_DEPTH} files", label)
        if real not in self.done:
            self.done[real] = self._resolve(path, label, (*chain, real))
        return self.done[real]

    def _resolve(self, path: Path, label: str, chain: tuple[Path, ...]) -> dict[str, Any]:
        data = _read_mapping(path, label)
        bases = data.get("base", [])
        merged: dict[str, Any] = {}
        for i, base in enumerate(_base_list(bases, label)):
            where = f"{label}.base" if isinstance(bases, str) else f"{label}.base[{i}]"
            base_path = self._base_path(path.parent, base, where, label)
            parent = self.read(base_path, str(base_path), chain)
            merged = merge(merged, {k: v for k, v in parent.items() if k != "name"})
        resolved = merge(merged, {k: v for k, v in data.items() if k != "base"})
        resolved.setdefault("name", path.stem)
        return resolved

    def _base_path(self, folder: Path, base: str, where: str, label: str) -> Path:
        """``folder / base`` once it is known to be a file inside the allowed roots."""
        base_path = folder / base
        real = _real(base_path, where, label, shown=base)
        if not any(real.is_relative_to(root) for root in self.roots):
            roots = ", ".join(map(str, self.roots))
            raise _error(
                where,
                f"base recipe {describe(base)} is outside the recipe tree and the allowed "
                f"roots ({roots}); add its folder to ${ROOTS_ENV} to allow it",
                label,
            )
        if not _is_file(base_path, where, label, shown=base):
            raise _error(where, f"base recipe not found: {base_path}", label)
        return base_path


def _base_list(bases: Any, label: str) -> list[str]:
    bases = [bases] if isinstance(bases, str) else bases
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise _error(f"{label}.base", "expected a path or a list of paths", label)
    return bases


def _is_file(path: Path, where: str, source: str, shown: str = "") -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise _unusable(shown or str(path), exc, where, source) from None


def _read_mapping(path: Path, label: str) -> dict[str, Any]:
    """One recipe file parsed: a mapping, or a RecipeError that never quotes the file."""
    if not _is_file(path, label, label):
        raise _error(label, "recipe file not found")
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _error(label, f"cannot read the recipe file: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise _error(label, f"recipe file larger than {MAX_BYTES // 1024} KiB")
    data = parse_yaml(_decode(raw, label), label)
    if not isinstance(data, dict):
        raise _error(label, f"expected a mapping at the top, got {type_name(data)}")
    return data


def _decode(raw: bytes, label: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _error(
            label, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} (save as UTF-8)"
        ) from None


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
