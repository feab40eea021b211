from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chainrag.components.reasoning.rewrite_triggers import PronounWords
from chainrag.core.errors import RecipeError
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.recipes.recipe import (
    LLMSpec,
    Recipe,
    dump_recipe,
    load_recipe,
    merge,
    parse_yaml,
    resolve,
    structure,
)

ROOT = Path(__file__).resolve().parents[1]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def messages(exc: pytest.ExceptionInfo[RecipeError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


def test_float_for_int_is_reported_with_its_path(tmp_path: Path) -> None:
    path = write(
        tmp_path, "x.yaml", "index:\n  splitter: null\n  chunker: {kind: word_chunks, size: 7.9}\n"
    )
    with pytest.raises(RecipeError, match=re.escape("expected an integer, got 7.9 @ ")) as exc:
        load_recipe(path)
    assert messages(exc) == [f"expected an integer, got 7.9 @ {path}.index.chunker.size"]


def test_every_problem_in_a_file_is_collected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "x.yaml",
        """
llm: {kind: litellm, model: openai/gpt-4o-mini, temperature: hot, max_tokens: 7.9, seeds: 1}
index:
  chunker: {kind: word_chunk}
retrieval:
  seed: {kind: dense_rerankr}
  edge_weights: {sa: "1"}
extra: 1
""",
    )
    with pytest.raises(RecipeError, match=r"x\.yaml: 7 problems") as exc:
        load_recipe(path)
    p = str(path)
    assert messages(exc) == [
        f"expected a number, got 'hot' @ {p}.llm.temperature",
        f"expected an integer, got 7.9 @ {p}.llm.max_tokens",
        "unknown key 'seeds'; did you mean 'seed'? (known keys: api_base, api_key_env, "
        "concurrency, json_mode, kind, max_retries, max_tokens, model, n_ctx, params, "
        "prompt_cache, requests_per_minute, seed, temperature, timeout_s, tokens_per_minute) "
        f"@ {p}.llm.seeds",
        "unknown chunker 'word_chunk'. Did you mean 'word_chunks'? Known: passages, "
        f"sentence_chunks, titled_passages, word_chunks @ {p}.index.chunker.kind",
        f"unknown seed_retriever 'dense_rerankr'. Did you mean 'dense_rerank'? Known: "
        f"dense_rerank, hipporag @ {p}.retrieval.seed.kind",
        f"expected a number, got '1' @ {p}.retrieval.edge_weights.sa",
        "unknown key 'extra' (known keys: description, index, llm, method, name, plugins, "
        f"retrieval) @ {p}.extra",
    ]


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("description: 5", "expected a string, got 5 @ r.description"),
        ("description: no", None),  # YAML 1.2: `no` is the string 'no'
        ("llm: {concurrency: true}", "expected an integer, got True @ r.llm.concurrency"),
        ("llm: {temperature: 1}", None),  # an integer is a fine float
        ("llm: {seed: null}", None),
        (
            "llm: {kind: local}",
            "expected one of 'local_gguf', 'litellm', got 'local'; "
            "did you mean 'local_gguf'? @ r.llm.kind",
        ),
        ("llm: {max_tokens: 0}", "'max_tokens' must be >= 1: 0 @ r.llm"),
        (
            "llm: {model: gpt-4o}",
            "local_gguf model 'gpt-4o' is not one of qwen2.5-coder-1.5b, "
            "qwen2.5-coder-0.5b (for any other model use kind: litellm) @ r.llm",
        ),
        (
            "plugins: tests.chainrag_toy_plugin",
            "expected a list, got 'tests.chainrag_toy_plugin' @ r.plugins",
        ),
        ("llm: [1]", "expected a mapping, got a list @ r.llm"),
        (
            "index: {edges: {sa: {kind: structural_adjacency}}}",
            "edges need a sentence splitter: set index.splitter @ r.index",
        ),
        (
            "index: {chunker: {kind: word_chunks, size: 3, overlap: 3}}",
            "'overlap' must be in [0, size), got 3 @ r.index.chunker",
        ),
        (
            "index: {edges: {sa: 3}}",
            "expected an edge_builder as a mapping {kind: ...}, got 3 @ r.index.edges.sa",
        ),
        (
            "index: {edges: {sa: {window: 3}}}",
            "missing 'kind': which edge_builder (known: entity_cooccurrence, similarity_topk, "
            "structural_adjacency) @ r.index.edges.sa.kind",
        ),
        ("method: {kind: 3}", "expected a string, got 3 @ r.method.kind"),
    ],
)
def test_strict_values(yaml_text: str, message: str | None) -> None:
    data = {"name": "r", **parse_yaml(yaml_text, "r")}
    if message is None:
        structure(data, "r")
        return
    with pytest.raises(RecipeError) as exc:
        structure(data, "r")
    assert messages(exc) == [message]


def test_missing_name_is_required_in_plain_data() -> None:
    with pytest.raises(RecipeError) as exc:
        structure({}, "r")
    assert messages(exc) == ["required key missing @ r.name"]


@pytest.mark.parametrize("value", [[], 5, None, "x", 1.5, True])
def test_top_level_must_be_a_mapping(value: object) -> None:
    with pytest.raises(RecipeError, match=r"expected a mapping at the top, got .* @ r$"):
        structure(value, "r")


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "llm: {kind: [\n")
    with pytest.raises(RecipeError, match=r"invalid YAML at line \d+, column \d+"):
        load_recipe(path)


def test_duplicate_keys_are_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "description: a\ndescription: b\n")
    with pytest.raises(RecipeError, match=r"duplicate key 'description' \(line 2\)"):
        load_recipe(path)


def test_yaml_booleans_are_only_true_and_false() -> None:
    assert parse_yaml("[yes, no, on, off, y, n, true, False]", "r") == [
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        True,
        False,
    ]


def test_python_tags_are_refused() -> None:
    with pytest.raises(RecipeError, match="invalid YAML"):
        parse_yaml("!!python/object/apply:os.system ['true']", "r")


# --------------------------------------------------------------------------- base


def test_base_merges_mappings_and_replaces_lists(tmp_path: Path) -> None:
    write(
        tmp_path,
        "base.yaml",
        "description: base\nplugins: [a_plugin]\n"
        "llm: {kind: litellm, model: openai/gpt-4o-mini, temperature: 0.5}\n",
    )
    child = write(tmp_path, "child.yaml", "base: base.yaml\nplugins: []\nllm: {temperature: 0.0}\n")
    assert resolve(child) == {
        "name": "child",
        "description": "base",
        "plugins": [],
        "llm": {"kind": "litellm", "model": "openai/gpt-4o-mini", "temperature": 0.0},
    }


def test_name_is_not_inherited_and_null_replaces(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", "name: base\ndescription: x\n")
    child = write(tmp_path, "child.yaml", "base: base.yaml\ndescription: null\n")
    assert resolve(child) == {"name": "child", "description": None}
    with pytest.raises(RecipeError) as exc:
        load_recipe(child)
    assert messages(exc) == [f"expected a string, got null @ {child}.description"]


def test_null_means_none_with_or_without_a_base(tmp_path: Path) -> None:
    """A component set to null is none even where the base names one: deleting the key
    would bring back the field's default (the authors'-code recipe summarized so)."""
    write(tmp_path, "base.yaml", "method: {kind: chainrag, summarizer: {kind: llm}}\n")
    child = write(tmp_path, "child.yaml", "base: base.yaml\nmethod: {summarizer: null}\n")
    flat = write(tmp_path, "flat.yaml", "method: {kind: chainrag, summarizer: null}\n")
    for path in (child, flat):
        assert load_recipe(path).method.summarizer is None  # type: ignore[attr-defined]
    assert load_recipe(tmp_path / "base.yaml").method.summarizer is not None  # type: ignore[attr-defined]


def test_a_null_entry_drops_a_layer_and_a_null_mapping_is_empty(tmp_path: Path) -> None:
    base = "base: " + str(Path("recipes/chainrag/ansint.yaml").resolve()) + "\n"
    no_ec = write(tmp_path, "no_ec.yaml", base + "index: {edges: {ec: null}}\n"
                  "retrieval: {edge_weights: {ec: null}}\n")  # fmt: skip
    recipe = load_recipe(no_ec)
    assert sorted(recipe.index.edges) == ["sa", "ss"]
    assert sorted(recipe.retrieval.edge_weights) == ["sa", "ss"]
    none = write(tmp_path, "none.yaml", base + "index: {edges: null}\n"
                 "retrieval: {edge_weights: null, expander: null}\n")  # fmt: skip
    recipe = load_recipe(none)
    assert recipe.index.edges == {} and recipe.retrieval.edge_weights == {}


def test_a_new_kind_replaces_the_component_whole() -> None:
    base = {"seed": {"kind": "a", "k": 3, "reranker": {"kind": "none"}}}
    assert merge(base, {"seed": {"kind": "b"}}) == {"seed": {"kind": "b"}}
    assert merge(base, {"seed": {"k": 5}}) == {
        "seed": {"kind": "a", "k": 5, "reranker": {"kind": "none"}}
    }


def test_several_bases_apply_in_order(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "description: a\nllm: {temperature: 0.1}\n")
    write(tmp_path, "b.yaml", "description: b\n")
    child = write(tmp_path, "c.yaml", "base: [a.yaml, b.yaml]\n")
    assert resolve(child) == {"name": "c", "description": "b", "llm": {"temperature": 0.1}}


def test_base_cycle_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "base: b.yaml\n")
    write(tmp_path, "b.yaml", "base: a.yaml\n")
    with pytest.raises(RecipeError, match=r"base cycle: .*a\.yaml -> .*b\.yaml -> .*a\.yaml"):
        load_recipe(tmp_path / "a.yaml")


def test_missing_base_is_reported_with_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "base: [nope.yaml]\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    assert messages(exc) == [f"base recipe not found: {tmp_path / 'nope.yaml'} @ {path}.base[0]"]


def test_a_base_may_be_a_shipped_recipe_s_name_from_any_folder(tmp_path: Path) -> None:
    shipped = ROOT / "recipes" / "chainrag" / "ansint.yaml"
    path = write(tmp_path, "mine.yaml", "base: [chainrag/ansint, llms/gpt-4o-mini]\n")
    recipe, full = load_recipe(path), load_recipe(shipped)
    assert recipe.name == "mine" and recipe.llm.model == "openai/gpt-4o-mini"
    parts = (recipe.index, recipe.retrieval, recipe.method)
    assert parts == (full.index, full.retrieval, full.method)


def test_a_name_is_looked_up_in_the_recipe_s_own_tree_first(tmp_path: Path) -> None:
    (tmp_path / "recipes" / "chainrag").mkdir(parents=True)
    write(tmp_path / "recipes", "x.yaml", "base: chainrag/ansint\n")
    write(tmp_path / "recipes" / "chainrag", "ansint.yaml", "description: my own\n")
    assert load_recipe(tmp_path / "recipes" / "x.yaml").description == "my own"


def test_a_relative_path_without_the_suffix_still_names_its_file(tmp_path: Path) -> None:
    write(tmp_path, "common", "description: beside\n")
    assert load_recipe(write(tmp_path, "x.yaml", "base: common\n")).description == "beside"


def test_an_unknown_name_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "base: chainrag/ansnt\n")
    with pytest.raises(RecipeError, match=r"no recipe named 'chainrag/ansnt' in .*; did you "
                       r"mean base: chainrag/ansint\? @ .*x\.yaml\.base$"):  # fmt: skip
        load_recipe(path)


def test_a_name_never_leaves_its_root(tmp_path: Path) -> None:
    write(tmp_path, "outside.yaml", "description: outside\n")
    (tmp_path / "mine").mkdir()
    path = write(tmp_path / "mine", "x.yaml", "base: ../outside\n")
    with pytest.raises(RecipeError, match=r"no recipe named '\.\./outside'"):
        load_recipe(path)


def test_a_shipped_path_saved_elsewhere_suggests_the_name(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "base: [recipes/chainrag/ansint.yaml]\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    assert messages(exc) == [
        f"base recipe not found: {tmp_path / 'recipes/chainrag/ansint.yaml'}; did you mean "
        f"base: chainrag/ansint? @ {path}.base[0]"
    ]


@pytest.mark.parametrize(
    ("name", "problem"),
    [("", "is not a folder's name"), ("..", "is not a folder's name"),
     (".", "is not a folder's name"), ("../up", "contains '/'"),
     ("a\\b", f"contains {chr(92)!r}")],
)  # fmt: skip
def test_a_name_that_is_not_one_folder_is_refused(tmp_path: Path, name: str, problem: str) -> None:
    expected = re.escape(f"name {name!r} {problem}: ") + ".* stays inside --out-dir"
    with pytest.raises(RecipeError, match=expected):  # in the file
        load_recipe(write(tmp_path, "x.yaml", f"name: {json.dumps(name)}\n"))
    naive = ROOT / "recipes" / "baselines" / "naive.yaml"
    with pytest.raises(RecipeError, match=expected):  # or set on the command line
        load_changed(naive, parse_all([f"name={name}"]))


def test_missing_file() -> None:
    with pytest.raises(RecipeError, match=r"recipe file not found @ nowhere\.yaml$"):
        load_recipe("nowhere.yaml")


# --------------------------------------------------------------------------- dump


def test_dump_loads_back_equal(tmp_path: Path) -> None:
    recipe = Recipe(
        name="r",
        description="no",
        plugins=("tests.chainrag_toy_plugin",),
        llm=LLMSpec(kind="litellm", model="openai/gpt-4o-mini", temperature=0.2, seed=None),
    )
    path = write(tmp_path, "r.yaml", dump_recipe(recipe))
    assert load_recipe(path) == recipe


def test_plugins_make_components_available(tmp_path: Path) -> None:
    text = "plugins: [tests.chainrag_toy_plugin]\nindex: {chunker: {kind: word_chunks}}\n"
    recipe = load_recipe(write(tmp_path, "p.yaml", text))
    assert recipe.plugins == ("tests.chainrag_toy_plugin",)


def test_bad_plugin_is_reported_with_other_problems(tmp_path: Path) -> None:
    path = write(tmp_path, "p.yaml", "plugins: [no_such_plugin_module]\ndescription: 1\n")
    with pytest.raises(RecipeError) as exc:
        load_recipe(path)
    assert messages(exc) == [
        f"plugin module 'no_such_plugin_module' could not be imported: No module named "
        f"'no_such_plugin_module' @ {path}.plugins[0]",
        f"expected a string, got 1 @ {path}.description",
    ]


def test_component_defaults_are_explicit_in_the_dump() -> None:
    recipe = structure({"name": "r", "index": {"chunker": {"kind": "word_chunks"}}}, "r")
    assert "kind: word_chunks\n    size: 100\n    overlap: 0\n" in dump_recipe(recipe)
    assert PronounWords() == PronounWords(words=PronounWords().words)


def test_edge_weights_must_name_built_layers() -> None:
    from chainrag.components.index.edges import StructuralAdjacency
    from chainrag.recipes.recipe import IndexSpec, RetrievalSpec
    from tests.chainrag_toy_plugin import ToyPeriodSplitter

    index = IndexSpec(splitter=ToyPeriodSplitter(), edges={"sa": StructuralAdjacency()})
    seed: Any = object()  # no seed retriever is registered yet; the check does not read it
    with pytest.raises(
        ValueError,
        match=r"edge layers the index does not build: ec \(index.edges has: sa\)",
    ):
        Recipe(
            name="r", index=index, retrieval=RetrievalSpec(seed, edge_weights={"sa": 1, "ec": 1})
        )
