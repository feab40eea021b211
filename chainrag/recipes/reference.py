"""The recipe file documented in full, from the code: ``docs/recipes.md``.

    text = reference_markdown()     # what scripts/recipe_reference.py writes to docs/recipes.md

Every section and field of a recipe with its type, default and meaning, read from the attrs
classes that load it (:class:`~chainrag.recipes.recipe.Recipe` and its sections), then every
registered component per stage with its parameters (as ``chainrag components`` lists them), so
the reference cannot drift from what a recipe accepts (tests/test_recipe_reference.py
regenerates it and compares).
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import textwrap
import typing
from typing import Any

import attrs

from chainrag.recipes.describe import REQUIRED, catalogue, params, type_name
from chainrag.recipes.recipe import IndexSpec, LLMSpec, Recipe, RetrievalSpec
from chainrag.recipes.structure import to_plain, unstructure

INTRO = """\
# Recipe reference

A recipe is a YAML file that says everything an experiment does: which LLM answers, how a
context is indexed, how evidence is retrieved, and which method runs. Its fully resolved form
is saved next to every result (`recipe.yaml` in the run folder), and `chainrag recipe show
FILE` prints it. This page is generated from the code (`scripts/recipe_reference.py`); the
user guide explains the concepts ([guide.md](guide.md)).

```yaml
base: ../base.yaml                 # or a list; later entries override earlier ones
name: ansint                       # names the run folder: OUT/DATASET/NAME
description: ChainRAG with AnsInt and CxtInt.
llm: {kind: local_gguf, model: qwen2.5-coder-1.5b, temperature: 0.2}
index:
  splitter: {kind: spacy}
  ner: {kind: spacy}
  key_entities: {kind: bm25, alpha: 60}
  edges:
    ec: {kind: entity_cooccurrence}
    ss: {kind: similarity_topk, m: 10}
    sa: {kind: structural_adjacency, window: 3}
  embedder: {kind: flag_model}
retrieval:
  seed: {kind: dense_rerank, k: 3}
  expander: {kind: iterative_hops, judge: {kind: llm_yes_no}}
method: {kind: chainrag}
```

**Rules.** Every key is checked when the recipe loads: an unknown key, a wrong type or an
impossible combination is an error naming the file and the path to the field
(`ansint.yaml.retrieval.seed.k`). A `base:` is a path relative to the file that names it, or
a recipe's name without `.yaml` (`base: chainrag/ansint`, looked up in the file's `recipes/`
tree, `$CHAINRAG_RECIPE_ROOTS` and chainrag's own `recipes/`, so it works from any folder); a
mapping in the file is merged into its base's key by key, anything else replaces it. `name`
names the run's folder: not empty, no `/` or `\\`, not `.` or `..`. A
component is a mapping with `kind:` (its registered name) and its parameters; a parameter left
out takes its default. `plugins:` lists Python modules imported before the recipe is read,
which may register components of their own (running a recipe runs their code).
"""


def _default(field: attrs.Attribute[Any]) -> str:
    if field.default is attrs.NOTHING:
        return REQUIRED
    default = field.default
    if isinstance(default, type(attrs.Factory(list))):
        default = typing.cast(Any, default).factory()
    return json.dumps(to_plain(unstructure(default)))


def section_table(cls: type) -> list[str]:
    """A markdown table of an attrs section class's fields: name, type, default."""
    hints = typing.get_type_hints(cls)
    lines = ["| field | type | default |", "|---|---|---|"]
    for f in attrs.fields(cls):
        shown = type_name(hints[f.name]).replace("|", "\\|")
        lines.append(f"| `{f.name}` | `{shown}` | `{_default(f)}` |")
    return lines


ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")


def as_markdown(text: str) -> str:
    """A docstring's reST as markdown: ``code`` to `code`, :role:`~a.b.c` to `c`."""
    text = ROLE.sub(lambda m: f"`{m.group(2).split('.')[-1] if m.group(1) else m.group(2)}`", text)
    return text.replace("``", "`")


def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a component class (``name: int = 1`` then
    ``\"\"\"What it is.\"\"\"``), by field name; empty where the source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    found: dict[str, str] = {}
    for field, after in itertools.pairwise(body):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):  # fmt: skip
            found[field.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return found


def _doc(cls: type) -> str:
    return as_markdown(inspect.cleandoc(cls.__doc__ or "").strip())


SECTIONS = (
    ("The recipe", Recipe, "The top level."),
    ("`llm:`", LLMSpec, ""),
    ("`index:`", IndexSpec, ""),
    ("`retrieval:`", RetrievalSpec, ""),
)
WHERE = {
    "sentence_splitter": "`index.splitter`",
    "chunker": "`index.chunker`",
    "ner": "`index.ner`",
    "key_entity_scorer": "`index.key_entities`",
    "edge_builder": "`index.edges.NAME` (`ec`, `ss`, `sa`)",
    "embedder": "`index.embedder` (and inside components that embed)",
    "vector_search": "`search:` of the SS edge builder and of dense seed retrieval",
    "seed_retriever": "`retrieval.seed`",
    "reranker": "`reranker:` of a seed retriever",
    "expander": "`retrieval.expander`",
    "method": "`method`",
    "open_ie": "`open_ie:` of the `hipporag` seed retriever",
    "phrase_graph_builder": "`graph:` of the `hipporag` seed retriever",
    "entity_linker": "`linker:` of the `hipporag` seed retriever",
    "phrase_ranker": "`ranker:` of the `hipporag` seed retriever",
}


def reference_markdown() -> str:
    """The whole reference page (ends with a newline)."""
    out = [INTRO]
    for title, cls, note in SECTIONS:
        out += [f"## {title}", "", note or _doc(cls), "", *section_table(cls), ""]
    out += [
        "## Components, stage by stage",
        "",
        "Each stage's registered components (`kind:`) with their parameters, types and defaults "
        "(`chainrag components` prints the same; plugins add their own). A stage not placed at "
        "the top level of a recipe is a field of a method or of another component, named there.",
        "",
    ]
    for stage, entries in catalogue():
        where = WHERE.get(stage, "a field of a method or component")
        out += [f"### {stage}", "", f"Where: {where}.", ""]
        for entry in entries:
            out += [f"**`{entry.key}`** — {as_markdown(entry.summary)}", ""]
            out += _params_table(entry.cls)
    return "\n".join(out).rstrip() + "\n"


def _params_table(cls: type) -> list[str]:
    """A component's parameters as a markdown table, with a column of what each means where
    its class documents its fields."""
    rows = params(cls)
    if not rows:
        return []
    names = {p.name for p in rows}
    docs = {name: doc for name, doc in field_docs(cls).items() if name in names}
    head = ["| parameter | type | default |", "|---|---|---|"]
    if docs:
        head = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    lines = list(head)
    for p in rows:
        shown = p.default if p.default == REQUIRED else json.dumps(p.default)
        kind = p.type.replace("|", "\\|")
        said = as_markdown(docs.get(p.name, "")).replace("|", "\\|")
        lines.append(f"| `{p.name}` | `{kind}` | `{shown}` |" + (f" {said} |" if docs else ""))
    return [*lines, ""]
