"""What an index knows of where its units come from: each unit's source passage.

LongRAG (Zhao et al., 2024) retrieves chunks but reads their source paragraphs: its information
extractor maps each retrieved chunk back to the paragraph it was cut from. A question's chunk
index and sentence graph hold their passages; a corpus index reads them from its database.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chainrag.core.types import Passage
from chainrag.protocols.units import Searchable


@runtime_checkable
class SourcePassages(Searchable, Protocol):
    """A searchable index that knows the passage each of its units was cut from."""

    def passage_of(self, unit: int) -> int:
        """The number of ``unit``'s source passage in this index (0 ≤ number < passages)."""
        ...

    def passage(self, number: int) -> Passage:
        """The passage numbered ``number`` in this index, as it was indexed."""
        ...
