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


BUNDLED_DATA = Path(__file__).resolve().parents[1] / "data" / "files"
"""The datasets that ship with chainrag (their README and licences are there)."""


def data_root() -> Path:
    """``$CHAINRAG_DATA``, or the datasets that ship with chainrag (:data:`BUNDLED_DATA`)."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else BUNDLED_DATA


def llm_cache_path() -> Path:
    """The LLM response cache every command opens: ``llm-cache.sqlite`` in :func:`cache_root`."""
    return cache_root() / "llm-cache.sqlite"
