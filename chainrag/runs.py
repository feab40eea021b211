"""Run directories: a recipe over a dataset, one JSON line per question, resumable.

A run directory holds::

    run.json           what was run: recipe name and digest, dataset and its fingerprint,
                       package versions, model identities, and one entry per session
    recipe.yaml        the fully resolved recipe
    predictions.jsonl  one line per answered question: answers with EM/F1, retrieval metrics,
                       LLM accounting, seconds, and the whole typed trace
    errors.jsonl       questions that failed (an LLM that stayed down, unparsable output);
                       they are not in predictions.jsonl and are tried again on the next run

Each line is written with one ``write`` and ``fsync``-ed before the next question is counted,
so a process killed at any moment loses at most the questions in flight. Starting again reads
the finished lines, cuts off a torn last line (a write interrupted mid-way), and runs only the
questions that have no line: nothing is lost and nothing is duplicated. A lock on the directory
keeps two processes from appending to the same run.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs

from chainrag.credentials import redact
from chainrag.errors import ChainragError
from chainrag.recipe import Recipe, dump_recipe
from chainrag.run.meta import (
    META_FORMAT,
    IndexIdentity,
    RunMeta,
    Session,
    SessionEnd,
    file_fingerprint,
    meta_data,
    model_identities,
    package_versions,
    read_meta,
    recipe_digest,
    stored_recipe,
)
from chainrag.run.record import QuestionError, RecordError, RunRecord, read_error, read_record

RUN_FILE = "run.json"
RECIPE_FILE = "recipe.yaml"
PREDICTIONS = "predictions.jsonl"
ERRORS = "errors.jsonl"
LOCK = ".lock"

T = TypeVar("T")


class RunError(ChainragError):
    """A run directory cannot be used as asked; the message names it and says why."""


# --------------------------------------------------------------------------- the JSONL file


def read_lines(path: Path, *, repair: bool) -> tuple[list[dict[str, Any]], int]:
    """The records of a JSON Lines file and the number of bytes of a torn last line.

    A last line without its newline is a write cut off by a crash: with ``repair`` it is cut
    from the file (the question runs again). A complete line that is not a JSON object is not
    something a crash makes, so it is an error naming the file and line, and nothing is changed.
    """
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    torn = len(data) - end
    records = []
    for number, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RunError(
                f"{path}, line {number}: not a JSON line ({exc}); this is not a torn write, so "
                "the file is left as it is: fix or remove that line and run again"
            ) from None
        if not isinstance(record, dict):
            raise RunError(f"{path}, line {number}: expected a JSON object")
        records.append(record)
    if torn and repair:
        with path.open("r+b") as fh:
            fh.truncate(end)
            os.fsync(fh.fileno())
    return records, torn


def json_line(record: Mapping[str, Any]) -> bytes:
    """``record`` as one UTF-8 JSON line, whatever its strings hold.

    Text from an LLM or a dataset may hold a lone surrogate (``"Paris \\ud800"``), which UTF-8
    cannot encode; such a record is written with ASCII escapes instead (still valid JSON, and
    read back to the same strings), never dropped and never an exception.
    """
    try:
        return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps(record, separators=(",", ":")) + "\n").encode()


class LineWriter:
    """Appends JSON lines durably: one ``write`` per line, then ``fsync``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: Mapping[str, Any]) -> None:
        view = memoryview(json_line(record))
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


# --------------------------------------------------------------------------- the directory


def write_json(path: Path, value: Any) -> None:
    """Replace ``path`` atomically by ``value`` as indented JSON, credentials masked
    (:func:`chainrag.credentials.redact`) and any lone surrogate written as an escape."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
        text.encode()
    except UnicodeEncodeError:
        text = json.dumps(value, indent=2) + "\n"
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(redact(text), encoding="utf-8")
    os.replace(tmp, path)


def write_recipe(path: Path, recipe: Recipe) -> None:
    """The fully resolved ``recipe`` as YAML beside what it produced. A recipe holds no key (keys
    come from the environment); the one credential it can hold, userinfo in ``api_base``, is
    stripped. It is not masked by value: it is read back to resume, and a masked word (an
    environment value that also occurs in a field name) would make it another recipe."""
    path.write_text(dump_recipe(stored_recipe(recipe)), encoding="utf-8")


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the run directory's lock, or fail at once naming the process that holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / LOCK).open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise RunError(f"{folder}: another chainrag run ({holder}) is writing it") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        try:
            yield
        finally:
            fh.truncate(0)
            fcntl.flock(fh, fcntl.LOCK_UN)


class RunDir:
    """One run directory (see the module docstring); use inside :func:`locked`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def predictions_path(self) -> Path:
        return self.folder / PREDICTIONS

    def meta(self) -> RunMeta:
        """The folder's ``run.json``; a RunError naming it if it is missing or not one."""
        path = self.folder / RUN_FILE
        if not path.is_file():
            raise RunError(f"{self.folder}: not a run directory (no {RUN_FILE})")
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
        try:
            return read_meta(value)
        except RecordError as exc:
            raise RunError(f"{path}: not the run.json of a run ({exc})") from None

    def start(
        self,
        recipe: Recipe,
        recipe_path: Path,
        dataset: str,
        dataset_file: Path,
        index: IndexIdentity | None = None,
    ) -> RunMeta:
        """Create the directory's description, or check that it describes this same run.

        Resuming with a changed recipe or a changed dataset file would mix two experiments in
        one file, so either is an error that names what differs.
        """
        fingerprint = file_fingerprint(dataset_file)
        digest = recipe_digest(recipe)
        if (self.folder / RUN_FILE).exists():
            meta = self.meta()
            self._check_same_run(meta, recipe, digest, (dataset, fingerprint), index)
            meta = attrs.evolve(meta, sessions=(*meta.sessions, Session.now()))
        else:
            meta = RunMeta(
                format=META_FORMAT,
                recipe_name=recipe.name,
                recipe_description=recipe.description,
                recipe_file=str(recipe_path),
                recipe_digest=digest,
                method=type(recipe.method).__name__,
                dataset=dataset,
                dataset_file=str(dataset_file),
                dataset_fingerprint=fingerprint,
                packages=package_versions(),
                models=model_identities(recipe),
                sessions=(Session.now(),),
                index=index,
            )
            write_recipe(self.folder / RECIPE_FILE, recipe)
        write_json(self.folder / RUN_FILE, meta_data(meta))
        return meta

    def _check_same_run(
        self,
        meta: RunMeta,
        recipe: Recipe,
        digest: str,
        data: tuple[str, str],
        index: IndexIdentity | None,
    ) -> None:
        """Raise unless the folder's run is of this recipe, dataset file and corpus index."""
        if meta.recipe_digest != digest and not self._same_recipe(recipe):
            raise RunError(
                f"{self.folder} holds a run of another recipe ({meta.recipe_name!r}, "
                f"{meta.recipe_digest}; now {recipe.name!r}, {digest}): pass another "
                "--out, or remove that directory to start over"
            )
        if (meta.dataset, meta.dataset_fingerprint) != data:
            raise RunError(
                f"{self.folder} holds a run on {meta.dataset!r} "
                f"({meta.dataset_fingerprint}), not on {data[0]!r} ({data[1]}): "
                "the dataset file changed or another dataset was named"
            )
        if index is not None and (meta.index is None or meta.index.key() != index.key()):
            shown = meta_data(meta).get("index")
            raise RunError(
                f"{self.folder} holds a run over another corpus index "
                f"({shown}); now {meta_data(attrs.evolve(meta, index=index))['index']}: pass "
                "another --out"
            )

    def _same_recipe(self, recipe: Recipe) -> bool:
        """Whether the folder's ``recipe.yaml`` is ``recipe`` compared as components, so that
        a parameter a component gained since (with its default) does not make it another."""
        from chainrag.recipe import parse_yaml, structure_stored

        path = self.folder / RECIPE_FILE
        try:
            stored = structure_stored(
                parse_yaml(path.read_text(encoding="utf-8"), str(path)), str(path)
            )
        except (ChainragError, OSError, UnicodeDecodeError):
            return False
        mine = stored_recipe(recipe)
        if stored is None:
            return False
        return attrs.evolve(stored, name=mine.name, description=mine.description) == mine

    def finish_session(self, end: SessionEnd) -> None:
        """Record how the current session ended (questions done, failed, wall time); a
        session of a finished run that found nothing to do is dropped, so that restarting a
        script over finished runs leaves their run.json unchanged."""
        meta = self.meta()
        *before, last = meta.sessions
        ended = () if end.idle and before else (attrs.evolve(last, end=end),)
        sessions = (*before, *ended)
        write_json(self.folder / RUN_FILE, meta_data(attrs.evolve(meta, sessions=sessions)))

    def records(self, *, repair: bool = False) -> tuple[list[RunRecord], int]:
        """The finished questions' records (first line per question id) and torn bytes cut."""
        lines, torn = read_lines(self.predictions_path, repair=repair)
        unique: dict[str, RunRecord] = {}
        for number, line in enumerate(lines, 1):
            record = read_line(self.predictions_path, number, line, read_record)
            unique.setdefault(record.id, record)
        return list(unique.values()), torn

    def errors(self) -> list[QuestionError]:
        """The failed questions of every session (a question may fail in several)."""
        path = self.folder / ERRORS
        lines, _ = read_lines(path, repair=False)
        return [read_line(path, n, line, read_error) for n, line in enumerate(lines, 1)]


def read_line(path: Path, number: int, line: Mapping[str, Any], read: Callable[[Any], T]) -> T:
    """One line of a run's JSONL file as a record; a RunError naming the file and the line
    (and every problem in it) otherwise."""
    try:
        return read(line)
    except RecordError as exc:
        raise RunError(f"{path}, line {number}: not a record of this version ({exc})") from None


def done_ids(records: Sequence[RunRecord]) -> set[str]:
    return {r.id for r in records}
