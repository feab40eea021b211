"""The local LLM's build: chosen for the CPU with explicit options, recorded, proven on the real
model (the fresh-machine path CI runs), and named in run.json."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from chainrag.core.llama_build import (
    LlamaBuild,
    _llama_build,
    cpu_library,
    llama_build,
    parse_features,
)
from chainrag.core.types import LLMRequest, Message
from chainrag.llm.backend import LiteLLMBackend
from chainrag.llm.server import PROBE_TEXT, LocalServer
from chainrag.recipes import models
from chainrag.run.folder import RunDir, build_change

from .test_scripts import ROOT, _script

HASWELL = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"}
ZEN4 = HASWELL | {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw", "avx512vbmi",
                  "avx512_vnni", "avx512_bf16"}  # fmt: skip
VARIANTS = {
    "avx2": "-DGGML_NATIVE=OFF -DGGML_AVX2=ON",
    "avx512": "-DGGML_NATIVE=OFF -DGGML_AVX512=ON",
}


def test_a_cpu_without_avx2_is_refused_with_what_to_do() -> None:
    build = _script("llama_build")
    with pytest.raises(SystemExit) as caught:
        build.choose("auto", VARIANTS, "Intel Xeon E5-2670", {"sse4_2", "avx"})
    message = str(caught.value)
    assert "Intel Xeon E5-2670" in message and "lacks avx2, fma, f16c, bmi2" in message
    assert "AVX2" in message and "API model" in message


def test_auto_takes_the_fastest_variant_the_cpu_runs_and_never_one_it_cannot() -> None:
    build = _script("llama_build")
    assert build.choose("auto", VARIANTS, "Haswell", HASWELL) == "avx2"
    assert build.choose("auto", VARIANTS, "Zen 4", ZEN4) == "avx512"
    assert build.choose("auto", {"avx2": "x"}, "Zen 4", ZEN4) == "avx2"  # only what was given
    assert build.choose("avx2", VARIANTS, "Zen 4", ZEN4) == "avx2"
    with pytest.raises(SystemExit, match=r"LLAMA_CPU=avx512: this CPU .Haswell. lacks avx512f"):
        build.choose("avx512", VARIANTS, "Haswell", HASWELL)
    with pytest.raises(SystemExit, match="LLAMA_CPU=amx: no such variant"):
        build.choose("amx", VARIANTS, "Haswell", HASWELL)


def test_the_makefiles_options_turn_native_and_amx_off(tmp_path: Path) -> None:
    """Both variants, as make expands them: native and every AMX option off, the features on."""
    show = tmp_path / "show.mk"
    show.write_text("include Makefile\nshow:\n\t@echo '$(LLAMA_AVX2)'\n\t@echo '$(LLAMA_AVX512)'\n")
    done = subprocess.run(["make", "-s", "-f", str(show), "show"], cwd=ROOT, check=True,
                          capture_output=True, text=True)  # fmt: skip
    avx2, avx512 = done.stdout.splitlines()
    for options in (avx2, avx512):
        for off in ("GGML_NATIVE", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"):
            assert f"-D{off}=OFF" in options.split()
        assert {"-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"} <= set(options.split())
    assert "-DGGML_AVX512=OFF" in avx2.split() and "-DGGML_AVX512=ON" in avx512.split()


def test_a_build_is_named_by_its_options_and_compiler(tmp_path: Path) -> None:
    """The wheel folder's key changes with the options and the compiler, never only with the
    sdist (pip's own cache is keyed on the sdist alone)."""
    build = _script("llama_build")
    key = build.build_key("sdist", "-DGGML_AVX2=ON", "gcc 12")
    assert key == build.build_key("sdist", "-DGGML_AVX2=ON", "gcc 12")
    assert key != build.build_key("sdist", "-DGGML_AVX512=ON", "gcc 12")
    assert key != build.build_key("sdist", "-DGGML_AVX2=ON", "gcc 13")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu avx avx2 fma\n")
    assert build.cpu_flags(cpuinfo) == ("Test CPU", {"fpu", "avx", "avx2", "fma"})
    assert build.sdist_pin()[0] == "0.3.36"


def test_the_features_are_read_from_llamas_system_information() -> None:
    info = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 0 | AMX_INT8 = 0 | OPENMP = 1 | "
    assert parse_features(info) == ("SSE3", "AVX", "AVX2", "OPENMP")
    assert parse_features("") == ()


def test_the_set_ups_record_counts_only_while_its_library_is_installed(tmp_path: Path) -> None:
    library = cpu_library()
    if library is None:
        pytest.skip("llama-cpp-python is not installed")
    from chainrag.core.llama_build import file_sha256

    record = {"options": "-DGGML_NATIVE=OFF", "variant": "avx2", "key": "0123456789abcdef"}
    (tmp_path / "llama-build.json").write_text(
        json.dumps(record | {"library_sha256": file_sha256(library)})
    )
    build = _llama_build(str(tmp_path))
    assert build is not None and (build.variant, build.options) == ("avx2", "-DGGML_NATIVE=OFF")
    assert build.key() == (build.version, "0123456789abcdef")
    assert "AVX2" in build.cpu_features
    other = tmp_path / "other"
    other.mkdir()
    (other / "llama-build.json").write_text(json.dumps(record | {"library_sha256": "0" * 64}))
    stale = _llama_build(str(other))
    assert stale is not None and stale.options is None  # another library: options unknown
    assert stale.key() == (build.version, build.library_sha256)


def test_two_compilations_of_one_build_are_one_build() -> None:
    """Compiling the same sdist with the same options and compiler again gives a library with
    other bytes (build paths are in it): the set-up's digest, where known, makes them one."""
    one = LlamaBuild("0.3.36", "aa6c6d54540b2917", ("AVX2",), "-DX=ON", "avx2", "4cd6a153486ad096")
    two = LlamaBuild("0.3.36", "4180d28a6d6fa321", ("AVX2",), "-DX=ON", "avx2", "4cd6a153486ad096")
    assert one.key() == two.key()
    assert LlamaBuild("0.3.36", "aa6c6d54540b2917").key() != LlamaBuild("0.3.36", "4180d28a").key()


def test_a_resumed_run_under_another_build_warns_and_records_each_sessions_build(
    tmp_path: Path,
) -> None:
    from .test_runs import DATA, naive_recipe

    path, recipe = naive_recipe(tmp_path)
    first = LlamaBuild("0.3.36", "aaaaaaaaaaaaaaaa", ("AVX2",), "-DGGML_NATIVE=ON", "native")
    second = LlamaBuild("0.3.36", "bbbbbbbbbbbbbbbb", ("AVX2",), "-DGGML_NATIVE=OFF", "avx2")
    run = RunDir(tmp_path / "run")
    run.folder.mkdir()
    said: list[str] = []
    run.start(recipe, path, "musique", DATA, llama_build=first, say=said.append)
    run.start(recipe, path, "musique", DATA, llama_build=first, say=said.append)
    assert said == []  # the same build: nothing to say
    run.start(recipe, path, "musique", DATA, llama_build=second, say=said.append)
    assert len(said) == 1 and "made by another llama.cpp build" in said[0]
    assert "native build (-DGGML_NATIVE=ON)" in said[0] and "avx2 build" in said[0]
    builds = [s.llama_build for s in run.meta().sessions]
    assert builds == [first, first, second]
    stored = json.loads((run.folder / "run.json").read_text())["sessions"][2]["llama_build"]
    assert stored["variant"] == "avx2" and stored["cpu_features"] == ["AVX2"]
    assert build_change(run.folder, None, second) == ""  # an old run: no build to compare


@pytest.mark.slow
def test_the_installed_build_answers_a_real_completion_of_several_hundred_tokens() -> None:
    """The fresh-machine path: the set-up's build serves the 0.5B model, proves itself on its
    start-up completion (a crashing build fails here with the signal and the build named), and
    answers a question over a context of several hundred tokens."""
    assert models.fetch(models.get_model("qwen2.5-coder-0.5b")).state == "ok"
    context = PROBE_TEXT.replace("Reply with one word: ready?", "") + (
        "The lighthouse on Skellig Rock was built in 1821 by the engineer Maeve Corrigan. "
    ) + PROBE_TEXT.replace("Reply with one word: ready?", "")  # fmt: skip
    question = "Who built the lighthouse on Skellig Rock? Answer with the name only."
    with LocalServer.for_model("qwen2.5-coder-0.5b") as server:
        backend = LiteLLMBackend(api_base=server.api_base, api_key="unused", free=True)
        messages = (Message("user", f"{context}\n\n{question}"),)
        request = LLMRequest(
            messages, "test", model=server.litellm_model, max_tokens=16, temperature=0.0
        )
        answer = backend.complete(request)
        assert server.death() is None
    assert answer.usage.prompt_tokens >= 400
    assert "corrigan" in answer.text.lower()
    build = llama_build()
    assert build is not None and build.version == "0.3.36"
    assert build.options is not None, "llama-cpp-python was not installed by `make llama`"
    assert "-DGGML_NATIVE=OFF" in build.options and "-DGGML_AMX_INT8=OFF" in build.options
    assert "AVX2" in build.cpu_features
    assert not [f for f in build.cpu_features if f.startswith("AMX")]
