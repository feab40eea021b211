"""What a run folder's ``run.json`` says about its run, typed: :class:`RunMeta`.

    meta = read_meta(json.loads(text))     # a RunMeta; RecordError naming every problem
    text = json.dumps(meta_data(meta))     # the same JSON object again

It records what was run (the recipe's name, file and digest, its method), on what (the dataset,
its file and fingerprint, and the corpus index a shared-corpus run searched), with what
(package versions, the LLM and every model file by a content identity) and one
:class:`Session` per ``chainrag run`` that worked on it, each ended by a :class:`SessionEnd`.
:mod:`chainrag.run.provenance` computes those identities (its names are importable from here
too, as before).
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import cattrs

from chainrag.core.credentials import strip_userinfo
from chainrag.core.llama_build import LlamaBuild
from chainrag.data.datasets import dataset_setting
from chainrag.recipes.recipe import Recipe
from chainrag.recipes.structure import InvalidValueError, describe, make_converter
from chainrag.run.provenance import (
    PACKAGES,
    access,
    answer_recipe,
    file_fingerprint,
    model_files,
    package_versions,
    recipe_digest,
    stored_recipe,
)
from chainrag.run.record import plain, structured

META_FORMAT = 1
"""The version of ``run.json``."""


@attrs.frozen
class LLMIdentity:
    """The LLM that answered: its kind and model, the endpoint (without userinfo), for a local
    GGUF model its file and pinned sha256, and for the server chainrag starts itself how it
    treated prompts (``prompt_cache``: ``fresh``, every prompt evaluated in full; ``aligned``,
    the previous prompt's whole chunks kept, with fresh's answers; or ``reuse``, a cached prefix
    reused; absent for other LLMs and in runs made before it was recorded). That is the mode
    the run began in: a run may go on in ``fresh`` or ``aligned`` alike (the same answers), and
    each :class:`Session` records its own."""

    kind: str
    model: str
    api_base: str | None = None
    file: str | None = None
    sha256: str | None = None
    prompt_cache: str | None = None


@attrs.frozen
class ModelIdentities:
    """The LLM, and every model file or folder the recipe uses by a content identity."""

    llm: LLMIdentity
    files: Mapping[str, str]


@attrs.frozen
class IndexIdentity:
    """The prebuilt corpus index a shared-corpus run answered over (from its manifest)."""

    folder: str
    recipe_digest: str
    sources: tuple[str, ...]
    corpus_sha256: str
    counts: Mapping[str, Any]  # the corpus manifest's counts, compared as they are

    def key(self) -> tuple[str, str, Mapping[str, Any]]:
        """What must not change between the sessions of a run (not where the index lies)."""
        return self.recipe_digest, self.corpus_sha256, self.counts


def dataset_identity(dataset: str, dataset_file: Path) -> tuple[str, str | None]:
    """The dataset's part of a run's identity: its file's fingerprint and its setting (read
    once for every recipe over it)."""
    return file_fingerprint(dataset_file), dataset_setting(dataset)


@attrs.frozen
class RunIdentity:
    """What makes a run folder this run's, computed once per planned run
    (:func:`RunIdentity.of`) and compared with a folder's ``run.json`` when the run is planned
    and again when it starts: the recipe's digest, the dataset (its name, file, file
    fingerprint and setting), the corpus index, and for a run whose questions are fixed when
    it starts (the recurring experiment, whose phases ask them in turn) their ids."""

    recipe_digest: str
    dataset: str
    dataset_file: Path
    dataset_fingerprint: str
    dataset_setting: str | None
    index: IndexIdentity | None = None
    questions: tuple[str, ...] | None = None
    """The question ids, in order, of a run that may not take others on a resume; None for a
    run that may (``chainrag run --limit`` grown from one session to the next)."""

    @classmethod
    def of(
        cls, recipe: Recipe, dataset: str, dataset_file: Path, index: IndexIdentity | None = None
    ) -> RunIdentity:
        """The identity of ``recipe`` over ``dataset`` (read from ``dataset_file``)."""
        fingerprint, setting = dataset_identity(dataset, dataset_file)
        return cls(recipe_digest(recipe), dataset, dataset_file, fingerprint, setting, index)

    @staticmethod
    def digest(recipe: Recipe) -> str:
        """The recipe's part of an identity: :func:`recipe_digest`."""
        return recipe_digest(recipe)


@attrs.frozen
class Host:
    machine: str
    cpus: int | None


@attrs.frozen
class SessionEnd:
    """How a session ended: questions answered and failed, how many were already done, wall
    time, bytes of a torn last line cut, and the signal or error that stopped it, if one did."""

    finished: str
    answered: int
    failed: int
    resumed_from: int
    wall_s: float
    torn_bytes_repaired: int
    interrupted: str | None = None
    stopped: str | None = None
    """The error that ended the session before its questions were done (the managed server
    died twice), if one did."""

    @property
    def idle(self) -> bool:
        """Whether the session found nothing to do."""
        busy = (
            self.answered, self.failed, self.torn_bytes_repaired, self.interrupted, self.stopped
        )  # fmt: skip
        return not any(busy)


@attrs.frozen
class Session:
    """One ``chainrag run`` on the folder: when, how it was called, where; ``end`` once it
    ended (a session killed outright has none). Its JSON object holds ``end``'s keys beside
    its own."""

    started: str
    argv: tuple[str, ...]
    host: Host
    end: SessionEnd | None = None
    prompt_cache: str | None = None
    """The managed server's mode in this session (sessions before it was recorded: absent)."""
    llama_build: LlamaBuild | None = None
    """The llama.cpp build the managed server ran in this session: answers are reproducible per
    build, not across builds (absent for other LLMs and before it was recorded)."""

    changes: tuple[str, ...] = ()
    """The command line's changes to the recipe file (``--llm NAME``, ``--set PATH=VALUE``)."""

    devices: Mapping[str, str] = attrs.field(factory=dict)
    """Where each encoder of the recipe ran in this session, by its path in the recipe
    (``{"index.embedder": "cuda"}``; :mod:`chainrag.core.device`); absent for a recipe without
    one and before it was recorded."""

    access: Mapping[str, Any] = attrs.field(factory=dict)
    """How this session reached the LLM (:func:`~chainrag.run.provenance.access`: ``api_base``
    without userinfo, ``concurrency``, ``timeout_s``, ``max_retries``), which is not part of the
    recipe's digest; absent before it was recorded."""

    encoder_access: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    """How this session reached each remote encoder, by its path in the recipe
    (:func:`~chainrag.run.provenance.encoder_access`: ``api_base`` without userinfo,
    ``concurrency``, ``timeout_s``, ``max_retries``, its pacing), which is not part of the
    recipe's digest; absent for a recipe without one and before it was recorded."""

    @classmethod
    def now(
        cls,
        prompt_cache: str | None = None,
        llama_build: LlamaBuild | None = None,
        changes: tuple[str, ...] = (),
        devices: Mapping[str, str] | None = None,
        access: Mapping[str, Any] | None = None,
        encoder_access: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Session:
        host = Host(platform.machine(), os.cpu_count())
        when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        return cls(when, tuple(sys.argv), host, prompt_cache=prompt_cache,
                   llama_build=llama_build, changes=changes,
                   devices=dict(devices or {}), access=dict(access or {}),
                   encoder_access=dict(encoder_access or {}))  # fmt: skip


@attrs.frozen
class EncoderRecord:
    """A remote encoder of the run (an embedder, a reranker) and where its values came from,
    summed over the run's records: ``sent``, the texts sent to the provider (in ``requests``),
    and ``stored``, the texts whose vector or score the store held, so that a reader sees a
    replay needed no provider (``sent`` 0). ``path``: where the recipe names it;
    ``endpoints``: the endpoint identities it was reached at (model and normalised
    ``api_base``, one a session that changed it); ``stages``: what its counts are the sum of
    (a record's ``encoder_usage`` stages, which two encoders of one kind would share)."""

    path: str
    model: str
    endpoints: tuple[str, ...]
    stages: tuple[str, ...]
    requests: int = 0
    sent: int = 0
    stored: int = 0


def last_build(sessions: tuple[Session, ...]) -> LlamaBuild | None:
    """The llama.cpp build of the latest session that recorded one."""
    return next((s.llama_build for s in reversed(sessions) if s.llama_build), None)


@attrs.frozen
class RunMeta:
    """A run folder's ``run.json`` (see the module docstring)."""

    format: int
    recipe_name: str
    recipe_description: str
    recipe_file: str
    recipe_digest: str
    method: str
    dataset: str
    dataset_file: str
    dataset_fingerprint: str
    packages: Mapping[str, str]
    models: ModelIdentities
    sessions: tuple[Session, ...]
    index: IndexIdentity | None = None
    dataset_setting: str | None = None
    """What a derived dataset (``long:NAME``, ``long:NAME:PATH``) did to the file's questions
    and the format a file given by its path was read in; None for a named file as it is."""
    questions: tuple[str, ...] | None = None
    """The question ids of a run whose questions are fixed when it starts
    (:attr:`RunIdentity.questions`); None for a run of ``chainrag run``."""
    encoders: tuple[EncoderRecord, ...] = ()
    """The recipe's remote encoders and where their values came from (absent for a recipe
    without one and before it was recorded)."""
    experiment: str | None = None
    """The experiment whose folder this is, or whose part (``recurring``: the experiment's
    folder, whose results are its phases' run folders and ``table.md``, and each phase's run
    folder), which ``chainrag run``, ``report`` and ``view`` leave alone; None for a run."""


# --------------------------------------------------------------------------- JSON


def _unstructure_session(session: Session) -> dict[str, Any]:
    own = {"started": session.started, "argv": list(session.argv), "host": plain(session.host)}
    if session.prompt_cache is not None:
        own["prompt_cache"] = session.prompt_cache
    if session.llama_build is not None:
        own["llama_build"] = plain(session.llama_build, _CONVERTER)
    if session.changes:
        own["changes"] = list(session.changes)
    if session.devices:
        own["devices"] = dict(session.devices)
    if session.access:
        own["access"] = dict(session.access)
    if session.encoder_access:
        own["encoder_access"] = {k: dict(v) for k, v in session.encoder_access.items()}
    return own | (plain(session.end, _CONVERTER) if session.end is not None else {})


SESSION_KEYS = (
    "started", "argv", "host", "prompt_cache", "llama_build", "changes", "devices", "access",
    "encoder_access",
)  # fmt: skip
"""A session's own keys in its JSON object; the others are its end's."""


def _structure_session(data: Any, _: type) -> Session:
    if not isinstance(data, Mapping):
        raise InvalidValueError(f"expected a mapping, got {describe(data)}")
    own = {k: v for k, v in data.items() if k in SESSION_KEYS}
    end = {k: v for k, v in data.items() if k not in own}
    session: Session = _session_fields(own | ({"end": end} if end else {}), Session)
    return session


def _make() -> cattrs.Converter:
    conv = make_converter()
    conv.register_unstructure_hook(Session, _unstructure_session)
    conv.register_structure_hook(Session, _structure_session)
    for cls in (LLMIdentity, SessionEnd, RunMeta, LlamaBuild):  # unset optional keys left out
        omit = cattrs.gen.make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=True)
        conv.register_unstructure_hook(cls, omit)
    return conv


_CONVERTER = _make()
_session_fields = cattrs.gen.make_dict_structure_fn(
    Session, _CONVERTER, _cattrs_forbid_extra_keys=True
)


def meta_data(meta: RunMeta) -> dict[str, Any]:
    """``meta`` as the JSON object of ``run.json`` (unset optional keys left out)."""
    return plain(meta, _CONVERTER)  # type: ignore[no-any-return]


def read_meta(data: Any) -> RunMeta:
    """The :class:`RunMeta` of a ``run.json`` object; a RecordError listing its problems."""
    return structured(data, RunMeta, "run", _CONVERTER)


# --------------------------------------------------------------------------- identities


def model_identities(recipe: Recipe, prompt_cache: str | None = None) -> ModelIdentities:
    """What answered: the LLM (with the pinned sha256 of a local GGUF, and ``prompt_cache``, the
    managed server's mode, which the caller knows from the LLM layer) and every model file or
    folder the recipe names or defaults to (embedders, rerankers, NLI models), by a content
    identity."""
    from chainrag.recipes.models import get_model

    llm = LLMIdentity(recipe.llm.kind, recipe.llm.model, prompt_cache=prompt_cache)
    if recipe.llm.api_base:
        llm = attrs.evolve(llm, api_base=strip_userinfo(recipe.llm.api_base))
    if recipe.llm.kind == "local_gguf":
        local = get_model(recipe.llm.model)
        llm = attrs.evolve(llm, file=local.filename, sha256=local.sha256)
    return ModelIdentities(llm, model_files(recipe))


__all__ = [
    "META_FORMAT",
    "PACKAGES",
    "EncoderRecord",
    "Host",
    "IndexIdentity",
    "LLMIdentity",
    "ModelIdentities",
    "RunIdentity",
    "RunMeta",
    "Session",
    "SessionEnd",
    "access",
    "answer_recipe",
    "dataset_identity",
    "file_fingerprint",
    "last_build",
    "meta_data",
    "model_identities",
    "package_versions",
    "read_meta",
    "recipe_digest",
    "stored_recipe",
]
