"""Where chainrag keeps caches and finds the benchmark data."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_ENV = "CHAINRAG_CACHE"
DATA_ENV = "CHAINRAG_DATA"


def cache_root() -> Path:
    """``$CHAINRAG_CACHE`` or the user cache directory's ``chainrag`` folder."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path(platformdirs.user_cache_dir("chainrag"))


def data_root() -> Path:
    """``$CHAINRAG_DATA`` or ``../shared/data`` beside the project checkout."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def llm_cache_path() -> Path:
    """The LLM response cache every command opens: ``llm-cache.sqlite`` in :func:`cache_root`."""
    return cache_root() / "llm-cache.sqlite"
