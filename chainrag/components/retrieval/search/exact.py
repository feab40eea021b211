"""``exact``: tiled inner products with a running top-k, memory bounded at any n (the paper's
SS edges and seeds)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np

from chainrag.components.retrieval.search.topk import (
    FORMAT,
    IntArray,
    _same_array,
    check_shape,
    exact_top_k,
    self_join_by_blocks,
)
from chainrag.core.types import FloatArray
from chainrag.recipes.registry import VECTOR_SEARCH


@attrs.frozen
class ExactIndex:
    """The vectors themselves (no copy), searched by exact tiled inner products."""

    vectors: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_same_array), repr=False)
    columns: int = 8192
    elements: int = 1 << 24

    def search(
        self, queries: FloatArray, k: int, exclude: IntArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        q = np.asarray(queries, dtype=np.float32)
        return exact_top_k(
            q, self.vectors, k, exclude, columns=self.columns, elements=self.elements
        )

    def self_join(self, k: int, rows: int) -> tuple[IntArray, FloatArray]:
        return self_join_by_blocks(self, self.vectors, k, rows)

    def save(self, path: Path) -> None:
        n, d = self.vectors.shape
        Path(path).write_text(json.dumps({"format": FORMAT, "kind": "exact", "n": n, "d": d}))


@VECTOR_SEARCH.register("exact")
@attrs.frozen
class ExactSearch:
    """Exact inner-product top-k by tiles of queries × vectors, memory bounded at any n.

    SS edges (§3.1) and seeds (§3.2) as the paper computes them. A tile holds at most
    ``tile_columns`` vectors and ``tile_elements`` similarities (64 MiB by default).
    Recipe: ``{kind: exact}``.
    """

    tile_columns: int = attrs.field(default=8192, validator=attrs.validators.ge(1))
    tile_elements: int = attrs.field(default=1 << 24, validator=attrs.validators.ge(1))

    def __call__(self, vectors: FloatArray) -> ExactIndex:
        return ExactIndex(vectors, self.tile_columns, self.tile_elements)

    def load(self, path: Path, vectors: FloatArray) -> ExactIndex:
        try:
            header = json.loads(Path(path).read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} is not an exact vector index file: {exc}") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"{path} is not an exact vector index file")
        check_shape(path, (header.get("n"), header.get("d")), vectors)
        return self(vectors)
