"""One registry per stage; components register once, by decorator, under a snake_case key.

    @REWRITE_TRIGGERS.register("pronoun_words")
    @attrs.frozen
    class PronounWords: ...

Recipes name components by these keys (``{kind: pronoun_words}``), never by import path.
Third-party components arrive only through an explicit ``plugins:`` list in a recipe (module
names imported before the recipe is read) or through the entry-point group
``chainrag.components`` (each entry point names a module that registers on import).
Validation can check that a recipe's plugins exist without importing them (:func:`find_plugin`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any, Generic, TypeVar

import attrs

from chainrag import protocols as p
from chainrag.core.errors import PluginError, RegistryError, UnknownComponentError
from chainrag.protocols import phrases as ph

ENTRY_POINT_GROUP = "chainrag.components"
_KEY = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

P = TypeVar("P")
C = TypeVar("C", bound=type)


@attrs.frozen
class Entry:
    """A registered component: its stage, key, class and example parameters."""

    stage: str
    key: str
    cls: type
    example: Mapping[str, Any] | Callable[[], Mapping[str, Any]]

    def example_params(self) -> dict[str, Any]:
        """The example parameters (computed now when given as a function, e.g. a model path)."""
        return dict(self.example() if callable(self.example) else self.example)

    @property
    def summary(self) -> str:
        """First line of the class docstring."""
        doc = (self.cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


class Registry(Generic[P]):
    """Components of one stage, keyed by snake_case name.

    Args:
        stage: The stage's snake_case name, as used in messages (``rewrite_trigger``).
        protocol: The ``typing.Protocol`` every component of the stage implements.
    """

    def __init__(self, stage: str, protocol: Any) -> None:
        self.stage = stage
        self.protocol: type = protocol
        self._entries: dict[str, Entry] = {}

    def register(
        self,
        key: str,
        *,
        example: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
    ) -> Callable[[C], C]:
        """Class decorator registering a frozen attrs class under ``key``.

        Args:
            key: snake_case registry key, unique within the stage.
            example: Parameters the conformance tests build the component from (default: no
                parameters, i.e. every field has a default); a function returning them when
                they can only be known at run time (a local model path).
        """
        if not _KEY.match(key):
            raise RegistryError(
                f"{self.stage} key {key!r} is not snake_case (e.g. 'pronoun_words')"
            )

        def decorate(cls: C) -> C:
            is_attrs_class = attrs.has(cls)
            if not is_attrs_class or not _is_frozen(cls):
                raise RegistryError(
                    f"{self.stage} {key!r}: {cls.__qualname__} must be a frozen attrs class "
                    "(@attrs.frozen): a component is its parameters"
                )
            if key in self._entries:
                other = self._entries[key].cls
                raise RegistryError(
                    f"{self.stage} {key!r} is registered already, by "
                    f"{other.__module__}.{other.__qualname__}"
                )
            if cls in _BY_CLASS:
                stage, other_key = _BY_CLASS[cls]
                raise RegistryError(
                    f"{cls.__qualname__} is registered already as {stage} {other_key!r}"
                )
            self._entries[key] = Entry(self.stage, key, cls, example or {})
            _BY_CLASS[cls] = (self.stage, key)
            return cls

        return decorate

    def get(self, key: str) -> Entry:
        """The entry registered under ``key``; an unknown key says what was meant."""
        load_builtins()
        try:
            return self._entries[key]
        except KeyError:
            known = sorted(self._entries)
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            raise UnknownComponentError(
                self.stage, key, known, close[0] if close else None
            ) from None

    def build(self, key: str, **params: Any) -> P:
        """Build the component registered under ``key`` from keyword parameters."""
        obj: P = self.get(key).cls(**params)
        return obj

    def keys(self) -> tuple[str, ...]:
        load_builtins()
        return tuple(sorted(self._entries))

    def __iter__(self) -> Iterator[Entry]:
        load_builtins()
        return iter([self._entries[k] for k in sorted(self._entries)])

    def __contains__(self, key: object) -> bool:
        load_builtins()
        return key in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.stage!r}, {len(self._entries)} components)"


def _is_frozen(cls: type) -> bool:
    return getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"


_BY_CLASS: dict[type, tuple[str, str]] = {}

SENTENCE_SPLITTERS: Registry[p.SentenceSplitter] = Registry("sentence_splitter", p.SentenceSplitter)
CHUNKERS: Registry[p.Chunker] = Registry("chunker", p.Chunker)
NERS: Registry[p.NER] = Registry("ner", p.NER)
KEY_ENTITY_SCORERS: Registry[p.KeyEntityScorer] = Registry("key_entity_scorer", p.KeyEntityScorer)
EDGE_BUILDERS: Registry[p.EdgeBuilder] = Registry("edge_builder", p.EdgeBuilder)
EMBEDDERS: Registry[p.Embedder] = Registry("embedder", p.Embedder)
VECTOR_SEARCH: Registry[p.VectorSearch] = Registry("vector_search", p.VectorSearch)
SEED_RETRIEVERS: Registry[p.SeedRetriever] = Registry("seed_retriever", p.SeedRetriever)
RERANKERS: Registry[p.Reranker] = Registry("reranker", p.Reranker)
EXPANDERS: Registry[p.Expander] = Registry("expander", p.Expander)
SUFFICIENCY_JUDGES: Registry[p.SufficiencyJudge] = Registry("sufficiency_judge", p.SufficiencyJudge)
MULTI_HOP_JUDGES: Registry[p.MultiHopJudge] = Registry("multi_hop_judge", p.MultiHopJudge)
DECOMPOSERS: Registry[p.Decomposer] = Registry("decomposer", p.Decomposer)
REWRITE_TRIGGERS: Registry[p.RewriteTrigger] = Registry("rewrite_trigger", p.RewriteTrigger)
REWRITE_CONFIRMERS: Registry[p.RewriteConfirmer] = Registry("rewrite_confirmer", p.RewriteConfirmer)
REWRITERS: Registry[p.Rewriter] = Registry("rewriter", p.Rewriter)
SUMMARIZERS: Registry[p.Summarizer] = Registry("summarizer", p.Summarizer)
ANSWERERS: Registry[p.Answerer] = Registry("answerer", p.Answerer)
INTEGRATORS: Registry[p.Integrator] = Registry("integrator", p.Integrator)
FOLLOW_UP_WRITERS: Registry[p.FollowUpWriter] = Registry("follow_up_writer", p.FollowUpWriter)
QUERY_REWRITERS: Registry[p.QueryRewriter] = Registry("query_rewriter", p.QueryRewriter)
KNOWLEDGE_FILTERS: Registry[p.KnowledgeFilter] = Registry("knowledge_filter", p.KnowledgeFilter)
CACHE_TRIGGERS: Registry[p.CacheTrigger] = Registry("cache_trigger", p.CacheTrigger)
METHODS: Registry[p.Method] = Registry("method", p.Method)
OPEN_IE: Registry[ph.OpenIE] = Registry("open_ie", ph.OpenIE)
PHRASE_GRAPH_BUILDERS: Registry[ph.PhraseGraphBuilder] = Registry(
    "phrase_graph_builder", ph.PhraseGraphBuilder
)
ENTITY_LINKERS: Registry[ph.EntityLinker] = Registry("entity_linker", ph.EntityLinker)
PHRASE_RANKERS: Registry[ph.PhraseRanker] = Registry("phrase_ranker", ph.PhraseRanker)

REGISTRIES: tuple[Registry[Any], ...] = (
    SENTENCE_SPLITTERS,
    CHUNKERS,
    NERS,
    KEY_ENTITY_SCORERS,
    EDGE_BUILDERS,
    EMBEDDERS,
    VECTOR_SEARCH,
    SEED_RETRIEVERS,
    RERANKERS,
    EXPANDERS,
    SUFFICIENCY_JUDGES,
    MULTI_HOP_JUDGES,
    DECOMPOSERS,
    REWRITE_TRIGGERS,
    REWRITE_CONFIRMERS,
    REWRITERS,
    SUMMARIZERS,
    ANSWERERS,
    INTEGRATORS,
    FOLLOW_UP_WRITERS,
    QUERY_REWRITERS,
    KNOWLEDGE_FILTERS,
    CACHE_TRIGGERS,
    OPEN_IE,
    PHRASE_GRAPH_BUILDERS,
    ENTITY_LINKERS,
    PHRASE_RANKERS,
    METHODS,
)
"""Every stage registry, in pipeline order. The LLM is not here: a recipe's ``llm:`` is an
:class:`~chainrag.recipes.recipe.LLMSpec`, and backends implement
:class:`~chainrag.protocols.LLM`."""


def registered_key(cls: type) -> tuple[str, str] | None:
    """``(stage, key)`` of a registered component class, else None."""
    return _BY_CLASS.get(cls)


def kind_of(component: object) -> str:
    """The key ``component``'s class is registered under (``ans_int``), else the class's name."""
    found = registered_key(type(component))
    return found[1] if found else type(component).__name__


_loaded = {"builtins": False, "entry_points": False}


def load_builtins() -> None:
    """Import the built-in components and the installed entry-point plugins (once)."""
    if not _loaded["builtins"]:
        _loaded["builtins"] = True
        importlib.import_module("chainrag.components")
        importlib.import_module("chainrag.methods")
    if not _loaded["entry_points"]:
        _loaded["entry_points"] = True
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                ep.load()
            except Exception as exc:  # a broken third-party plugin must say which one
                raise PluginError(
                    f"entry point {ep.name!r} ({ep.value}) in group {ENTRY_POINT_GROUP!r} "
                    f"failed to load: {type(exc).__name__}: {exc}"
                ) from exc


def check_plugin_name(module: str) -> None:
    """Raise :class:`PluginError` unless ``module`` is a dotted module name."""
    if not _MODULE.match(module):
        raise PluginError(f"plugin {module!r} is not a module name (e.g. 'my_pkg.components')")


def load_plugin(module: str) -> None:
    """Import a plugin module named in a recipe's ``plugins:`` list so it registers.

    Whatever the import raises (``ImportError``, but also a ``SyntaxError`` in the module, a
    ``RuntimeError`` or a ``SystemExit`` from its top level) becomes a :class:`PluginError`
    naming the module.
    """
    check_plugin_name(module)
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise PluginError(f"plugin module {module!r} could not be imported: {exc}") from exc
    except (Exception, SystemExit) as exc:
        raise PluginError(
            f"plugin module {module!r} failed while being imported: {type(exc).__name__}: {exc}"
        ) from exc


def find_plugin(module: str) -> None:
    """Check that a plugin module exists without importing it (nor its parent packages).

    ``importlib.util.find_spec("a.b")`` would import ``a`` and run its ``__init__``; this asks
    the import system's finders for each part in turn instead, so no code the recipe names runs.

    Raises:
        PluginError: ``module`` is not a module name, or no finder locates it.
    """
    check_plugin_name(module)
    parts = module.split(".")
    search: Any = None
    for depth in range(1, len(parts) + 1):
        name, parent = ".".join(parts[:depth]), ".".join(parts[: depth - 1])
        if depth > 1 and search is None and name not in sys.modules:  # os.path is, os is not
            raise PluginError(f"plugin module {module!r} not found ({parent!r} is not a package)")
        spec = _spec(name, search)
        if spec is None:
            raise PluginError(f"plugin module {module!r} not found (no module named {name!r})")
        search = spec.submodule_search_locations


def _spec(name: str, search: Any) -> Any:
    """The module spec the import system would use for ``name``, found without importing."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return SimpleNamespace(submodule_search_locations=getattr(loaded, "__path__", None))
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        try:
            spec = find(name, search) if find is not None else None
        except Exception:  # a finder's own trouble with an odd name: not found by that one
            spec = None
        if spec is not None:
            return spec
    return None
