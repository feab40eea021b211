"""The ``chainrag`` command line: each command parses, calls one library function, prints.

:mod:`~chainrag.cli.main` assembles the commands of :mod:`~chainrag.cli.runs` (run, report,
ask, recurring), :mod:`~chainrag.cli.analysis` (compare, walks, integration-gap),
:mod:`~chainrag.cli.corpus` (index), :mod:`~chainrag.cli.experiments`,
:mod:`~chainrag.cli.models`, :mod:`~chainrag.cli.train` and :mod:`~chainrag.cli.view` (view);
:mod:`~chainrag.cli.common` holds what they share (the error-reporting decorator, the progress
bar).

Layer: the top; may import every other layer, and nothing imports it.
"""

from chainrag.cli.main import app, entry

__all__ = ["app", "entry"]
