"""Knowledge stages (Shi et al.): query rewriting, the NLI knowledge filter, the reservoir's
trigger; LongRAG's CoT-guided filter (Zhao et al., 2024), a knowledge filter too.

Modules:
    ``knowledge``: Query Rewriter+ and the knowledge filters.
    ``cache_triggers``: the retrieval trigger of the knowledge reservoir.
    ``cot_filter``: LongRAG's CoT-guided filter.

Protocols: :mod:`chainrag.protocols.knowledge`.
"""

from chainrag.components.knowledge import (
    cache_triggers,
    cot_filter,
    knowledge,
)

__all__ = [
    "cache_triggers",
    "cot_filter",
    "knowledge",
]
