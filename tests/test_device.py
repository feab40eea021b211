"""``device: auto | cpu | cuda`` for the encoders (chainrag/core/device.py): resolved on this
machine, refused where it cannot be, left out of digests and cache keys, recorded in run.json
and the corpus index manifest. This machine has no GPU: the plumbing is tested here, the
vectors on a GPU are measured by bench/encoders_device.py (docs/benchmarks.md)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from chainrag.components.index.embedders import FlagModelEmbedder
from chainrag.components.knowledge.knowledge import NLICrossEncoderFilter
from chainrag.components.retrieval.rerankers import CrossEncoderReranker, FlagRerankerComponent
from chainrag.core import device
from chainrag.core.context import Context
from chainrag.core.errors import RecipeError
from chainrag.core.types import Passage
from chainrag.index.build import IndexCache
from chainrag.index.corpus.build import index_digest, same_index
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.recipes.recipe import IndexSpec, dump_recipe, load_recipe
from chainrag.recipes.structure import identity, unstructure
from chainrag.run.folder import RunDir, device_change
from chainrag.run.meta import Session, recipe_digest

from .conftest import ROOT

NAIVE = ROOT / "recipes" / "baselines" / "naive.yaml"


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where torch sees a GPU (nothing is computed on it in these tests)."""
    monkeypatch.setattr(device, "cuda_available", lambda: True)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "cuda_available", lambda: False)


def with_device(spec: IndexSpec, where: device.Device) -> IndexSpec:
    assert isinstance(spec.embedder, FlagModelEmbedder)
    return attrs.evolve(spec, embedder=attrs.evolve(spec.embedder, device=where))


def naive_index() -> IndexSpec:
    spec = load_recipe(NAIVE).index
    assert spec is not None and isinstance(spec.embedder, FlagModelEmbedder)
    return spec


def test_auto_is_the_gpu_when_there_is_one_and_cpu_stays_cpu(gpu: None) -> None:
    assert device.resolve("auto", "x") == "cuda"
    assert device.resolve("cuda", "x") == "cuda"
    assert device.resolve("cpu", "x") == "cpu"


def test_without_a_gpu_auto_is_the_cpu_and_cuda_is_an_error_naming_the_component(
    no_gpu: None,
) -> None:
    assert device.resolve("auto", "x") == "cpu"
    with pytest.raises(device.DeviceError, match="the flag_model embedder has device: cuda"):
        FlagModelEmbedder(device="cuda")._model(Context())
    with pytest.raises(device.DeviceError, match="cross_encoder component has device: cuda"):
        CrossEncoderReranker("/nowhere", device="cuda").scores([["q", "t"]], Context())


def test_this_machine_without_a_gpu_is_answered_without_importing_torch() -> None:
    """Where no GPU device file exists (CI, this machine), ``auto`` needs no torch."""
    import subprocess
    import sys

    code = (
        "import sys; from chainrag.core import device; "
        "print(device.resolve('auto', 'x'), 'torch' in sys.modules)"
    )
    if any(Path(p).exists() for p in device._GPU_FILES):
        pytest.skip("this machine shows a GPU device file")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["cpu", "False"]


def test_every_encoder_takes_a_device_from_the_recipe_and_the_command_line() -> None:
    recipe = load_changed(NAIVE, parse_all(["index.embedder.device=cuda"]))
    assert recipe.index is not None and recipe.index.embedder.device == "cuda"  # type: ignore[union-attr]
    for cls in (FlagRerankerComponent, CrossEncoderReranker, NLICrossEncoderFilter):
        assert cls("/m").device == "auto"
    with pytest.raises(RecipeError) as caught:
        load_changed(NAIVE, parse_all(["index.embedder.device=gpu"]))
    assert "index.embedder.device" in str(caught.value)
    assert "expected one of 'auto', 'cpu', 'cuda', got 'gpu'" in str(caught.value)


def test_the_device_is_in_the_dumped_recipe_but_not_in_digests_or_index_keys(gpu: None) -> None:
    recipe = load_recipe(NAIVE)
    spec = naive_index()
    on_cuda = attrs.evolve(recipe, index=with_device(spec, "cuda"))
    assert "device: auto" in dump_recipe(recipe)
    assert "device: cuda" in dump_recipe(on_cuda)
    assert "device" not in dump_recipe(recipe, placement=False)
    assert recipe_digest(on_cuda) == recipe_digest(recipe)
    assert index_digest(with_device(spec, "cpu")) == index_digest(spec)
    assert same_index(unstructure(with_device(spec, "cpu")), spec)
    assert identity(spec.embedder) == {
        k: v for k, v in unstructure(spec.embedder).items() if k != "device"
    }


def test_vectors_made_on_a_gpu_are_cached_apart_from_the_cpus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec, passages = naive_index(), [Passage("p", "T", "Text.")]
    cache = IndexCache(tmp_path)
    monkeypatch.setattr(device, "cuda_available", lambda: False)
    on_cpu = {cache.path_for(passages, with_device(spec, d)) for d in ("auto", "cpu")}
    monkeypatch.setattr(device, "cuda_available", lambda: True)
    assert cache.path_for(passages, with_device(spec, "cpu")) in on_cpu
    assert len(on_cpu) == 1
    assert cache.path_for(passages, with_device(spec, "auto")) not in on_cpu
    assert device.cache_devices(spec) == ["embedder=cuda"]


def test_run_json_records_where_each_encoder_ran_and_a_resume_elsewhere_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chainrag.data.datasets import dataset_path
    from chainrag.run.jobs import RunOptions, run_into

    recipe = load_recipe(NAIVE)
    folder = tmp_path / "run"
    monkeypatch.setattr(device, "cuda_available", lambda: False)
    run_into(recipe, NAIVE, folder, "2wiki", [], ScriptedLLM({}), RunOptions(slots=1))
    session = json.loads((folder / "run.json").read_text())["sessions"][0]
    assert session["devices"] == {"index.embedder": "cpu"}
    said: list[str] = []
    monkeypatch.setattr(device, "cuda_available", lambda: True)
    file, _ = dataset_path("2wiki")
    meta = RunDir(folder).start(recipe, NAIVE, "2wiki", file, prompt_cache="aligned",
                                say=said.append)  # fmt: skip
    assert [dict(s.devices) for s in meta.sessions] == [
        {"index.embedder": "cpu"},
        {"index.embedder": "cuda"},
    ]
    assert len(said) == 1 and "index.embedder: cpu then, cuda now" in said[0]


def test_a_device_change_is_said_only_when_both_are_known() -> None:
    before = Session.now(devices={"index.embedder": "cpu"})
    assert device_change(Path("r"), [before], {"index.embedder": "cpu"}) == ""
    assert device_change(Path("r"), [Session.now()], {"index.embedder": "cuda"}) == ""
    assert device_change(Path("r"), [before], {}) == ""
    assert "cpu then, cuda now" in device_change(Path("r"), [before], {"index.embedder": "cuda"})


def test_a_run_asking_for_cuda_without_one_stops_before_any_question(
    tmp_path: Path, no_gpu: None
) -> None:
    from chainrag.run.jobs import RunOptions, run_into

    recipe = load_changed(NAIVE, parse_all(["index.embedder.device=cuda"]))
    with pytest.raises(device.DeviceError, match=r"index\.embedder has device: cuda"):
        run_into(recipe, NAIVE, tmp_path / "r", "2wiki", [], ScriptedLLM({}), RunOptions(slots=1))
    assert not (tmp_path / "r" / "run.json").exists()


def test_the_corpus_index_manifest_records_its_encoders_devices(
    tmp_path: Path, no_gpu: None
) -> None:
    from .test_corpus_index import build, corpus_file

    graph = load_recipe(ROOT / "recipes" / "index" / "sentence_graph.yaml").index
    assert graph is not None
    spec = attrs.evolve(graph, embedder=FlagModelEmbedder(device="cpu"))
    source = corpus_file(tmp_path, n=3)
    manifest = build(source, spec, tmp_path / "idx")
    assert manifest["devices"] == [{"index.embedder": "cpu"}]
