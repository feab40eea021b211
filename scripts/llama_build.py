"""Build llama-cpp-python for this CPU with explicit llama.cpp options, and install it.

    .venv/bin/python scripts/llama_build.py --variant avx2='OPTIONS' [--variant avx512='OPTIONS']
                                            [--cpu auto|avx2|avx512] [--force] [--venv .venv]

The Makefile calls it (``make llama``; ``make llama-rebuild`` passes --force) with the CMake
options of each variant, which it keeps with the reason they are explicit. This script:

1. reads the CPU's flags (``/proc/cpuinfo``) and refuses, with a message that says what to do,
   a CPU that lacks what the portable variant needs (AVX2, FMA, F16C, BMI2: Intel since 2013,
   AMD since 2015);
2. picks the variant: the one named by --cpu, or with ``auto`` the fastest one whose
   instructions the CPU reports (:data:`NEEDS`);
3. builds the wheel from the hash-checked sdist of ``requirements/llama.txt`` with pip's
   cache off (``--no-cache-dir``: pip keys its wheel cache on the sdist alone, so a wheel built
   with other options or on another CPU would be installed without compiling) into a folder of
   its own, named by a digest of the sdist, the options, the compiler and Python
   (``~/.cache/chainrag/wheels/…``, or ``$CHAINRAG_WHEELS``): a wheel can never be taken for
   another build, and a second environment with the same build reuses it. The wheel is moved
   there only once whole, so a killed build starts again cleanly;
4. installs it into the environment and writes ``<venv>/llama-build.json`` (variant, options,
   CPU, compiler, the sha256 of the CPU kernels' library), which chainrag reads to say which
   build answered (``run.json``) and what a crashing build was built with.

Nothing is done when the environment already holds that build (the record and the installed
library agree), so ``make`` calls it every time.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chainrag.core.llama_build import file_sha256  # noqa: E402 - after the path

REQUIREMENT = ROOT / "requirements" / "llama.txt"
RECORD = "llama-build.json"
NEEDS = {
    "avx2": ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"),
    "avx512": (
        "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2",
        "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw",
        "avx512vbmi", "avx512_vnni", "avx512_bf16",
    ),
}  # fmt: skip
"""The CPU flags (as /proc/cpuinfo names them) each variant's instructions need."""
PREFERENCE = ("avx512", "avx2")
"""``auto`` takes the first variant here that was given and that the CPU can run."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, set[str]]:
    """(model name, flags) of the first CPU in ``cpuinfo``."""
    text = cpuinfo.read_text(errors="replace")
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.MULTILINE)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return (model.group(1).strip() if model else "unknown CPU"), set(
        flags.group(1).split() if flags else ()
    )


def choose(wanted: str, given: dict[str, str], model: str, flags: set[str]) -> str:
    """The variant to build; SystemExit with what to do where the CPU cannot run it."""
    missing = [f for f in NEEDS["avx2"] if f not in flags]
    if missing:
        raise SystemExit(
            f"this CPU ({model}) lacks {', '.join(missing)}: chainrag's local LLM (llama.cpp) "
            "is built for x86-64 CPUs with AVX2, FMA and F16C (Intel since 2013, AMD since "
            "2015). Everything else works without it: answer with an API model instead (a "
            "recipe's llm: section, e.g. recipes/llms/gpt-4o-mini.yaml); the local model's "
            "tests and `make demo` need it."
        )
    if wanted != "auto":
        if wanted not in given:
            raise SystemExit(
                f"LLAMA_CPU={wanted}: no such variant (one of auto, {', '.join(given)})"
            )
        lacking = [f for f in NEEDS.get(wanted, ()) if f not in flags]
        if lacking:
            raise SystemExit(f"LLAMA_CPU={wanted}: this CPU ({model}) lacks {', '.join(lacking)}")
        return wanted
    return next(v for v in PREFERENCE if v in given and all(f in flags for f in NEEDS[v]))


def sdist_pin() -> tuple[str, str]:
    """(version, sha256) of the llama-cpp-python sdist that requirements/llama.txt pins."""
    text = REQUIREMENT.read_text()
    version = re.search(r"^llama_cpp_python==(\S+)", text, re.MULTILINE)
    digest = re.search(r"--hash=sha256:([0-9a-f]{64})", text)
    if not (version and digest):
        raise SystemExit(f"{REQUIREMENT}: no llama_cpp_python==VERSION pin with its sha256")
    return version.group(1), digest.group(1)


def compiler() -> str:
    """The C compiler's first line of ``--version`` (part of what makes a build)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"
    try:
        done = subprocess.run(  # noqa: S603 - the compiler named by CC or on PATH
            [cc, "--version"], capture_output=True, text=True, check=False
        )
    except OSError:
        return f"{cc}: not found"
    return done.stdout.splitlines()[0] if done.stdout else cc


def build_key(sdist: str, options: str, cc: str) -> str:
    """16 hex digits naming one build: the sdist, the options, the compiler, Python, the OS."""
    what = [
        sdist,
        options,
        cc,
        sys.implementation.cache_tag or "",
        platform.machine(),
        sys.platform,
    ]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]


def wheel_home() -> Path:
    base = os.environ.get("CHAINRAG_WHEELS")
    if base:
        return Path(base)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "chainrag" / "wheels"


def cpu_library(python: Path) -> Path | None:
    """The installed CPU kernels' library of llama_cpp in the environment of ``python``."""
    done = subprocess.run(  # noqa: S603 - the environment's own interpreter
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('llama_cpp').origin)"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return None
    lib = Path(done.stdout.strip()).parent / "lib"
    for name in ("libggml-cpu.so", "libggml-cpu.dylib", "libggml.so", "libllama.so"):
        if (lib / name).is_file():
            return lib / name
    return None


def build_wheel(folder: Path, version: str, options: str, python: Path) -> Path:
    """Build the wheel into ``folder`` (made whole or not at all); its path."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".building-") as tmp:
        log = Path(tmp) / "build.log"
        print(f"== building llama-cpp-python {version} from source with: {options}")
        print(f"   (about 5 min on 2 cores; pip's wheel cache is not used; log: {log})")
        env = {**os.environ, "CMAKE_ARGS": options, "FORCE_CMAKE": "1"}
        command = [
            str(python), "-m", "pip", "wheel", "--disable-pip-version-check", "--no-cache-dir",
            "--no-deps", "--require-hashes", "--no-binary", "llama_cpp_python",
            "-r", str(REQUIREMENT), "-w", tmp,
        ]  # fmt: skip
        started = time.monotonic()
        with log.open("w") as out:
            done = subprocess.run(  # noqa: S603 - pip, with our own arguments
                command, env=env, stdout=out, stderr=subprocess.STDOUT, check=False
            )
        if done.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            raise SystemExit(f"building llama-cpp-python failed ({done.returncode}):\n{tail}")
        wheels = list(Path(tmp).glob("llama_cpp_python-*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"expected one llama_cpp_python wheel in {tmp}, found {wheels}")
        shutil.move(str(log), str(wheels[0].with_suffix(".log")))
        if folder.exists():  # a folder without its wheel: not a build
            shutil.rmtree(folder)
        os.replace(tmp, folder)  # whole, or not there at all
        os.mkdir(tmp)  # for TemporaryDirectory's clean-up
        print(f"   built in {time.monotonic() - started:.0f} s: {folder}")
    return next(folder.glob("llama_cpp_python-*.whl"))


@dataclasses.dataclass(frozen=True)
class Build:
    """One build of llama-cpp-python: the variant for this CPU and what names it."""

    variant: str
    options: str
    version: str
    sdist: str
    compiler: str
    cpu: str

    @property
    def key(self) -> str:
        return build_key(self.sdist, self.options, self.compiler)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=OPTIONS",
                        help="a build variant and its CMake options (repeatable)")  # fmt: skip
    parser.add_argument("--cpu", default="auto", help="the variant to build, or auto")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv")
    parser.add_argument("--force", action="store_true", help="build and install again")
    args = parser.parse_args(argv)
    if not args.variant:
        parser.error("give at least one --variant NAME=OPTIONS")
    return args


def this_build(wanted: str, variants: list[str]) -> Build:
    """The build for this machine's CPU; SystemExit where the set-up cannot build one."""
    if platform.machine().lower() not in ("x86_64", "amd64") or not Path("/proc/cpuinfo").is_file():
        raise SystemExit(
            f"the set-up builds the local LLM (llama.cpp) for x86-64 Linux only; this is "
            f"{platform.machine()} {sys.platform}. Install llama-cpp-python==0.3.36 into .venv "
            "yourself (llama.cpp's defaults suit ARM and Apple silicon), or answer with an API "
            "model (a recipe's llm: section)."
        )
    given = dict(v.split("=", 1) for v in variants)
    model, flags = cpu_flags()
    variant = choose(wanted, given, model, flags)
    version, sdist = sdist_pin()
    return Build(variant, " ".join(given[variant].split()), version, sdist, compiler(), model)


def installed(build: Build, venv: Path) -> bool:
    """Whether ``venv`` holds ``build``: its record names the build, and the library installed
    is the one the record hashed."""
    try:
        record = json.loads((venv / RECORD).read_text())
    except (OSError, ValueError):
        return False
    library = cpu_library(venv / "bin" / "python")
    return (
        record.get("key") == build.key
        and library is not None
        and record.get("library_sha256") == file_sha256(library)
    )


def install(build: Build, wheel: Path, venv: Path) -> None:
    """Install ``wheel`` into ``venv`` and write the record chainrag reads."""
    python = venv / "bin" / "python"
    print(f"== installing {wheel.name} ({build.variant} build {build.key}) for this CPU "
          f"({build.cpu})")  # fmt: skip
    subprocess.run(  # noqa: S603 - pip, with our own arguments
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps",
         "--no-index", "--force-reinstall", str(wheel)],
        check=True,
    )  # fmt: skip
    library = cpu_library(python)
    if library is None:
        raise SystemExit(f"installed {wheel}, but llama_cpp's CPU library is not found")
    record = {
        "llama_cpp_python": build.version, "variant": build.variant, "options": build.options,
        "key": build.key, "wheel": str(wheel), "sdist_sha256": build.sdist,
        "compiler": build.compiler, "cpu": build.cpu, "library": library.name,
        "library_sha256": file_sha256(library),
        "installed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }  # fmt: skip
    (venv / RECORD).write_text(json.dumps(record, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    build = this_build(args.cpu, args.variant)
    if not args.force and installed(build, args.venv):
        print(f"== llama-cpp-python {build.version}: the {build.variant} build is installed "
              f"({build.key})")  # fmt: skip
        return 0
    folder = wheel_home() / f"llama_cpp_python-{build.version}-{build.variant}-{build.key}"
    if args.force and folder.exists():
        shutil.rmtree(folder)
    wheels = list(folder.glob("llama_cpp_python-*.whl"))
    python = args.venv / "bin" / "python"
    wheel = wheels[0] if wheels else build_wheel(folder, build.version, build.options, python)
    install(build, wheel, args.venv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
