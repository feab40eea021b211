"""The ``linear_adapter`` embedder and the adapter file it reads (Patwa et al.).

Patwa et al.'s adapter is two D×D linear maps with biases, one for queries and one for passages;
outputs are L2-normalised. :class:`LinearAdapter` holds the maps, applies them and reads and
writes their file (an ``.npz`` with a JSON header); :class:`AdaptedEmbedder` puts one behind a
base embedder. Training lives in :mod:`chainrag.training.adapter`, which writes these files;
this module imports only the embedders below it, so reading an adapter needs no training code.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from chainrag.core.context import ModelPathError
from chainrag.core.errors import ChainragError
from chainrag.core.types import FloatArray
from chainrag.core.vectors import l2_normalise
from chainrag.protocols.index import Embedder, EmbedRole
from chainrag.protocols.resources import Resources
from chainrag.recipes.registry import EMBEDDERS

FORMAT = "chainrag-linear-adapter/1"


class AdapterError(ChainragError):
    """An adapter file is missing, malformed or does not fit the embeddings."""


@attrs.frozen
class LinearAdapter:
    """The trained maps: ``q' = norm(W_q q + b_q)``, ``p' = norm(W_p p + b_p)``."""

    wq: FloatArray
    bq: FloatArray
    wp: FloatArray
    bp: FloatArray
    base: str = ""

    @classmethod
    def identity(cls, dim: int, base: str = "") -> LinearAdapter:
        eye = np.eye(dim, dtype=np.float32)
        zero = np.zeros(dim, dtype=np.float32)
        return cls(eye, zero, eye.copy(), zero.copy(), base)

    @property
    def dim(self) -> int:
        return int(self.wq.shape[0])

    def apply(self, vectors: FloatArray, role: EmbedRole) -> FloatArray:
        x = np.asarray(vectors, dtype=np.float32)
        if x.size == 0:
            return x
        if x.shape[1] != self.dim:
            raise AdapterError(f"adapter is {self.dim}-dimensional, embeddings are {x.shape[1]}")
        w, b = (self.wq, self.bq) if role == "query" else (self.wp, self.bp)
        return l2_normalise(x @ w.T + b)

    def save(self, path: Path, meta: dict[str, Any] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        header = json.dumps({"format": FORMAT, "base": self.base, **(meta or {})})
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("wb") as fh:
            np.savez(fh, wq=self.wq, bq=self.bq, wp=self.wp, bp=self.bp, header=np.array(header))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> LinearAdapter:
        try:
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(str(data["header"]))
                if header.get("format") != FORMAT:
                    raise AdapterError(f"{path}: not a {FORMAT} file")
                arrays = [np.asarray(data[k], dtype=np.float32) for k in ("wq", "bq", "wp", "bp")]
        except (OSError, ValueError, KeyError) as exc:
            raise AdapterError(f"{path}: not a readable adapter file ({exc})") from None
        dim = arrays[0].shape[0]
        shapes = [(dim, dim), (dim,), (dim, dim), (dim,)]
        if [a.shape for a in arrays] != shapes:
            raise AdapterError(f"{path}: inconsistent shapes {[a.shape for a in arrays]}")
        wq, bq, wp, bp = arrays
        return cls(wq, bq, wp, bp, base=str(header.get("base", "")))


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _identity_example() -> dict[str, Any]:
    """An identity adapter over a 16-dimensional hashed embedder: for conformance checks."""
    path = Path(tempfile.gettempdir()) / "chainrag-identity-adapter-16.npz"
    if not path.is_file():
        LinearAdapter.identity(16, "hashed_bow").save(path)
    return {"base": {"kind": "hashed_bow", "dim": 16}, "path": str(path)}


@EMBEDDERS.register("linear_adapter", example=_identity_example)
@attrs.frozen
class AdaptedEmbedder:
    """A base embedder followed by a trained linear adapter (Patwa et al.), queries and passages
    through their own maps. Recipe:
    ``{kind: linear_adapter, base: {kind: flag_model}, path: adapters/minilm.npz}``.
    """

    base: Embedder
    path: str

    def adapter_file(self) -> Path:
        """The adapter file, or a :class:`ModelPathError` naming the field and the path when
        there is none (checked when the adapter is needed, not when a recipe is validated)."""
        path = Path(self.path).expanduser()
        if not path.is_file():
            raise ModelPathError(
                f"linear_adapter: 'path' {self.path!r} is not a file "
                "(train one: chainrag train adapter)"
            )
        return path

    def cache_identity(self) -> str:
        """The adapter file's sha256: cached embeddings and indexes follow its content."""
        return file_sha256(self.adapter_file())

    def __call__(
        self, texts: Sequence[str], ctx: Resources, role: EmbedRole = "passage"
    ) -> FloatArray:
        path = self.adapter_file()
        adapter = ctx.models.get(
            ("linear_adapter", str(path), self.cache_identity()), lambda: LinearAdapter.load(path)
        )
        return adapter.apply(self.base(texts, ctx, role), role)
