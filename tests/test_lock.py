"""The lock pins every package the set-up installs, each with hashes (issue 19, item 10)."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
LLAMA = ROOT / "requirements" / "llama.txt"  # compiled by the set-up (scripts/llama_build.py)


def pins() -> dict[str, tuple[str, int]]:
    """Normalised name → (version, number of hashes) of every requirement in the lock and in
    requirements/llama.txt."""
    text = (LOCK.read_text() + LLAMA.read_text()).replace("\\\n", " ")
    found = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, rest = line.partition("==")
        version = rest.split()[0]
        found[re.sub(r"[-_.]+", "-", name).lower()] = (version, rest.count("--hash=sha256:"))
    return found


def test_every_pin_carries_hashes() -> None:
    locked = pins()
    assert {"setuptools", "pip", "torch", "litellm"} <= locked.keys()
    assert all(n >= 1 for _, n in locked.values()), [k for k, (_, n) in locked.items() if not n]
    assert locked["torch"][0] == "2.13.0+cpu"
    assert locked["llama-cpp-python"] == ("0.3.36", 1)  # its sdist: the set-up compiles it
    assert "\nllama_cpp_python==" not in LOCK.read_text()  # never installed from the lock


def test_every_installed_package_is_pinned_at_its_installed_version() -> None:
    """Every distribution in the environment's site-packages (what the set-up installed; not
    whatever another test put on sys.path for a while) is in the lock at its version."""
    import site

    locked = pins()
    for dist in metadata.distributions(path=site.getsitepackages()):
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        if name == "chainrag":
            continue
        assert name in locked, f"{name} is installed but not in {LOCK.name} or {LLAMA.name}"
        assert locked[name][0] == dist.version, f"{name}: lock {locked[name][0]}, {dist.version}"
