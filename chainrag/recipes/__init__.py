"""Recipes and the registry: what a recipe file may say, and what its names resolve to.

* :mod:`~chainrag.recipes.recipe`: the ``Recipe`` (``index:``, ``method:``, ``llm:``), loading a
  recipe file (``base:`` overlays, strict keys) and checking it.
* :mod:`~chainrag.recipes.registry`: one registry per stage protocol, the built-in components
  and plugins that register into them.
* :mod:`~chainrag.recipes.structure`: the strict cattrs converter every typed file goes through
  (recipes, run records, manifests), its errors naming the path of each problem.
* :mod:`~chainrag.recipes.validation`, :mod:`~chainrag.recipes.describe`: what ``chainrag
  validate`` and ``chainrag components`` print.
* :mod:`~chainrag.recipes.models`: the offline models a recipe may name, and fetching them.

Layer: may import :mod:`chainrag.core` and :mod:`chainrag.protocols`; the registry imports the
built-in components and methods by name when first asked (``load_builtins``), never at import.
"""
