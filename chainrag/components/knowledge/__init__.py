"""Knowledge stages (Shi et al.): query rewriting, the NLI knowledge filter, the reservoir's
trigger.

Modules:
    ``knowledge``: Query Rewriter+ and the knowledge filters.
    ``cache_triggers``: the retrieval trigger of the knowledge reservoir.

Protocols: :mod:`chainrag.protocols.knowledge`.
"""

from chainrag.components.knowledge import (
    cache_triggers,
    knowledge,
)

__all__ = [
    "cache_triggers",
    "knowledge",
]
