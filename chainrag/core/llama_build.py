"""Which llama.cpp build serves the local models: its version, options and CPU features.

    build = llama_build()     # None where llama-cpp-python is not installed
    build.describe()          # 'llama-cpp-python 0.3.36, avx2 build (-DGGML_NATIVE=OFF ...),
                              #  CPU features SSE3 SSSE3 AVX AVX2 F16C FMA BMI2, library 1f2e...'

llama-cpp-python compiles llama.cpp from its sdist, and the machine code it makes decides
whether it runs on a given CPU at all: llama.cpp's default, ``-march=native``, compiles the AMX
kernels on a CPU that reports AMX, and those die on virtualised Sapphire/Granite Rapids hosts.
The set-up (``make``, ``scripts/llama_build.py``) therefore passes the build options itself and
writes what it built to ``<environment>/llama-build.json`` (:data:`RECORD`): the options, the
variant and the sha256 of the CPU library it installed. :func:`llama_build` reads that record
where the installed library is still the one it names (else the options are unknown: a build
made some other way), and asks the library which CPU features it uses
(``llama_print_system_info``, in a child process, so that a build that cannot even load here
fails there and not in the caller).

A run records the build of each session that used the managed server (``run.json``): answers
are reproducible per build, not across builds, since two builds' kernels round differently.

Layer: core (the standard library and attrs only): the run records (:mod:`chainrag.run.meta`)
and the server (:mod:`chainrag.llm.server`) both read it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
from importlib import metadata, util
from pathlib import Path

import attrs

RECORD = "llama-build.json"
"""The set-up's record of the build it installed, in the environment's root (``sys.prefix``)."""
CPU_LIBRARIES = ("libggml-cpu.so", "libggml-cpu.dylib", "ggml-cpu.dll")
"""The library holding llama.cpp's CPU kernels (the one whose machine code depends on the
options), by platform; builds that link it into ``libggml`` fall back to that."""
FALLBACK_LIBRARIES = ("libggml.so", "libggml.dylib", "ggml.dll", "libllama.so")
SYSTEM_INFO = (
    "import llama_cpp, sys; "
    "sys.stdout.write(llama_cpp.llama_print_system_info().decode('utf-8', 'replace'))"
)


@attrs.frozen
class LlamaBuild:
    """One build of llama-cpp-python, as a run records it.

    Attributes:
        version: llama-cpp-python's version (it vendors one llama.cpp commit).
        library_sha256: The first 16 hex digits of the sha256 of the CPU kernels' library: two
            builds with other options or compilers differ here.
        cpu_features: What the library says it uses (``AVX2``, ``AVX512``, ``AMX_INT8``…);
            empty where it could not be asked.
        options: The CMake options the set-up built it with; None for a build made otherwise.
        variant: The set-up's name for those options (``avx2``, ``avx512``); None likewise.
        build: The set-up's digest of what it built from (the sdist, the options, the compiler,
            Python); None likewise.
    """

    version: str
    library_sha256: str
    cpu_features: tuple[str, ...] = ()
    options: str | None = None
    variant: str | None = None
    build: str | None = None

    def key(self) -> tuple[str, str]:
        """What makes two builds the same build: the set-up's digest of its sources, options
        and compiler where it made the build (compiling them again gives a library with other
        bytes, since build paths end up in it, and the same code), else the library's bytes."""
        return self.version, self.build or self.library_sha256

    def describe(self) -> str:
        """One line for messages: version, variant and options, features, library digest."""
        made = (
            f"{self.variant} build ({self.options})"
            if self.options is not None
            else "built outside chainrag's set-up (options unknown)"
        )
        features = " ".join(self.cpu_features) or "unknown"
        return (
            f"llama-cpp-python {self.version}, {made}, CPU features {features}, "
            f"library {self.library_sha256}"
        )


def llama_build() -> LlamaBuild | None:
    """The installed build (cached for the process); None where llama-cpp-python is absent."""
    return _llama_build(sys.prefix)


@functools.cache
def _llama_build(prefix: str) -> LlamaBuild | None:
    library = cpu_library()
    if library is None:
        return None
    digest = file_sha256(library)
    record = read_record(Path(prefix) / RECORD)
    same = record.get("library_sha256") == digest
    return LlamaBuild(
        version=metadata.version("llama_cpp_python"),
        library_sha256=digest[:16],
        cpu_features=cpu_features(),
        options=str(record["options"]) if same and "options" in record else None,
        variant=str(record["variant"]) if same and "variant" in record else None,
        build=str(record["key"]) if same and "key" in record else None,
    )


def cpu_library() -> Path | None:
    """The installed CPU kernels' library; None where llama-cpp-python is not installed."""
    spec = util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return None
    lib = Path(spec.origin).parent / "lib"
    for name in (*CPU_LIBRARIES, *FALLBACK_LIBRARIES):
        if (lib / name).is_file():
            return lib / name
    return None


def file_sha256(path: Path) -> str:
    """The sha256 of a file, in hex."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_record(path: Path) -> dict[str, object]:
    """The set-up's record, or an empty mapping where there is none or it is unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cpu_features(timeout_s: float = 60.0) -> tuple[str, ...]:
    """The CPU features the installed library reports using (``AVX2``, ``FMA``…), asked in a
    child process; empty where it cannot tell (the child died or timed out)."""
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and code
            [sys.executable, "-c", SYSTEM_INFO],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return parse_features(done.stdout) if done.returncode == 0 else ()


def parse_features(system_info: str) -> tuple[str, ...]:
    """The features set to 1 in the CPU part of llama.cpp's system information
    (``CPU : SSE3 = 1 | AVX = 1 | AVX512 = 0 | …``), in its order."""
    found: list[str] = []
    for part in system_info.split("|"):
        name, sep, value = part.rpartition("=")
        name = name.split(":")[-1].strip()
        if sep and value.strip() == "1" and name and name not in found:
            found.append(name)
    return tuple(found)
