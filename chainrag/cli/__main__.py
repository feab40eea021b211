"""``python -m chainrag.cli``: the chainrag command, as the installed script runs it."""

from chainrag.cli import entry

entry()
