"""Imported by the spaCy workers' fork server only, as it starts
(:func:`~chainrag.components.index.spacy_workers.start_fork_server`): imports spaCy
(:func:`~chainrag.components.index.spacy_workers.import_spacy`) and loads the pipelines named
in ``$CHAINRAG_SPACY_PIPELINES`` into the workers' pipeline cache before any worker is forked,
so that each worker starts with them instead of loading them at its first job.

A pipeline that does not load is left to the worker's first job, which raises the error where
the run sees it (an error here would stop the fork server, and every worker with it).
"""

from __future__ import annotations

import contextlib
import json
import os

from chainrag.components.index.spacy_workers import PIPELINES_ENV, _pipeline, import_spacy

import_spacy()
for _model, _keep in json.loads(os.environ.get(PIPELINES_ENV, "[]")):
    with contextlib.suppress(Exception):
        _pipeline(_model, tuple(_keep))
