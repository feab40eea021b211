"""Compatibility names for code not yet moved to :mod:`chainrag.run` (issue 21); to be removed."""

from chainrag.run.files import json_line as json_line
from chainrag.run.folder import write_recipe as write_recipe
