"""Vector arithmetic every layer shares: rows to unit length, and hashed bags of words (the
``hashed_bow`` embedder's vectors, which the stand-in server's embedding model serves too, so a
remote run can be compared with a local one)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from chainrag.core.types import FloatArray


def l2_normalise(x: np.ndarray) -> FloatArray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        x = x.reshape(len(x), -1)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: FloatArray = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return out


_WORD = re.compile(r"\w+", re.UNICODE)


def hashed_bag_of_words(texts: Sequence[str], dim: int) -> FloatArray:
    """Signed feature hashing of lower-cased words (blake2b), L2-normalised rows."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            out[i, h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    return l2_normalise(out)
