"""``python -m chainrag.cli``: the chainrag command, as the installed script runs it."""

from chainrag.cli import entry

if __name__ == "__main__":  # not again in a spawned worker process
    entry()
