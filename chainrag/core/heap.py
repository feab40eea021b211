"""The cyclic garbage collector kept off what lives as long as the ``chainrag`` command.

A full collection walks every container object alive. After a command's start-up that is
mostly what its imports made — litellm's, openai's and pydantic's modules, classes and
schemas — none of which ever becomes garbage; the interpreter's last collection, as it exits,
walks it all again only to free memory the OS takes back anyway (1.3 to 1.7 s of wall time and
CPU after a 30-question run with its encoders remote, docs/benchmarks.md §9).

:func:`long_lived` moves every object alive now into the collector's permanent generation
(``gc.freeze``): later collections, the last one included, walk only what came after. Objects
are still freed when nothing refers to them; cyclic garbage among the frozen ones is kept until
the process ends. So it acts only in the ``chainrag`` command's own process
(:func:`command_started`, called by its entry point), never in one that calls chainrag's
functions and goes on (a notebook, the tests), and only where what is alive is what the rest of
the process needs (a run's checked plan) or where nothing is left to do (the command's end: its
records are written and synced before, never left to a finaliser).
"""

from __future__ import annotations

import gc

_command = False
"""Whether this process is the ``chainrag`` command (:func:`command_started`)."""


def command_started() -> None:
    """Mark this process as the ``chainrag`` command's: its heap ends with the command."""
    global _command
    _command = True


def long_lived() -> None:
    """In the ``chainrag`` command's process, every object alive now out of the garbage
    collector's reach (``gc.freeze``); elsewhere nothing."""
    if _command:
        gc.freeze()
