"""Print requirements/lock.txt from the current environment, every pin with its hashes.

    make lock    # runs: .venv/bin/python scripts/write_lock.py > requirements/lock.txt

Every package the set-up installs is pinned (``pip freeze --all``: setuptools and pip
included, the editable chainrag excluded) with the sha256 of every file of that exact
version found on the package indexes pip is configured with and on the public index
(https://pypi.org/simple), and of the wheels in pip's ``find-links`` folders, so that
``pip install --require-hashes`` accepts the release files of that version from any of them and
nothing else. A pin whose files are found nowhere is an error: the lock would be unusable.
llama-cpp-python is left out: the set-up compiles it for the CPU from the sdist pinned in
requirements/llama.txt (scripts/llama_build.py), which is kept by hand.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

HEADER_LINES = 7
BUILT_BY_SETUP = {"llama-cpp-python": "requirements/llama.txt"}
"""Packages the set-up compiles itself, pinned in their own file."""
PUBLIC_INDEX = "https://pypi.org/simple"
LINK = re.compile(r'href="([^"]+)"', re.IGNORECASE)


def normalise(name: str) -> str:
    """PEP 503's normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def file_version(filename: str, project: str) -> str | None:
    """The version of a wheel or sdist file of ``project``, or None if it is another's."""
    stem = re.sub(r"(\.tar\.gz|\.zip|\.whl)$", "", filename)
    if stem == filename:
        return None
    parts = stem.split("-")
    for i in range(1, len(parts)):
        if normalise("-".join(parts[:i])) == project:
            return parts[i]
    return None


def matches(version: str | None, pin: str) -> bool:
    """Whether a file's version is exactly the pinned one, local label (``+cpu``) included."""
    return version is not None and version.lower() == pin.lower()


def pip_setting(key: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    values: list[str] = []
    for line in out.splitlines():
        name, _, value = line.partition("=")
        if name.split(".")[-1] == key:
            values += value.strip().strip("'\"").split()
    return values


def index_hashes(index: str, project: str, pin: str) -> set[str]:
    """sha256 fragments of the pinned version's files on a simple index (PEP 503)."""
    url = f"{index.rstrip('/')}/{project}/"
    page_url = url + "index.html" if url.startswith("file:") else url
    try:
        with urllib.request.urlopen(page_url, timeout=60) as page:  # noqa: S310 - pip's own indexes
            html = page.read().decode("utf-8", "replace")
    except OSError:
        return set()
    found = set()
    for href in LINK.findall(html):
        target = urljoin(url, href)
        filename = unquote(Path(urlparse(target).path).name)
        digest = urlparse(target).fragment
        if matches(file_version(filename, project), pin) and digest.startswith("sha256="):
            found.add(digest.removeprefix("sha256="))
    return found


def folder_hashes(folders: Iterable[str], project: str, pin: str) -> set[str]:
    found = set()
    for folder in folders:
        for path in Path(folder.removeprefix("file://")).glob("*"):
            if path.is_file() and matches(file_version(path.name, project), pin):
                found.add(hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def main() -> int:
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all", "--exclude-editable"],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    indexes = [*pip_setting("index-url"), *pip_setting("extra-index-url"), PUBLIC_INDEX]
    links = pip_setting("find-links")
    header = Path("requirements/lock.txt").read_text().splitlines()[:HEADER_LINES]
    lines, missing = list(header), []
    for pin in sorted(frozen, key=str.lower):
        name, _, version = pin.partition("==")
        project = normalise(name)
        if project in BUILT_BY_SETUP:
            print(f"{name}=={version}: pinned in {BUILT_BY_SETUP[project]}", file=sys.stderr)
            continue
        hashes = folder_hashes(links, project, version)
        for index in dict.fromkeys(indexes):
            hashes |= index_hashes(index, project, version)
        if not hashes:
            missing.append(pin)
        lines.append(f"{name}=={version} \\")
        lines += [f"    --hash=sha256:{h} \\" for h in sorted(hashes)]
        lines[-1] = lines[-1].removesuffix(" \\")
        print(f"{name}=={version}: {len(hashes)} file(s)", file=sys.stderr)
    if missing:
        print(f"no release file found for: {', '.join(missing)}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
