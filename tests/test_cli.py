from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app

from .conftest import ROOT

runner = CliRunner()


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("validate", "recipe", "components"):
        assert command in result.output


def test_command_lists_show_each_summary_unbroken() -> None:
    # Typer's rich help kept docstrings' hard line breaks in a group's command list, so wrapped
    # summaries broke mid-sentence; each summary is its docstring's first paragraph, one line.
    from chainrag.cli.main import experiment_app, models_app, recipe_app, train_app

    for group in (app, recipe_app, experiment_app, models_app, train_app):
        for info in group.registered_commands:
            assert info.short_help, info.name
            assert "\n" not in info.short_help, info.name
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "250"}, terminal_width=250)
    assert "one JSON line per question in a run directory. Run the same command" in result.output


def test_validate_shipped_recipes() -> None:
    result = runner.invoke(app, ["validate", str(ROOT / "recipes")])
    assert result.exit_code == 0, result.output
    assert "recipes valid" in result.output


def test_validate_broken_recipe_prints_every_problem_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("llm: {max_tokens: 7.9, temperature: hot}\nindex: {chunker: {kind: nope}}\n")
    good = tmp_path / "good.yaml"
    good.write_text("description: fine\n")
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    out = result.output
    assert f"expected an integer, got 7.9 @ {bad}.llm.max_tokens" in out
    assert f"expected a number, got 'hot' @ {bad}.llm.temperature" in out
    known = "passages, sentence_chunks, titled_passages, word_chunks"
    assert f"unknown chunker 'nope'. Known: {known} @ {bad}.index.chunker.kind" in out
    assert f"ok   {good} (good)" in out
    assert "1 of 2 recipes valid" in out


def test_validate_missing_path_exits_1(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 1
    assert "no such file or folder" in result.output


def test_validate_empty_folder_exits_1(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    assert "no recipe files found" in result.output


def test_recipe_show_prints_resolved_yaml(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("llm: {temperature: 0.7}\n")
    (tmp_path / "child.yaml").write_text("base: base.yaml\ndescription: child\n")
    result = runner.invoke(app, ["recipe", "show", str(tmp_path / "child.yaml")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("name: child\ndescription: child\n")
    assert "temperature: 0.7" in result.output
    assert "\nbase:" not in result.output


def test_recipe_show_broken_exits_1(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("llm: 3\n")
    result = runner.invoke(app, ["recipe", "show", str(tmp_path / "x.yaml")])
    assert result.exit_code == 1
    assert "expected a mapping, got 3" in result.output


def test_components_lists_every_stage_with_parameters() -> None:
    result = runner.invoke(app, ["components"])
    assert result.exit_code == 0
    assert "rewrite_trigger\n  pronoun_words:" in result.output
    assert "      window: int = 3" in result.output
    assert "method\n" in result.output


def test_components_json_and_stage_filter() -> None:
    result = runner.invoke(app, ["components", "--stage", "edge_builder", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert list(data) == ["edge_builder"]
    params = data["edge_builder"]["structural_adjacency"]["params"]
    assert {"name": "window", "type": "int", "default": 3} in params


def test_components_unknown_stage() -> None:
    result = runner.invoke(app, ["components", "--stage", "nope"])
    assert result.exit_code == 1
    assert "unknown stage 'nope'" in result.output


def test_fetch_bars_share_one_bar_per_kind_one_at_a_time() -> None:
    from chainrag.cli.models import fetch_bars

    with fetch_bars() as progress:
        progress("verifying toy.gguf", 4 << 20, 10 << 20)
        verifying = progress._bars["verifying"]
        assert (verifying.unit, verifying.unit_scale) == ("B", True)
        progress("part 1/3", 0, 3)
        progress("part 2/3", 1, 3)
        assert list(progress._bars) == ["part"] and verifying.disable  # closed
        part = progress._bars["part"]
        assert part.desc.startswith("part 2/3") and (part.n, part.total) == (1, 3)
        assert (part.unit, part.unit_scale, part.leave) == ("part", False, False)
    assert progress._bars == {}


def test_an_error_can_be_reported_without_the_fail_prefix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import typer

    from chainrag.cli.common import fail, reports_errors
    from chainrag.core.errors import ChainragError

    group = typer.Typer()

    @group.command()
    @reports_errors(prefix="")
    def go() -> None:
        raise ChainragError("x.yaml: expected a mapping, got 3")

    result = runner.invoke(group, [])
    assert (result.exit_code, result.output) == (1, "x.yaml: expected a mapping, got 3\n")
    assert fail("give exactly one", 2, prefix="").exit_code == 2
    assert capsys.readouterr().err == "give exactly one\n"


def test_validate_paths_gives_a_typed_result_per_file(tmp_path: Path) -> None:
    from chainrag.recipes.validation import FileCheck, check_file, validate_paths

    bad = tmp_path / "bad.yaml"
    bad.write_text("llm: {max_tokens: 7.9}\n")
    good = tmp_path / "good.yaml"
    good.write_text("description: fine\n")
    found = validate_paths([tmp_path, tmp_path / "nope.yaml"])
    assert found.missing == (tmp_path / "nope.yaml",)
    assert [(f.path, f.state) for f in found.files] == [(bad, "fail"), (good, "ok")]
    assert f"expected an integer, got 7.9 @ {bad}.llm.max_tokens" in found.files[0].error
    assert found.files[1] == FileCheck(good, "ok", "good")
    assert (found.failed, found.partial, found.ok) == (1, 0, False)
    assert found.summary() == "1 of 2 recipes valid; 1 paths missing"
    assert found.files[1].line() == f"ok   {good} (good)"
    assert found.files[0].line() == f"FAIL {found.files[0].error}"
    (tmp_path / "empty").mkdir()
    assert validate_paths([good]).ok and not validate_paths([tmp_path / "empty"]).ok
    assert check_file(good) == FileCheck(good, "ok", "good")


def test_catalogue_data_and_lines_describe_each_component() -> None:
    from chainrag.recipes.describe import UnknownStageError, catalogue, catalogue_data, entry_lines

    data = catalogue_data("edge_builder")
    assert list(data) == ["edge_builder"]
    params = data["edge_builder"]["structural_adjacency"]["params"]
    assert {"name": "window", "type": "int", "default": 3} in params
    [(stage, entries)] = catalogue("edge_builder")
    lines = entry_lines(entries)
    assert stage == "edge_builder" and "      window: int = 3" in lines
    assert lines[0].startswith(f"  {entries[0].key}: ")
    assert entry_lines([]) == ["  (none yet)"]
    with pytest.raises(UnknownStageError, match=r"^unknown stage 'nope'; stages: \w+, "):
        catalogue("nope")


def test_datasets_lists_every_name_and_prints_a_licence() -> None:
    result = runner.invoke(app, ["datasets"], env={"COLUMNS": "250"}, terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "| musique | questions | 100 questions |" in result.output
    assert "| 2wiki_hipporag_corpus | corpus | 6,119 passages |" in result.output
    assert "long:NAME" in result.output and "CC BY-SA 4.0" in result.output
    licence = runner.invoke(app, ["datasets", "--licence", "2wiki"])
    assert licence.exit_code == 0 and "Apache License" in licence.output
    unknown = runner.invoke(app, ["datasets", "--licence", "nq"])
    assert unknown.exit_code == 1 and "no named dataset or corpus 'nq'" in unknown.output
