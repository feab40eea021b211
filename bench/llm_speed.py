"""Speed of the LLM layer: the managed local server, and what caching and accounting add.

    .venv/bin/python bench/llm_speed.py [--models qwen2.5-coder-0.5b qwen2.5-coder-1.5b]
                                         [--repeats 3] [--calls 2000] [--evidence-words 1500]

Table 1, per local model: prompt processing in tokens/s (a ~400-token prompt, one output token)
and generation in tokens/s (a short prompt, up to 128 output tokens, prompt time subtracted),
median of the repeats; each repeat's prompt starts differently so llama.cpp's prompt cache
cannot help. Table 2, per local model: seconds of ChainRAG's last sufficiency check and the
sub-answer that follows it over the same evidence (about --evidence-words words), with the
v1 prompts (different system texts) and the v2 prompts (the same text up to the question, so
llama.cpp's prompt cache serves the second call). Table 3: microseconds per call that each
layer adds around a free, instant fake LLM (binding, metering, and the SQLite cache on a miss
and on a hit).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.judges import numbered
from chainrag.llm import open_llm
from chainrag.llm.cache import CachedLLM, ResponseCache
from chainrag.llm.fake import ScriptedLLM
from chainrag.llm.prompts import load_prompt
from chainrag.llm.stack import BoundLLM, MeteredLLM
from chainrag.protocols.llm import LLM
from chainrag.recipe import LLMSpec
from chainrag.types import LLMRequest, Message

FILLER = (
    "The river flows past the old mill, where the miller counts sacks of grain each morning "
    "and writes the numbers in a ledger kept since his grandfather's time. "
)


def _request(text: str, max_tokens: int) -> LLMRequest:
    return LLMRequest((Message("user", text),), "bench", max_tokens=max_tokens, temperature=0.0)


def server_speed(model: str, repeats: int) -> tuple[float, float, float]:
    """(prompt tokens/s, generation tokens/s, server start seconds) for one local model."""
    started = time.perf_counter()
    with open_llm(LLMSpec(model=model, temperature=0.0)) as llm:
        start_s = time.perf_counter() - started
        llm.complete(_request("Say hi.", 4))  # warm-up
        prompt_rates, prompt_s_per_token, gen_rates = [], [], []
        for i in range(repeats):
            long = f"Note {i}: " + FILLER * 14 + "\nSummarise the note in one word."
            r = llm.complete(_request(long, 1))
            prompt_rates.append(r.usage.prompt_tokens / r.usage.latency_s)
            prompt_s_per_token.append(r.usage.latency_s / r.usage.prompt_tokens)
        per_token = statistics.median(prompt_s_per_token)
        for i in range(repeats):
            ask = f"Run {i}. Count from 1 to 100, separated by commas."
            r = llm.complete(_request(ask, 128))
            gen_s = r.usage.latency_s - r.usage.prompt_tokens * per_token
            gen_rates.append(r.usage.completion_tokens / gen_s)
            print(f"  {model} repeat {i + 1}/{repeats} done", file=sys.stderr)
    return statistics.median(prompt_rates), statistics.median(gen_rates), start_s


def prefix_reuse(model: str, evidence_words: int) -> list[tuple[int, float, float, int]]:
    """(version, check s, sub-answer s, prompt tokens of each) for the v1 and v2 prompt pairs."""
    rows = []
    with open_llm(LLMSpec(model=model, temperature=0.0)) as llm:
        llm.complete(_request("Say hi.", 4))  # warm-up
        for version in (1, 2):
            # each version its own sentences, so neither finds the other's prefix cached
            sentences = [
                f"Sentence {i} of version {version}: " + FILLER.split(",")[0] + "."
                for i in range(evidence_words // 20)
            ]
            values = {"evidence": numbered(sentences), "question": "Who counts the grain sacks?"}
            check = llm.complete(load_prompt("sufficiency", version).request(**values))
            answer = llm.complete(load_prompt("answer_sub", version).request(**values))
            rows.append(
                (version, check.usage.latency_s, answer.usage.latency_s, check.usage.prompt_tokens)
            )
            print(f"  {model} prompts v{version} done", file=sys.stderr)
    return rows


def per_call_us(llm: LLM, requests: list[LLMRequest]) -> float:
    started = time.perf_counter()
    for r in requests:
        llm.complete(r)
    return (time.perf_counter() - started) / len(requests) * 1e6


def layer_overheads(calls: int) -> list[tuple[str, float]]:
    """Microseconds per call of each stack around an instant fake LLM."""
    fake = ScriptedLLM({"bench": lambda r: "ok"})
    unique = [_request(f"question {i}", 8) for i in range(calls)]
    rows: list[tuple[str, float]] = [("fake LLM alone", per_call_us(fake, unique))]
    rows.append(("+ bind", per_call_us(BoundLLM(fake, "m", 0.0, 8, 0), unique)))
    metered = MeteredLLM(BoundLLM(fake, "m", 0.0, 8, 0))
    rows.append(("+ bind + metering", per_call_us(metered, unique)))
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "c.sqlite")

        def full() -> LLM:
            return MeteredLLM(BoundLLM(CachedLLM(fake, cache), "m", 0.0, 8, 0))

        rows.append(("+ bind + metering + cache (miss, write)", per_call_us(full(), unique)))
        rows.append(("+ bind + metering + cache (hit)", per_call_us(full(), unique)))
        cache.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--evidence-words", type=int, default=1500)
    args = parser.parse_args()

    print("| model | server start (s) | prompt tokens/s | generation tokens/s |")
    print("|---|---|---|---|")
    for model in args.models:
        prompt, gen, start = server_speed(model, args.repeats)
        print(f"| {model} | {start:.1f} | {prompt:.0f} | {gen:.1f} |", flush=True)
    print()
    print("| model | prompts | prompt tokens | sufficiency check (s) | sub-answer after it (s) |")
    print("|---|---|---|---|---|")
    for model in args.models:
        for version, check_s, answer_s, tokens in prefix_reuse(model, args.evidence_words):
            row = f"| {model} | v{version} | {tokens} | {check_s:.1f} | {answer_s:.1f} |"
            print(row, flush=True)
    print()
    print("| layers around an instant fake LLM | µs per call |")
    print("|---|---|")
    for name, us in layer_overheads(args.calls):
        print(f"| {name} | {us:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
