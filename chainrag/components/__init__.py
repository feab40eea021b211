"""Built-in components. Importing this package registers them (it loads no model)."""

from chainrag.components import cache_triggers, chunkers, edges, rerankers, rewrite_triggers

__all__ = ["cache_triggers", "chunkers", "edges", "rerankers", "rewrite_triggers"]
