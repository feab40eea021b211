"""Speed of the LLM layer: the managed local server, and what caching and accounting add.

    .venv/bin/python bench/llm_speed.py [--models qwen2.5-coder-0.5b qwen2.5-coder-1.5b]
                                         [--repeats 3] [--calls 2000] [--evidence-words 1500]
                                         [--tables speed prefix layers modes]
                                         [--questions 10] [--orders 3] [--cold 5]
                                         [--modes fresh aligned reuse]
                                         [--builds avx2=WHEEL avx512=WHEEL] [--rounds 3]

Table 1, per local model: prompt processing in tokens/s (a ~400-token prompt, one output token)
and generation in tokens/s (a short prompt, up to 128 output tokens, prompt time subtracted),
median of the repeats; each repeat's prompt starts differently so llama.cpp's prompt cache
cannot help. With ``--builds NAME=WHEEL ...`` it compares llama-cpp-python builds (wheels, such
as those scripts/llama_build.py keeps in ~/.cache/chainrag/wheels) side by side in one run, the
builds alternating over ``--rounds`` rounds.

Table 2, per local model: seconds of ChainRAG's last sufficiency check and the
sub-answer that follows it over the same evidence (about --evidence-words words), with the
v1 prompts (different system texts) and the v2 prompts (the same text up to the question, so
llama.cpp's prompt cache serves the second call). Table 3: microseconds per call that each
layer adds around a free, instant fake LLM (binding, metering, and the SQLite cache on a miss
and on a hit). Table 2 runs the server with ``prompt_cache: reuse``; the others with the default.

Table 4, per local model and ``prompt_cache`` mode (--modes; ``fresh``: every prompt evaluated
in full; ``aligned``: the previous prompt's whole n_batch chunks kept; ``reuse``: llama.cpp's
prefix reuse): a ChainRAG-like mix of requests for --questions MuSiQue
dev questions (per question: decomposition, two sufficiency checks and a sub-answer per gold
step over its paragraphs, the step's rewrite, AnsInt and CxtInt; values fixed in advance, so
every order sends identical requests), sent in ChainRAG's order and then in --orders - 1
shuffled orders, with the recipes' sampling (temperature 0.2, seed 0; the yes/no checks 0.0).
"flipped" counts the requests that did not get one answer in every order; seconds per request
and per question (ChainRAG's order) time each mode. Below it: how many answers of each other
mode (ChainRAG's order) differ from the fresh mode's, and how many fresh answers equal the
answer of a just-started server (its first request) for --cold sampled requests.
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.retrieval.judges import numbered
from chainrag.core.types import LLMRequest, LLMResponse, Message, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.llm import PromptCache, open_llm
from chainrag.llm.cache import CachedLLM, ResponseCache
from chainrag.llm.fake import ScriptedLLM
from chainrag.llm.prompts import load_prompt
from chainrag.llm.stack import BoundLLM, MeteredLLM
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import LLMSpec

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
    with open_llm(LLMSpec(model=model, temperature=0.0, prompt_cache="reuse")) as llm:
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


SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MODES: tuple[PromptCache, ...] = ("fresh", "aligned", "reuse")


def _sentences(example: QAExample, first: int | None) -> list[str]:
    """The example's sentences, those of passage ``first`` (a step's gold paragraph) first."""
    order = list(range(len(example.passages)))
    if first is not None and first in order:
        order.remove(first)
        order.insert(0, first)
    texts = (example.passages[i].text for i in order)
    return [s for text in texts for s in SENTENCE_END.split(text) if s.strip()]


def _leading(sentences: list[str], words: int) -> list[str]:
    """The leading sentences within ``words`` words (at least one)."""
    out: list[str] = []
    total = 0
    for sentence in sentences:
        total += len(sentence.split())
        if out and total > words:
            break
        out.append(sentence)
    return out


def question_requests(example: QAExample, evidence_words: int) -> list[LLMRequest]:
    """The requests ChainRAG makes for one question, in its order, with values fixed in advance.

    Gold steps stand for the decomposition, gold answers for the sub-answers; each step's
    evidence starts with its gold paragraph, checked at half and at full size, and the
    sub-answer reads the same evidence as the last check (the prefix llama.cpp can reuse).
    """
    requests = [load_prompt("decompose").request(question=example.question)]
    pairs: list[str] = []
    for step in example.decomposition[:3]:
        question = re.sub(r"#\d", "it", step.question)
        if pairs:
            history = "\n".join(pairs)
            requests.append(load_prompt("rewrite").request(history=history, question=question))
        sentences = _sentences(example, step.paragraph)
        for words in (evidence_words // 2, evidence_words):
            evidence = numbered(_leading(sentences, words))
            requests.append(
                load_prompt("sufficiency").request(evidence=evidence, question=question)
            )
        requests.append(load_prompt("answer_sub").request(evidence=evidence, question=question))
        pairs.append(f"Q: {question}\nA: {step.answer}")
    requests.append(
        load_prompt("ansint").request(pairs="\n".join(pairs), question=example.question)
    )
    context = numbered(_leading(_sentences(example, None), 2 * evidence_words))
    requests.append(load_prompt("cxtint").request(evidence=context, question=example.question))
    return requests


@attrs.frozen
class ModeRun:
    """One mode's answers and seconds: ``answers[o][i]`` for request ``i`` in order ``o``."""

    answers: list[list[str]]
    seconds: list[list[float]]
    prompt_tokens: list[int]


def run_mode(
    model: str, mode: PromptCache, requests: list[LLMRequest], orders: list[list[int]]
) -> ModeRun:
    """Send every request once per order (a permutation of their indexes) to one server."""
    answers = [[""] * len(requests) for _ in orders]
    seconds = [[0.0] * len(requests) for _ in orders]
    tokens = [0] * len(requests)
    with open_llm(LLMSpec(model=model, prompt_cache=mode)) as llm:
        llm.complete(_request("Say hi.", 4))  # warm-up
        for o, order in enumerate(orders):
            for n, i in enumerate(order, 1):
                response = llm.complete(requests[i])
                answers[o][i] = response.text
                seconds[o][i] = response.usage.latency_s
                tokens[i] = response.usage.prompt_tokens
                if n % 10 == 0 or n == len(order):
                    label = f"{model} {mode} order {o + 1}/{len(orders)}"
                    print(f"  {label}: {n}/{len(order)} requests", file=sys.stderr, flush=True)
    return ModeRun(answers, seconds, tokens)


def cold_answers(model: str, requests: list[LLMRequest], indexes: list[int]) -> list[str]:
    """Each request's answer as the first request of a just-started (unmodified) server."""
    out = []
    for n, i in enumerate(indexes, 1):
        with open_llm(LLMSpec(model=model, prompt_cache="reuse")) as llm:
            out.append(llm.complete(requests[i]).text)
        print(f"  {model} cold starts: {n}/{len(indexes)}", file=sys.stderr, flush=True)
    return out


def modes_table(
    model: str,
    questions: int,
    n_orders: int,
    evidence_words: int,
    n_cold: int,
    modes: tuple[PromptCache, ...] = MODES,
) -> list[str]:
    """Table 4's rows for one model, then its comparison lines (against ``fresh``, when it is
    among ``modes``)."""
    per_question = [
        question_requests(example, evidence_words)
        for example in load_dataset("musique", limit=questions)
    ]
    requests = [r for group in per_question for r in group]
    rng = random.Random(0)
    natural = list(range(len(requests)))
    orders = [natural] + [rng.sample(natural, len(natural)) for _ in range(n_orders - 1)]
    runs = {mode: run_mode(model, mode, requests, orders) for mode in modes}
    rows = []
    bounds = [sum(len(g) for g in per_question[:q]) for q in range(len(per_question) + 1)]
    for mode, run in runs.items():
        flipped = sum(len({a[i] for a in run.answers}) > 1 for i in natural)
        unlike = sum(a[i] != run.answers[0][i] for a in run.answers[1:] for i in natural)
        per_request = statistics.mean(s for order in run.seconds for s in order)
        chainrag_order = run.seconds[0]
        per_q = statistics.mean(sum(chainrag_order[a:b]) for a, b in itertools.pairwise(bounds))
        tokens_q = sum(run.prompt_tokens) / len(per_question)
        rows.append(
            f"| {model} | {mode} | {len(requests)} × {len(orders)} | {flipped} | "
            f"{unlike} of {len(requests) * (len(orders) - 1)} | {per_request:.2f} | "
            f"{per_q:.1f} | {tokens_q:.0f} |"
        )
    if "fresh" not in runs:
        return rows
    fresh = runs["fresh"].answers[0]
    rows.append("")
    for mode in (m for m in runs if m != "fresh"):
        differ = sum(f != a for f, a in zip(fresh, runs[mode].answers[0], strict=True))
        rows.append(f"{model}: {mode}'s answers unlike fresh's (ChainRAG's order): "
                    f"{differ} of {len(requests)}")  # fmt: skip
    if n_cold:
        picked = sorted(rng.sample(natural, min(n_cold, len(natural))))
        cold = cold_answers(model, requests, picked)
        same = sum(c == fresh[i] for c, i in zip(cold, picked, strict=True))
        rows.append(f"{model}: fresh answers equal to a just-started server's first answer: "
                    f"{same} of {len(picked)}")  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--evidence-words", type=int, default=1500,
                        help="table 2's words; table 4's per step (CxtInt's: twice)")  # fmt: skip
    parser.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES))
    parser.add_argument("--questions", type=int, default=10, help="table 4: MuSiQue questions")
    parser.add_argument("--orders", type=int, default=3, help="table 4: ChainRAG's + shuffled")
    parser.add_argument("--cold", type=int, default=5, help="table 4: cold-start comparisons")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                        help="table 4: prompt_cache modes")  # fmt: skip
    parser.add_argument("--builds", nargs="+", metavar="NAME=WHEEL",
                        help="table 1: compare llama-cpp-python wheels side by side")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="table 1 with --builds: rounds")
    parser.add_argument("--delay-s", type=float, default=0.2,
                        help="table replay: seconds of each live (fake) request")  # fmt: skip
    parser.add_argument("--live", type=int, default=100,
                        help="table replay: at most this many live requests")  # fmt: skip
    args = parser.parse_args()
    if args.orders < 2:
        parser.error("--orders must be at least 2 (ChainRAG's order and a shuffled one)")
    for table in args.tables:
        TABLES[table](args)
        print()
    return 0


def speed(args: argparse.Namespace) -> None:
    if args.builds:
        build_speeds(args)
        return
    print("| model | server start (s) | prompt tokens/s | generation tokens/s |")
    print("|---|---|---|---|")
    for model in args.models:
        prompt, gen, start = server_speed(model, args.repeats)
        print(f"| {model} | {start:.1f} | {prompt:.0f} | {gen:.1f} |", flush=True)


IN_BUILD = (
    "import json, sys; sys.path.insert(0, {bench!r}); import llm_speed, llama_cpp; "
    "p, g, s = llm_speed.server_speed({model!r}, {repeats}); "
    "info = llama_cpp.llama_print_system_info().decode(); "
    "print(json.dumps([p, g, s, llama_cpp.__file__, info]))"
)


def build_speeds(args: argparse.Namespace) -> None:
    """Table 1 for several llama-cpp-python builds (--builds NAME=WHEEL): each wheel unpacked
    into its own folder and put first on PYTHONPATH of a child that runs
    :func:`server_speed` (its server inherits it), the builds alternating round by round
    (--rounds) so that a drift of the machine falls on all of them; per build the median of
    its rounds, and the spread (min-max) of the rounds."""
    import json
    import os
    import subprocess
    import zipfile

    builds = dict(b.split("=", 1) for b in args.builds)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, wheel in builds.items():
            paths[name] = Path(tmp) / name
            zipfile.ZipFile(wheel).extractall(paths[name])
            for lib in (paths[name] / "llama_cpp" / "lib").iterdir():
                lib.chmod(0o755)
        print("| model | build | prompt tokens/s | (rounds) | generation tokens/s | (rounds) "
              "| CPU features |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        for model in args.models:
            got: dict[str, list[list[object]]] = {name: [] for name in builds}
            for r in range(args.rounds):
                for name in builds:
                    code = IN_BUILD.format(bench=str(Path(__file__).parent), model=model,
                                           repeats=args.repeats)  # fmt: skip
                    env = {**os.environ, "PYTHONPATH": str(paths[name])}
                    done = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                          capture_output=True, text=True)  # fmt: skip
                    row = json.loads(done.stdout.strip().splitlines()[-1])
                    assert str(paths[name]) in row[3], f"{name}: another llama_cpp was loaded"
                    got[name].append(row)
                    print(f"  {model} {name} round {r + 1}/{args.rounds}: {row[0]:.0f} / "
                          f"{row[1]:.1f} tokens/s", file=sys.stderr)  # fmt: skip
            for name, rows in got.items():
                prompt = [float(row[0]) for row in rows]  # type: ignore[arg-type]
                gen = [float(row[1]) for row in rows]  # type: ignore[arg-type]
                features = " ".join(
                    part.split("=")[0].split(":")[-1].strip()
                    for part in str(rows[0][4]).split("|") if part.strip().endswith("= 1")
                )  # fmt: skip
                print(f"| {model} | {name} | {statistics.median(prompt):.0f} | "
                      f"{min(prompt):.0f}-{max(prompt):.0f} | {statistics.median(gen):.1f} | "
                      f"{min(gen):.1f}-{max(gen):.1f} | {features} |", flush=True)  # fmt: skip


def prefix(args: argparse.Namespace) -> None:
    print("| model | prompts | prompt tokens | sufficiency check (s) | sub-answer after it (s) |")
    print("|---|---|---|---|---|")
    for model in args.models:
        for version, check_s, answer_s, tokens in prefix_reuse(model, args.evidence_words):
            row = f"| {model} | v{version} | {tokens} | {check_s:.1f} | {answer_s:.1f} |"
            print(row, flush=True)


def layers(args: argparse.Namespace) -> None:
    print("| layers around an instant fake LLM | µs per call |")
    print("|---|---|")
    for name, us in layer_overheads(args.calls):
        print(f"| {name} | {us:.1f} |")


def modes(args: argparse.Namespace) -> None:
    print("| model | prompt cache | requests × orders | flipped | answers unlike ChainRAG's "
          "order | s/request | s/question | prompt tokens/question |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for model in args.models:
        rows = modes_table(model, args.questions, args.orders, args.evidence_words, args.cold,
                           tuple(args.modes))  # fmt: skip
        for row in rows:
            print(row, flush=True)


class DelayedLLM:
    """A scripted fake LLM that takes ``delay_s`` a request (a live request's time)."""

    def __init__(self, delay_s: float) -> None:
        self.inner = ScriptedLLM({"bench": lambda r: "ok"})
        self.delay_s = delay_s
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        time.sleep(self.delay_s)
        self.calls += 1
        return self.inner.complete(request)


def replay_seconds(
    limit_below_cache: bool, questions: int, delay_s: float, live_max: int
) -> tuple[float, int]:
    """(seconds to replay ``questions`` cached answers, live requests made meanwhile) with one
    LLM slot, while another thread sends live requests without pause (at most ``live_max``,
    so that a starved replay still ends): the slot around the whole stack
    (``LimitedLLM(BoundLLM(CachedLLM(...)))``, as runs had it) or between the response cache
    and the backend (as :func:`chainrag.llm.open_llm` puts it now)."""
    import threading

    from chainrag.llm.stack import LimitedLLM

    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "c.sqlite")
        fake = DelayedLLM(delay_s)
        warm = BoundLLM(CachedLLM(fake, cache), "m", 0.0, 8, 0)
        replayed = [_request(f"replayed question {i}", 8) for i in range(questions)]
        for r in replayed:
            warm.complete(r)  # the warm cache
        if limit_below_cache:
            llm: LLM = BoundLLM(CachedLLM(LimitedLLM.at_most(fake, 1), cache), "m", 0.0, 8, 0)
        else:
            llm = LimitedLLM.at_most(BoundLLM(CachedLLM(fake, cache), "m", 0.0, 8, 0), 1)
        stop, before = threading.Event(), fake.calls

        def live() -> None:
            for i in range(live_max):
                if stop.is_set():
                    return
                llm.complete(_request(f"live question {i}", 8))

        thread = threading.Thread(target=live)
        thread.start()
        time.sleep(delay_s / 2)  # a live request is in flight
        started = time.perf_counter()
        for r in replayed:
            llm.complete(r)
        seconds = time.perf_counter() - started
        stop.set()
        thread.join()
        cache.close()
        return seconds, fake.calls - before


def replay(args: argparse.Namespace) -> None:
    print(f"| LLM slot (1) | replay of {args.questions} cached answers (s) | live requests made "
          f"meanwhile (each {args.delay_s:g} s) |")  # fmt: skip
    print("|---|---|---|")
    for below, name in ((False, "around the whole stack (before)"),
                        (True, "between the cache and the backend (now)")):  # fmt: skip
        seconds, live = replay_seconds(below, args.questions, args.delay_s, args.live)
        print(f"| {name} | {seconds:.3f} | {live} |", flush=True)


TABLES = {"speed": speed, "prefix": prefix, "layers": layers, "modes": modes, "replay": replay}


if __name__ == "__main__":
    sys.exit(main())
