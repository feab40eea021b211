"""Provider tokens per local token over the same texts: ``chainrag.llm.tokens.LOCAL_RATIO``.

    .venv/bin/python scripts/token_ratio.py [--gguf PATH] [--questions 30]

A stored run counts its tokens with the local model's tokenizer (Qwen2.5's, by the llama.cpp
server) and keeps no texts, so ``chainrag run --estimate`` converts its counts to a provider's
tokenizer by a measured ratio. This measures it over what those prompts are mostly made of:
the passages (title and text) and the question of the first ``--questions`` questions of each
shipped dataset (the questions the stored runs answered), each text counted alone by the local
tokenizer (llama.cpp's, loaded from the GGUF file without its weights; default the fetched
qwen2.5-coder-1.5b) and by each tiktoken encoding litellm counts with offline
(:func:`chainrag.llm.tokens.provider_tokenizer`). It prints the totals and each ratio, and the
ratio of the smallest and largest dataset, as a line to paste into ``LOCAL_RATIO``. Needs the
llama.cpp build (``make llama``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from chainrag.data.datasets import load_dataset
from chainrag.llm.tokens import provider_tokenizer

DATASETS = ("musique", "2wiki", "hotpotqa")
ENCODINGS = {"o200k_base": "gpt-4o-mini", "cl100k_base": "gpt-4"}
"""Each encoding litellm counts with offline, and a model it counts with it."""


def texts(dataset: str, questions: int) -> Iterator[str]:
    """Each passage (title, then text) and each question of ``dataset``'s first questions."""
    for example in load_dataset(dataset, questions):
        yield example.question
        for passage in example.passages:
            yield f"{passage.title}\n{passage.text}"


class Tokenizes(Protocol):
    def tokenize(self, text: bytes, add_bos: bool = True) -> list[int]: ...


def local_counter(gguf: Path) -> Tokenizes:
    """The llama.cpp tokenizer of ``gguf`` (its vocabulary only, no weights)."""
    from llama_cpp import Llama

    llama: Tokenizes = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    return llama


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None, help="default: qwen2.5-coder-1.5b")
    parser.add_argument("--questions", type=int, default=30)
    args = parser.parse_args(argv)
    if args.gguf is None:
        from chainrag.recipes.models import get_model, model_path

        args.gguf = model_path(get_model("qwen2.5-coder-1.5b"))
    if not args.gguf.is_file():
        parser.error(f"{args.gguf}: no such GGUF file (chainrag models fetch --llm NAME)")
    local = local_counter(args.gguf)
    counters = {e: provider_tokenizer(model) for e, model in ENCODINGS.items()}
    assert all(c.encoding == e for e, c in counters.items()), counters
    print(f"| dataset | texts | local tokens | {' | '.join(ENCODINGS)} |")
    print("|---|--:|--:|" + "--:|" * len(ENCODINGS))
    totals = dict.fromkeys(("local", *ENCODINGS), 0)
    ratios: dict[str, list[float]] = {e: [] for e in ENCODINGS}
    for dataset in DATASETS:
        found = list(texts(dataset, args.questions))
        counts = {"local": sum(len(local.tokenize(t.encode(), add_bos=False)) for t in found)}
        counts |= {e: sum(counters[e].text(t) for t in found) for e in ENCODINGS}
        cells = " | ".join(f"{counts[e]:,} ({counts[e] / counts['local']:.3f})" for e in ENCODINGS)
        print(f"| {dataset} | {len(found):,} | {counts['local']:,} | {cells} |")
        for key, value in counts.items():
            totals[key] += value
        for e in ENCODINGS:
            ratios[e].append(counts[e] / counts["local"])
    print()
    for e in ENCODINGS:
        print(f"{e}: {totals[e] / totals['local']:.3f} tokens per local token over all "
              f"({min(ratios[e]):.3f}–{max(ratios[e]):.3f} by dataset)")  # fmt: skip
    pasted = ", ".join(f'"{e}": {totals[e] / totals["local"]:.3f}' for e in ENCODINGS)
    print(f"LOCAL_RATIO = {{{pasted}}}")


if __name__ == "__main__":
    main()
