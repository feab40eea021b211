"""chainrag: multi-hop retrieval-augmented QA from small, typed, recipe-composed components.

The Python API (:mod:`chainrag.api`): :func:`load_recipe`, :func:`run`, :func:`ask`,
:func:`report`, imported on first use, so ``import chainrag`` stays light.

``chainrag.run`` and ``chainrag.report`` are also the packages of those names
(``chainrag.run.jobs``, ``chainrag.report.tables``): each package is callable, and calling it
calls the API function of its name (:class:`_CallablePackage`), so ``chainrag.run(...)`` and
``import chainrag.run.jobs as jobs`` both work.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "ask", "load_recipe", "report", "run"]

if TYPE_CHECKING:
    from chainrag.api import ask, load_recipe, report, run


class _CallablePackage(types.ModuleType):
    """A package that is also the API function of its name."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from chainrag import api

        return getattr(api, self.__name__.rsplit(".", 1)[-1])(*args, **kwargs)


def _callable_package(name: str) -> None:
    """Make the package ``name`` (``chainrag.run``) callable as the API function of its name;
    its ``__init__`` calls this."""
    sys.modules[name].__class__ = _CallablePackage


def __getattr__(name: str) -> Any:
    if name in ("ask", "load_recipe"):
        from chainrag import api

        return getattr(api, name)
    if name in ("run", "report"):  # the package, callable (imported here on first use)
        import importlib

        return importlib.import_module(f"chainrag.{name}")
    raise AttributeError(f"module 'chainrag' has no attribute {name!r}")
