"""A run folder: a recipe over a dataset, one JSON line per question, resumable.

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
keeps two processes from appending to the same run (:mod:`chainrag.run.files` does both, for the
recurring experiment's folders too). Each line is a typed record (:mod:`chainrag.run.record`),
``run.json`` a :class:`~chainrag.run.meta.RunMeta`.

An experiment's folder is a run folder too (``chainrag experiment recurring``): its
``run.json`` names the experiment and fixes the questions, and its results are the run folders
of its phases below it, whose ``run.json`` names the experiment too
(:mod:`chainrag.experiments.recurring`), so ``chainrag run`` refuses these folders and
``chainrag report`` and ``view`` leave them out.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.device import resolved_devices
from chainrag.core.endpoint import access_changes
from chainrag.core.errors import ChainragError
from chainrag.core.llama_build import LlamaBuild
from chainrag.core.notes import MethodNotes
from chainrag.recipes.recipe import Recipe, dump_recipe
from chainrag.run.encoders import counted, encoder_access_changes, encoder_records
from chainrag.run.files import RunError, finished, write_json
from chainrag.run.meta import (
    META_FORMAT,
    IndexIdentity,
    RunIdentity,
    RunMeta,
    Session,
    SessionEnd,
    access,
    answer_recipe,
    last_build,
    meta_data,
    model_identities,
    package_versions,
    read_meta,
    stored_recipe,
)
from chainrag.run.notes import notes_of
from chainrag.run.provenance import encoder_access, recipe_differences
from chainrag.run.record import QuestionError, RecordError, RunRecord, read_error, read_record

RUN_FILE = "run.json"
RECIPE_FILE = "recipe.yaml"
PREDICTIONS = "predictions.jsonl"
ERRORS = "errors.jsonl"


def build_change(folder: Path, before: LlamaBuild | None, now: LlamaBuild | None) -> str:
    """A warning when this session's llama.cpp build is not the one that made the folder's
    latest answers; empty when it is, or when either is unknown."""
    if before is None or now is None or before.key() == now.key():
        return ""
    return (
        f"warning: {folder}'s earlier answers were made by another llama.cpp build "
        f"({before.describe()}); this session runs {now.describe()}. Answers are reproducible "
        "per build, not across builds, so new answers may differ from what the earlier build "
        "would have said; the cached ones are kept. run.json records each session's build."
    )


def device_change(folder: Path, sessions: Sequence[Session], now: Mapping[str, str]) -> str:
    """A warning when this session's encoders run on other devices than the latest session
    that recorded them; empty when they do not, or when either is unknown."""
    before = next((s.devices for s in reversed(sessions) if s.devices), None)
    if not before or not now or dict(before) == dict(now):
        return ""
    shown = ", ".join(f"{k}: {before.get(k, '-')} then, {v} now" for k, v in now.items())
    return (
        f"warning: {folder}'s encoders run on other devices this session ({shown}). Vectors "
        "from cpu and cuda agree to a cosine of 0.999 or more, not bit for bit, so a new "
        "answer may differ from what the earlier device would have given; run.json records "
        "each session's devices."
    )


def access_change(folder: Path, before: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """A line saying that this session reaches the LLM otherwise than the folder's latest one
    (another ``api_base``, more requests in flight…); empty where nothing changed."""
    changed = access_changes(before, now)
    if not changed:
        return ""
    return (f"note: {folder} resumes with llm {', '.join(changed)}: how the LLM is reached "
            "changes no answer, so the run goes on (run.json records each session's)")  # fmt: skip


def index_differences(before: IndexIdentity | None, now: IndexIdentity) -> str:
    """What differs between the corpus index a run was answered over and ``now``'s, by field."""
    if before is None:
        return f"none before; now {now.folder}"
    fields = ("recipe_digest", "corpus_sha256", "counts", "sources")
    found = [f"{name}: {getattr(before, name)} then, {getattr(now, name)} now"
             for name in fields if getattr(before, name) != getattr(now, name)]  # fmt: skip
    return "; ".join(found) or f"{before.folder} then, {now.folder} now"


def write_recipe(path: Path, recipe: Recipe) -> None:
    """The fully resolved ``recipe`` as YAML beside what it produced. A recipe holds no key (keys
    come from the environment); the one credential it can hold, userinfo in ``api_base``, is
    stripped. It is not masked by value: it is read back to resume, and a masked word (an
    environment value that also occurs in a field name) would make it another recipe."""
    path.write_text(dump_recipe(stored_recipe(recipe)), encoding="utf-8")


def new_meta(
    recipe: Recipe,
    recipe_path: Path | None,
    known: RunIdentity,
    session: Session,
    prompt_cache: str | None,
    experiment: str | None,
) -> RunMeta:
    """The ``run.json`` of a new run folder: ``recipe`` (read from ``recipe_path``, "" when
    given as an object) as ``known`` identifies it, its first ``session``."""
    return RunMeta(
        format=META_FORMAT,
        recipe_name=recipe.name,
        recipe_description=recipe.description,
        recipe_file=str(recipe_path) if recipe_path is not None else "",
        recipe_digest=known.recipe_digest,
        method=type(recipe.method).__name__,
        dataset=known.dataset,
        dataset_file=str(known.dataset_file),
        dataset_fingerprint=known.dataset_fingerprint,
        packages=package_versions(),
        models=model_identities(recipe, prompt_cache),
        sessions=(session,),
        index=known.index,
        encoders=encoder_records(recipe),
        dataset_setting=known.dataset_setting,
        questions=known.questions,
        experiment=experiment,
    )


def _what(experiment: str | None) -> str:
    return f"the {experiment} experiment" if experiment else "a run of chainrag run"


class RunDir:
    """One run directory (see the module docstring); write it inside
    :func:`~chainrag.run.files.locked`."""

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
        recipe_path: Path | None,
        dataset: str,
        dataset_file: Path,
        index: IndexIdentity | None = None,
        prompt_cache: str | None = None,
        llama_build: LlamaBuild | None = None,
        say: Callable[[str], None] = lambda _: None,
        changes: tuple[str, ...] = (),
        identity: RunIdentity | None = None,
        experiment: str | None = None,
    ) -> RunMeta:
        """Create the directory's description, or check that it describes this same run.

        Resuming with a changed recipe or a changed dataset file would mix two experiments in
        one file, so either is an error that names what differs; so is resuming with the
        managed server's ``reuse`` mode after ``fresh`` or ``aligned`` or the other way round
        (the caller passes the mode it runs with; each session records it). ``recipe_path``:
        the file the recipe was read from (None: given as an object; recorded as "").
        Resuming under another llama.cpp build (``llama_build``, recorded per session) is
        allowed with a warning through ``say``: its answers may differ from the earlier
        sessions'. ``changes``: the command line's ``--llm``/``--set`` changes to the recipe
        file, recorded per session (the resolved recipe, changes applied, is ``recipe.yaml``
        and the digest). How the LLM and each remote encoder are reached (``api_base``,
        ``concurrency``, ``timeout_s``, ``max_retries``; not part of the digest) is recorded
        per session, and a resume where it changed says so through ``say`` and goes on.
        ``identity``: the run's :class:`RunIdentity` as its plan computed it (else computed
        here from the recipe, the dataset and its file); with its ``questions``, a resume must
        ask those same questions. ``experiment``: the experiment whose folder this is
        (:attr:`~chainrag.run.meta.RunMeta.experiment`), which a resume must find again.
        """
        known = identity or RunIdentity.of(recipe, dataset, dataset_file, index)
        devices = resolved_devices(recipe, "")
        session = Session.now(prompt_cache, llama_build, changes, devices, access(recipe),
                              encoder_access(recipe))  # fmt: skip
        if (self.folder / RUN_FILE).exists():
            meta = self.check(
                recipe, dataset, dataset_file, index, identity=known, experiment=experiment
            )
            self._check_prompt_cache(meta, prompt_cache)
            self._say_changes(recipe, meta, llama_build, devices, say)
            meta = attrs.evolve(meta, sessions=(*meta.sessions, session),
                                encoders=encoder_records(recipe, meta.encoders))  # fmt: skip
        else:
            meta = new_meta(recipe, recipe_path, known, session, prompt_cache, experiment)
            write_recipe(self.folder / RECIPE_FILE, recipe)
        write_json(self.folder / RUN_FILE, meta_data(meta))
        return meta

    def _say_changes(
        self,
        recipe: Recipe,
        meta: RunMeta,
        llama_build: LlamaBuild | None,
        devices: Mapping[str, str],
        say: Callable[[str], None],
    ) -> None:
        """Say what a resume changed that it may go on with: the llama.cpp build, the
        encoders' devices, how the LLM is reached."""
        if warning := build_change(self.folder, last_build(meta.sessions), llama_build):
            say(warning)
        if warning := device_change(self.folder, meta.sessions, devices):
            say(warning)
        if line := self.access_note(recipe, meta):
            say(line)
        before = next((s.encoder_access for s in reversed(meta.sessions) if s.encoder_access),
                      {})  # fmt: skip
        for line in encoder_access_changes(self.folder, before, encoder_access(recipe)):
            say(line)

    def check(
        self,
        recipe: Recipe,
        dataset: str,
        dataset_file: Path,
        index: IndexIdentity | None = None,
        *,
        identity: RunIdentity | None = None,
        experiment: str | None = None,
    ) -> RunMeta:
        """The folder's ``run.json``, if it describes a run of this recipe on this dataset file
        (and corpus index, and questions where the identity fixes them) for the same
        ``experiment`` (None: a run); a RunError naming what differs otherwise. Writes nothing.
        ``identity``: the run's, as its plan computed it (else computed here)."""
        meta = self.meta()
        if meta.experiment != experiment:
            raise RunError(
                f"{self.folder} holds {_what(meta.experiment)}, not {_what(experiment)}: "
                "pass another --out-dir"
            )
        self._check_same_run(
            meta, recipe, identity or RunIdentity.of(recipe, dataset, dataset_file, index)
        )
        return meta

    def _check_same_run(self, meta: RunMeta, recipe: Recipe, known: RunIdentity) -> None:
        """Raise unless the folder's run is of this recipe, dataset file, corpus index and
        (where ``known`` fixes them) questions."""
        digest, data = known.recipe_digest, (known.dataset, known.dataset_fingerprint)
        index = known.index
        if meta.recipe_digest != digest and not self.same_recipe(recipe):
            raise RunError(self._other_recipe(meta, recipe, digest))
        if (meta.dataset, meta.dataset_fingerprint) != data:
            raise RunError(
                f"{self.folder} holds a run on {meta.dataset!r} "
                f"({meta.dataset_fingerprint}), not on {data[0]!r} ({data[1]}): "
                "the dataset file changed or another dataset was named"
            )
        setting = known.dataset_setting  # a file given by its path is read to tell its format
        if meta.dataset_setting != setting:
            raise RunError(
                f"{self.folder} holds a run on {meta.dataset!r} made as "
                f"{meta.dataset_setting!r}; this version makes it as {setting!r}: pass another "
                "--out-dir"
            )
        if meta.questions != known.questions and known.questions is not None:
            before = len(meta.questions) if meta.questions is not None else "any"
            raise RunError(
                f"{self.folder} holds a run of other questions ({before} questions, not the "
                f"{len(known.questions)} asked now, or other ones): its questions are fixed when "
                "it starts, so pass another --out-dir"
            )
        if index is not None and (meta.index is None or meta.index.key() != index.key()):
            raise RunError(
                f"{self.folder} holds a run over another corpus index "
                f"({index_differences(meta.index, index)}): pass another --out-dir"
            )

    def _other_recipe(self, meta: RunMeta, recipe: Recipe, digest: str) -> str:
        """Why the folder's run is not of ``recipe``: the fields that differ from its
        ``recipe.yaml`` (the digests only where that file cannot be read)."""
        stored = self.stored_recipe()
        start = f"{self.folder} holds a run of another recipe ({meta.recipe_name!r}"
        end = "pass another --out-dir, or remove that directory to start over"
        if stored is None:
            return (f"{start}, {meta.recipe_digest}; now {recipe.name!r}, {digest}), and its "
                    f"{RECIPE_FILE} cannot be read to say which fields differ: {end}")  # fmt: skip
        found = recipe_differences(stored, recipe) or [
            f"no field as this version reads them; its digest {meta.recipe_digest} was made "
            f"by another version of chainrag, now {digest}"
        ]
        return f"{start}), which differs in {'; '.join(found)}: {end}"

    def access_note(self, recipe: Recipe, meta: RunMeta | None = None) -> str:
        """What a resume with ``recipe`` says where it reaches the LLM otherwise than the
        folder's latest session (as that session recorded it, else as the folder's
        ``recipe.yaml`` says); ``""`` where nothing changed."""
        meta = meta or self.meta()
        before = next((s.access for s in reversed(meta.sessions) if s.access), None)
        if before is None:
            stored = self.stored_recipe()
            before = access(stored) if stored is not None else {}
        return access_change(self.folder, before, access(recipe))

    def _check_prompt_cache(self, meta: RunMeta, mode: str | None) -> None:
        """Raise if the folder's answers came from the managed server in another mode, from
        the server before the mode was recorded (which reused cached prompt prefixes), or from a
        local model's server at ``api_base`` where the managed one answers now, or the other
        way round (``api_base`` is not part of the digest); ``fresh`` and ``aligned`` give the
        same answers and mix."""
        recorded, served = meta.models.llm.prompt_cache, meta.models.llm.api_base
        if recorded == mode or {recorded, mode} <= {"fresh", "aligned"}:
            return
        if served is not None or mode is None:  # a local model's server at api_base, either side
            before = (
                f"the server at {served}, which evaluates prompts its own way"
                if recorded is None
                else f"the managed local server in {recorded!r}"
            )
            now = (
                f"the managed server in {mode!r}"
                if mode is not None
                else "a server at api_base, which evaluates prompts its own way"
            )
            raise RunError(f"{self.folder} holds answers from {before}; this run's are from "
                           f"{now}: mixing the two would mix two experiments, so pass another "
                           "--out-dir")  # fmt: skip
        if recorded is None:
            raise RunError(
                f"{self.folder} holds answers from the local server of a chainrag that did not "
                "record prompt_cache, and reused cached prompt prefixes; this run's server "
                f"evaluates prompts as {mode!r}: mixing the two would mix two experiments, so "
                "pass another --out-dir"
            )
        raise RunError(
            f"{self.folder} holds answers from the local server with prompt_cache "
            f"{recorded!r}; this run's is {mode!r}: mixing the two modes' answers would mix "
            "two experiments, so pass another --out-dir"
        )

    def stored_recipe(self) -> Recipe | None:
        """The folder's ``recipe.yaml`` as a recipe; None where it cannot be read (missing,
        damaged, or naming a plugin's components)."""
        from chainrag.recipes.recipe import parse_yaml, structure_stored

        path = self.folder / RECIPE_FILE
        try:
            return structure_stored(
                parse_yaml(path.read_text(encoding="utf-8"), str(path)), str(path)
            )
        except (ChainragError, OSError, UnicodeDecodeError):
            return None

    def method_notes(self) -> MethodNotes | None:
        """What the stored recipe says of its method (:func:`~chainrag.run.notes.notes_of`),
        for the records written before records held it; None where it cannot be read."""
        recipe = self.stored_recipe()
        return notes_of(recipe) if recipe is not None else None

    def same_recipe(self, recipe: Recipe, *, but_llm: bool = False) -> bool:
        """Whether the folder's ``recipe.yaml`` is ``recipe`` as far as its answers go
        (:func:`~chainrag.run.meta.answer_recipe`), compared as components, so that a parameter
        a component gained since (with its default) does not make it another; with ``but_llm``,
        whatever either's ``llm:`` says (its prompts are the same)."""
        stored = self.stored_recipe()
        if stored is None:
            return False
        mine = answer_recipe(stored_recipe(recipe))
        stored = answer_recipe(stored)
        llm = mine.llm if but_llm else stored.llm
        return attrs.evolve(stored, name=mine.name, description=mine.description, llm=llm) == mine

    def finish_session(self, end: SessionEnd) -> None:
        """Record how the current session ended (questions done, failed, wall time) and, for a
        recipe with remote encoders, where their values came from over the run's records
        (:func:`~chainrag.run.encoders.counted`); a session of a finished run that found
        nothing to do is dropped, so that restarting a script over finished runs leaves their
        run.json unchanged."""
        meta = self.meta()
        *before, last = meta.sessions
        ended = () if end.idle and before else (attrs.evolve(last, end=end),)
        sessions = (*before, *ended)
        encoders = counted(meta.encoders, self.records()[0]) if meta.encoders else ()
        meta = attrs.evolve(meta, sessions=sessions, encoders=encoders)
        write_json(self.folder / RUN_FILE, meta_data(meta))

    def records(self, *, repair: bool = False) -> tuple[list[RunRecord], int]:
        """The finished questions' records (first line per question id) and torn bytes cut; a
        line written before lines held its method's notes gets them from the stored recipe."""
        notes = functools.cache(self.method_notes)
        records, torn = finished(
            self.predictions_path, lambda data: read_record(data, notes), repair=repair
        )
        unique: dict[str, RunRecord] = {}
        for record in records:
            unique.setdefault(record.id, record)
        return list(unique.values()), torn

    def errors(self) -> list[QuestionError]:
        """The failed questions of every session (a question may fail in several)."""
        return finished(self.folder / ERRORS, read_error, repair=False)[0]
