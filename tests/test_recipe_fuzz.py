"""Nothing but a RecipeError ever escapes the recipe loader: not from arbitrary JSON-like
data, nor from mutated recipe files and arbitrary bytes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from chainrag.core.errors import RecipeError
from chainrag.recipes.recipe import Recipe, check_recipe, recipe_files, structure

from .conftest import ROOT

KEYS = [
    "name",
    "description",
    "plugins",
    "llm",
    "index",
    "retrieval",
    "method",
    "kind",
    "seed",
    "edges",
    "chunker",
    "size",
    "overlap",
    "window",
    "temperature",
    "edge_weights",
    "sa",
]
KINDS = ["word_chunks", "structural_adjacency", "none", "pronoun_words", "popularity", "x"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.sampled_from(KINDS),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=6), st.integers())
json_like = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=30,
)
recipe_like = st.fixed_dictionaries(
    {},
    optional={
        "name": json_like,
        "llm": json_like,
        "index": st.fixed_dictionaries(
            {}, optional={"chunker": json_like, "edges": json_like, "splitter": json_like}
        ),
        "retrieval": json_like,
        "method": json_like,
        "plugins": json_like,
    },
)


def _load(value: Any) -> None:
    try:
        recipe: Recipe | RecipeError = structure(value, "fuzz")
    except RecipeError as exc:
        recipe = exc
    if isinstance(recipe, RecipeError):
        assert recipe.problems, "a RecipeError always names at least one problem"
        assert all(p.path.startswith("fuzz") for p in recipe.problems)
    else:
        assert isinstance(recipe, Recipe)


@given(json_like)
def test_arbitrary_values_raise_only_recipe_errors(value: Any) -> None:
    _load(value)


@given(recipe_like)
def test_recipe_shaped_values_raise_only_recipe_errors(value: Any) -> None:
    _load(value)


# --------------------------------------------------------------------------- files

# Recipe files as a hostile user writes them: the repository's recipes and a few hand-made
# ones, mutated byte by byte and spliced with the inputs that once ended in a traceback
# (issue 19). The loader reads each from a copy of recipes/, so that ``base:`` chains resolve.
# CHAINRAG_FUZZ_EXAMPLES=20000 runs a longer search than the default bounded one.

FUZZ_EXAMPLES = int(os.environ.get("CHAINRAG_FUZZ_EXAMPLES", "300"))
NASTY: list[bytes] = [
    b"\xe9",
    b"\xff\xfe",
    b"\x00",
    b"\t",
    b"\r",
    b"\xef\xbb\xbf",
    b"[" * 1000,
    b"{a: " * 400,
    b"- " * 300,
    b"1" * 5000,
    b"0x" + b"f" * 5000,
    b"1:" * 200 + b"1",
    b"2020-02-30",
    b"9999-12-31T23:59:59-23:59",
    b"base: " + b"a" * 300 + b".yaml\n",
    b"base: /etc/passwd\n",
    b"base: ../../../../../../etc/passwd\n",
    b"base: [x.yaml, x.yaml]\n",
    b"base: .\n",
    b"base: ''\n",
    b'base: "a\\0b"\n',
    b"base: [null]\n",
    b"&a [*a]",
    b"&a {k: *a}",
    b"*undefined",
    b"<<: {a: 1}\n",
    b"!!python/object/apply:os.system ['true']",
    b"!!binary ???",
    b"!!set {a, b}",
    b"!!omap [a: 1]",
    b"!!float x",
    b"!!bool maybe",
    b"!!timestamp x",
    b"!!int ''",
    b"!!int _",
    b"!!float ''",
    b"!!map x",
    b'"\\ud800"',
    b"? [a]\n: b\n",
    b"? {a: 1}\n: b\n",
    b"null",
    b"~",
    b"unknown_key: null\n",
    b"edges: {zz: null}\n",
    b"plugins: [no_such_module_xyz.sub]\n",
    b"plugins: [os.path.nope]\n",
    b"plugins: ['a b']\n",
    b"kind: ",
    b"name: ",
    b": :",
    b"'",
    b'"',
    b"\n  ",
    b"---\n",
    b"...\n",
    b"%YAML 1.1\n",
    b".nan",
    b"-.inf",
    b"1e999",
    b"&x ",
    b"*x",
]
TAGS = ["bool", "int", "float", "timestamp", "binary", "null", "str", "map", "seq", "set", "omap",
        "pairs", "merge", "value", "python/none"]  # fmt: skip
ALIAS_BOMB = b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n".encode()
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
REPO_RECIPES = [p.read_bytes() for p in recipe_files([ROOT / "recipes"])]
SEEDS = [*REPO_RECIPES, b"", b"description: x\n", ALIAS_BOMB, b"llm: {kind: litellm, model: x}\n"]
EDITS = st.lists(  # (path of child indices, new value, delete instead)
    st.tuples(st.lists(st.integers(0, 9), min_size=1, max_size=5), json_like, st.booleans()),
    max_size=4,
)


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    """A seed recipe with up to six edits: inserts, deletions, replacements, splices."""
    data = draw(st.sampled_from(SEEDS))
    payloads = st.one_of(
        st.sampled_from(NASTY),
        st.binary(max_size=6),
        st.text(max_size=6).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.builds(lambda t, v: f"!!{t} {v}".encode(), st.sampled_from(TAGS), st.text(max_size=4)),
    )
    edits = draw(
        st.lists(
            st.tuples(st.sampled_from("idrl"), st.floats(0, 1), st.integers(0, 40), payloads),
            max_size=6,
        )
    )
    for op, where, length, payload in edits:
        at = int(where * len(data))
        if op == "l":  # a whole line, so that the rest of the file stays YAML
            at, payload = data.rfind(b"\n", 0, at) + 1, payload + b"\n"
        cut = at + length if op in "dr" else at
        data = data[:at] + (b"" if op == "d" else payload) + data[cut:]
    return data


@st.composite
def _edited(draw: st.DrawFn) -> bytes:
    """A seed recipe parsed, with up to four values replaced (by JSON-like values or null) or
    deleted at drawn paths, written back as YAML: reaches structuring, merging and ``base:``."""
    data = yaml.safe_load(draw(st.sampled_from(REPO_RECIPES)))
    for path, value, delete in draw(EDITS):
        data = _replace(data, path, value, delete)
    return yaml.safe_dump(data, allow_unicode=True).encode("utf-8")


def _replace(node: Any, path: list[int], value: Any, delete: bool) -> Any:
    """``node`` with the value at ``path`` (child indices, taken modulo) replaced or deleted."""
    if not path or not isinstance(node, dict | list) or not node:
        return value
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    key = keys[path[0] % len(keys)]
    out = dict(node) if isinstance(node, dict) else list(node)
    if delete and len(path) == 1:
        del out[key]
    else:
        out[key] = _replace(node[key], path[1:], value, delete)
    return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of recipes/ to write fuzzed files into (its bases resolve as in the repo)."""
    root = tmp_path_factory.mktemp("fuzz") / "recipes"
    shutil.copytree(ROOT / "recipes", root)
    return root


def _check_file(tree: Path, data: bytes) -> None:
    path = tree / "ablations" / "fuzzed.yaml"
    path.write_bytes(data)
    error: RecipeError | None = None
    try:
        check_recipe(path)  # plugins are not imported: fuzzed names must not run anything
    except RecipeError as exc:
        error = exc
    if error is not None:
        assert error.problems, "a RecipeError always names at least one problem"
        assert "root:x:0:0" not in str(error), "an error must not echo a file it may not read"
        str(error).encode("utf-8")  # printable


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(data=_mutated())
def test_mutated_recipe_files_raise_only_recipe_errors(tree: Path, data: bytes) -> None:
    _check_file(tree, data)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(data=_edited())
def test_edited_recipe_files_raise_only_recipe_errors(tree: Path, data: bytes) -> None:
    _check_file(tree, data)


@settings(max_examples=FUZZ_EXAMPLES // 3, deadline=None)
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_recipe_errors(tree: Path, data: bytes) -> None:
    _check_file(tree, data)


@pytest.mark.parametrize("snippet", NASTY, ids=lambda b: repr(b[:20]))
def test_each_nasty_snippet_alone_and_as_a_value(tree: Path, snippet: bytes) -> None:
    for data in (snippet, b"description: " + snippet, b"llm: {model: " + snippet + b"}\n"):
        _check_file(tree, data)
