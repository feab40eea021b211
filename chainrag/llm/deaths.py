"""A managed server's process that ended while it started, in words: how it ended, and what
that says — a llama.cpp build that cannot run on this CPU (SIGILL, SIGSEGV, SIGBUS), a kill from
outside with the memory it had (SIGKILL: the kernel's out-of-memory killer), or the log's last
lines.

    start_failure(-9, "on its start-up check", peak_kib, None, log, tail)
    # "the local LLM server was killed by signal SIGKILL on its start-up check: killed from ..."

Layer: llm; imports :mod:`chainrag.core`.
"""

from __future__ import annotations

import signal
from pathlib import Path

from chainrag.core.llama_build import LlamaBuild

CPU_SIGNALS = (signal.SIGILL, signal.SIGSEGV, signal.SIGBUS)
"""The signals a llama.cpp build that cannot run on this CPU dies of."""


def exit_words(code: int) -> str:
    """A process's end in words: ``was killed by signal SIGSEGV`` for a negative return code
    (Python's way of telling a signal), ``exited with code N`` otherwise."""
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def start_failure(
    code: int,
    when: str,
    peak_kib: int | None,
    build: LlamaBuild | None,
    log_path: Path,
    log_tail: str,
) -> str:
    """What a server whose process ended with return ``code`` ``when`` it started says:
    killed by SIGKILL, from outside (:func:`killed_message`); SIGILL, SIGSEGV or SIGBUS, a
    build that cannot run on this CPU (:func:`crash_message`); else how it ended, and its log."""
    death = exit_words(code)
    if code == -signal.SIGKILL:
        return killed_message(when, peak_kib, machine_memory_kib(), log_path, log_tail)
    if -code in CPU_SIGNALS:
        return crash_message(death, build, log_path, log_tail, when)
    return f"the local LLM server {death} {when}; its log ({log_path}) ends with:\n{log_tail}"


def killed_message(
    when: str,
    peak_kib: int | None,
    machine: tuple[int | None, int | None],
    log_path: Path,
    log_tail: str,
) -> str:
    """What a server killed by SIGKILL ``when`` it started says: that it was killed from
    outside (as the kernel's out-of-memory killer does), the memory it had at its peak
    (``peak_kib``, None if unknown) and the ``machine``'s (total, available now, in KiB), and
    what to do."""
    total, available = machine
    had = f"had {_size(peak_kib)} resident at its peak" if peak_kib else "had memory not measured"
    has = f"this machine has {_size(total)}" if total else "this machine's memory is unknown"
    free = f", {_size(available)} available now" if available is not None else ""
    return (
        f"the local LLM server was killed by signal SIGKILL {when}: killed from outside, not a "
        "crash — the kernel's out-of-memory killer does this when the machine runs out of "
        "memory (`dmesg` or `journalctl -k` then says 'Out of memory: Killed process').\n"
        f"  memory: the server {had}; {has}{free}.\n"
        "  what to do: free memory (other jobs, other servers on this machine), or use a "
        "smaller model (--llm qwen2.5-coder-0.5b) or context window (--set llm.n_ctx=4096), "
        "then run the same command again; nothing answered so far is lost.\n"
        f"  the server's log ({log_path}) ends with:\n{log_tail}"
    )


def peak_rss_kib(status: str) -> int | None:
    """A process's peak resident memory in KiB from its ``/proc/PID/status`` text (``VmHWM``,
    else ``VmRSS``); None where neither is there (not Linux, the process gone)."""
    fields = dict(line.partition(":")[::2] for line in status.splitlines())
    for name in ("VmHWM", "VmRSS"):
        words = fields.get(name, "").split()
        if words and words[0].isdigit():
            return int(words[0])
    return None


def machine_memory_kib(meminfo: Path = Path("/proc/meminfo")) -> tuple[int | None, int | None]:
    """This machine's memory in KiB: (total, available now), each None where unknown."""
    fields = dict(line.partition(":")[::2] for line in _read(meminfo).splitlines())
    values = [fields.get(name, "").split() for name in ("MemTotal", "MemAvailable")]
    total, available = (int(w[0]) if w and w[0].isdigit() else None for w in values)
    return total, available


def _read(path: Path) -> str:
    """A ``/proc`` file's text; empty where it cannot be read."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _size(kib: int | None) -> str:
    """``1.5 GiB``, or ``300 MiB`` below a GiB."""
    kib = kib or 0
    return f"{kib / 2**20:.1f} GiB" if kib >= 2**20 else f"{kib / 2**10:.0f} MiB"


def crash_message(
    death: str,
    build: LlamaBuild | None,
    log_path: Path,
    log_tail: str,
    when: str = "on its start-up check",
) -> str:
    """What a server that died of SIGILL, SIGSEGV or SIGBUS ``when`` it started says: how it
    died, the build, the CPU features the build uses, and what to do."""
    about = build.describe() if build is not None else "(llama-cpp-python's build is unknown)"
    check = " (one completion of about 300 prompt tokens)" if "check" in when else ""
    return (
        f"the local LLM server {death} {when}{check}: this llama.cpp build cannot run on "
        "this CPU.\n"
        f"  build: {about}\n"
        "  what to do: rebuild it for this CPU with `make llama-rebuild` (explicit CPU options, "
        "never AMX), or `make llama-rebuild LLAMA_CPU=avx2` for the most portable build, then "
        "run the same command again; nothing answered so far is lost. If it still dies, "
        "report it with this message.\n"
        f"  the server's log ({log_path}) ends with:\n{log_tail}"
    )


def process_peak_kib(pid: int) -> int | None:
    """The peak resident memory of the running process ``pid`` in KiB (:func:`peak_rss_kib`
    of its ``/proc`` status); None where it cannot be read."""
    return peak_rss_kib(_read(Path(f"/proc/{pid}/status")))
