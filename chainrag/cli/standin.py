"""``chainrag standin``: the stand-in for an OpenAI-compatible API, in the foreground, to test
a set-up (a recipe, a key, a provider's rate limits) without paying or reaching the network
(:mod:`chainrag.standin`; the tests and bench/api_throughput.py use the same server)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chainrag.cli.common import fail

LATENCY_HELP = (
    "Seconds each reply takes: S, fixed:S, or lognormal:MEDIAN:P99 (a heavy tail, seeded: "
    "lognormal:1:5 answers half within 1 s, 1 in 100 after 5 s)."
)
RATE_HELP = (
    "A provider's rate limit, 429 with Retry-After for a request that would be the "
    "(N+1)-th started within WINDOW seconds (5:1 refuses a sixth request within a second)."
)
EMBED_LATENCY_HELP = "Seconds each embedding reply takes, as --latency (default: --latency's)."
RERANK_LATENCY_HELP = ("Seconds each rerank reply takes, as --latency (default: "
                       "--embed-latency's, else --latency's).")  # fmt: skip
BURSTS_HELP = "429 to every request for FOR_S seconds of each EVERY_S (60:2)."
KEY_HELP = (
    "Refuse (401, OpenAI's message) any request without 'Authorization: Bearer KEY': run "
    "chainrag with OPENAI_API_KEY=KEY, or with llm.api_key_env naming a variable that holds it."
)


Port = Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")]
Key = Annotated[str | None, typer.Option(metavar="KEY", help=KEY_HELP)]
Rate = Annotated[str | None, typer.Option(metavar="N:WINDOW", help=RATE_HELP)]
Latency = Annotated[str, typer.Option(metavar="SPEC", help=LATENCY_HELP)]
EmbedLatency = Annotated[str | None, typer.Option(metavar="SPEC", help=EMBED_LATENCY_HELP)]
RerankLatency = Annotated[str | None, typer.Option(metavar="SPEC", help=RERANK_LATENCY_HELP)]
Bursts = Annotated[str | None, typer.Option(metavar="EVERY_S:FOR_S", help=BURSTS_HELP)]
Log = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Append one JSON line a request: when, the status, "
        "what it was (ok, probe, rate, burst, key refused), seconds, model, the "
        "prompt's size; never a key.",
    ),
]
PortFile = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Write the port to FILE once listening (for a script that starts it with --port 0).",
    ),
]


def standin(
    port: Port = 8000, key: Key = None, rate: Rate = None, latency: Latency = "0",
    bursts: Bursts = None, log: Log = None, port_file: PortFile = None,
    embed_latency: EmbedLatency = None, rerank_latency: RerankLatency = None,
) -> None:  # fmt: skip
    """Serve the stand-in for an OpenAI-compatible API on 127.0.0.1 until Ctrl-C: chainrag's
    prompts answered deterministically, with a provider's key check, rate limits, bursts and
    latency on demand, so that a recipe, a key or a pace is tried without paying.

    In another shell: chainrag run RECIPE --dataset musique --limit 3 --llm openai/stand-in
    --api-base http://127.0.0.1:8000/v1
    """
    from chainrag.standin.process import Settings, parse_latency, parse_pair, run_standin

    try:
        for spec in (latency, embed_latency, rerank_latency):
            if spec is not None:
                parse_latency(spec)
        limit = parse_pair(rate, "N:WINDOW") if rate else None
        if limit is not None and limit[0] != int(limit[0]):
            raise ValueError(f"{rate!r}: N, the requests a window, is a whole number")
        burst = parse_pair(bursts, "EVERY_S:FOR_S") if bursts else None
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    settings = Settings(port, key, (int(limit[0]), limit[1]) if limit else None, latency, burst,
                        log, embed_latency, rerank_latency)  # fmt: skip
    try:
        run_standin(settings, typer.echo, port_file)
    except OSError as exc:  # the log cannot be opened; the port is taken, or not ours
        if exc.filename is not None:
            raise fail(f"cannot write {exc.filename}: {exc.strerror or exc}") from None
        raise fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}; --port N for "
                   "another, --port 0 for a free one") from None  # fmt: skip
    except KeyboardInterrupt:
        typer.echo("stand-in stopped")
