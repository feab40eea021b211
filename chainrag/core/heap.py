"""The cyclic garbage collector kept off what lives as long as the process.

A full collection walks every container object alive. After a command's start-up that is
mostly what its imports made — litellm's, openai's and pydantic's modules, classes and
schemas — none of which ever becomes garbage; the interpreter's last collection, as it exits,
walks it all again only to free memory the OS takes back anyway (1.3 to 1.7 s of wall time and
CPU after a 30-question run with its encoders remote, docs/benchmarks.md §9).

:func:`long_lived` moves every object alive now into the collector's permanent generation
(``gc.freeze``): later collections, the last one included, walk only what came after. Objects
are still freed when nothing refers to them; only cyclic garbage among the frozen ones is left
until the process ends, so it is called where what is alive is what the rest of the process
needs (a run's checked plan) or where nothing is left to do (the command's end: its records are
written and synced before, never left to a finaliser).
"""

from __future__ import annotations

import gc


def long_lived() -> None:
    """Every object alive now out of the garbage collector's reach (``gc.freeze``)."""
    gc.freeze()
