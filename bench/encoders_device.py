"""The encoders on a GPU: do cpu and cuda give the same vectors and scores, and how fast is each?

    .venv/bin/python bench/encoders_device.py prepare [--folder .gpu]
    python3 bench/encoders_device.py measure [--folder .gpu] [--sentences 100000] [--out F]

``prepare`` (here, where spaCy and the models are): the 2Wiki corpus (HippoRAG's, plus the
2Wiki dev paragraphs, as ``chainrag index`` reads them) split into sentences by the recipe's
spaCy splitter, written to ``FOLDER/sentences.txt.gz``, and the offline all-MiniLM-L6-v2
folder with its weights in fp16, gzipped (``FOLDER/minilm``), so that both travel to a GPU
machine inside its 64 MiB limit (with the repository). To fit, the rows of the word-embedding
table of the 10,202 of 30,522 tokens that no sentence holds are zeroed (they compress to
nothing): the network never reads them for these sentences, so its outputs here are those of
the whole fp16 table.

``measure`` (on the GPU machine): the weights are widened back to fp32 (so cpu and cuda there
run the same fp32 network; the fp16 rounding of the carried weights is the same for both), the
real sentences are repeated up to ``--sentences`` (as bench/corpus_scale.py makes its 1M
corpus), and chainrag's own components are run with ``device: cpu`` and ``device: cuda``:

1. agreement: the ``flag_model`` embedder's passage vectors (the multi-batch FlagModel path)
   and query vectors (the one-pass path) on both devices, the cosine of each vector pair; the
   ``cross_encoder`` and ``flag_reranker`` rerankers' scores on both (their classification head
   is untrained on this folder: seeded the same for both loads);
2. speed: the embedder over all sentences on cuda at batch sizes 64 (the default), 256,
   1,024 and 4,096, in one call and (``--calls``) in calls of so many sentences as ``chainrag
   index`` makes them, and on the machine's CPUs over a slice; the cross-encoder over pairs;
   seconds, sentences a second, the 1M-sentence time extrapolated linearly, peak GPU memory.

It prints a table and writes the figures as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ["2wiki_hipporag_corpus", "dev:2wiki"]
KEEP = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
)


def prepare(folder: Path) -> None:
    """Sentences and fp16 weights into ``folder``."""
    import torch
    from safetensors.torch import load_file, save_file

    from chainrag.components.index.embedders import offline_minilm_path
    from chainrag.context import StageContext
    from chainrag.index.corpus.source import read_passages
    from chainrag.recipes.recipe import load_recipe

    spec = load_recipe(ROOT / "recipes" / "index" / "sentence_graph.yaml").index
    assert spec is not None
    assert spec.splitter is not None
    passages, ctx = list(read_passages(CORPUS)), StageContext()
    texts: list[str] = []
    for start in range(0, len(passages), 512):
        texts.extend(s.text for s in spec.splitter(passages[start : start + 512], ctx))
        print(f"split {min(start + 512, len(passages))}/{len(passages)} passages", flush=True)
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "sentences.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(t.replace("\n", " ") for t in texts) + "\n")
    source, model = Path(offline_minilm_path()), folder / "minilm"
    model.mkdir(exist_ok=True)
    for name in KEEP:
        shutil.copy(source / name, model / name)
    shutil.copytree(source / "1_Pooling", model / "1_Pooling", dirs_exist_ok=True)
    weights = load_file(str(source / "model.safetensors"))
    half = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in weights.items()}
    from transformers import AutoTokenizer

    tokenizer, used = AutoTokenizer.from_pretrained(str(model)), set[int]()
    for start in range(0, len(texts), 2048):
        rows = tokenizer(texts[start : start + 2048], truncation=True, max_length=512)
        used.update(i for row in rows["input_ids"] for i in row)
    table = next(k for k in half if k.endswith("word_embeddings.weight"))
    unused = torch.ones(len(half[table]), dtype=torch.bool)
    unused[sorted(used)] = False
    half[table][unused] = 0
    save_file(half, str(model / "model.fp16.safetensors"))
    with (
        (model / "model.fp16.safetensors").open("rb") as raw,
        gzip.open(model / "model.fp16.safetensors.gz", "wb", compresslevel=9) as packed,
    ):
        shutil.copyfileobj(raw, packed)
    (model / "model.fp16.safetensors").unlink()
    print(f"{len(texts)} sentences and the fp16 weights in {folder} ({int(unused.sum())} of "
          f"{len(unused)} token rows zeroed)")  # fmt: skip


def widened(folder: Path, into: Path) -> Path:
    """The carried model folder with its fp16 weights widened to fp32 (``model.safetensors``)."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(folder / "minilm", into, dirs_exist_ok=True)
    packed = into / "model.fp16.safetensors.gz"
    with gzip.open(packed, "rb") as src, (into / "model.fp16.safetensors").open("wb") as dst:
        shutil.copyfileobj(src, dst)
    packed.unlink()
    half = load_file(str(into / "model.fp16.safetensors"))
    save_file({k: v.to(torch.float32) for k, v in half.items()}, str(into / "model.safetensors"))
    (into / "model.fp16.safetensors").unlink()
    return into


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def cosines(a: Any, b: Any) -> dict[str, float]:
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()),
            "max_abs_diff": float(np.abs(a - b).max()), "rows": len(a)}  # fmt: skip


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The machine, then :func:`agreement` and :func:`speeds`."""
    import torch

    gpu = args.device
    on_gpu = gpu == "cuda"
    if on_gpu and not torch.cuda.is_available():
        raise SystemExit("measure --device cuda needs a machine whose torch sees a GPU")
    model = str(widened(args.folder, Path(args.work) / "minilm"))
    with gzip.open(args.folder / "sentences.txt.gz", "rt", encoding="utf-8") as fh:
        real = [line.rstrip("\n") for line in fh]
    texts = (real * (args.sentences // len(real) + 1))[: args.sentences]
    out: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0) if on_gpu else f"none ({gpu} stands in)",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu_threads": torch.get_num_threads(),
        "real_sentences": len(real),
        "sentences": len(texts),
    }
    out["agreement"] = agreement(model, texts, real, args)
    print(json.dumps(out["agreement"], indent=1), flush=True)
    out["speed"] = speeds(model, texts, real[:64], args)
    return out


def agreement(model: str, texts: list[str], real: list[str], args: argparse.Namespace) -> Any:
    """cpu against ``args.device``: the embedder's vectors (batched passages, one-pass queries)
    and both rerankers' scores."""
    import numpy as np
    import torch

    from chainrag.components.index.embedders import FlagModelEmbedder
    from chainrag.components.retrieval.rerankers import CrossEncoderReranker, FlagRerankerComponent
    from chainrag.context import StageContext

    ctx, found = StageContext(), {}
    cpu = FlagModelEmbedder(model_path=model, device="cpu")
    other = FlagModelEmbedder(model_path=model, device=args.device)
    part, queries = texts[: args.agree], real[:64]
    found["embedder passages"] = cosines(cpu(part, ctx), other(part, ctx))
    one = [[e([q], ctx, "query")[0] for q in queries] for e in (cpu, other)]
    found["embedder queries (one pass)"] = cosines(*one)
    rerankers = {"cross_encoder": CrossEncoderReranker, "flag_reranker": FlagRerankerComponent}
    pairs = [[queries[0], t] for t in real[: args.pairs]]
    for name, cls in rerankers.items():
        scored = []
        for d in ("cpu", args.device):
            torch.manual_seed(0)  # the same untrained head for both loads
            scored.append(np.asarray(cls(model_path=model, device=d).scores(pairs, ctx)))
        a, b = (s.reshape(len(s), -1)[:, 0] for s in scored)
        order_a, order_b = np.argsort(-a, kind="stable"), np.argsort(-b, kind="stable")
        found[f"{name} scores"] = {
            "max_abs_diff": float(np.abs(a - b).max()),
            "scale": float(np.abs(a).max()),
            "same_order": bool((order_a == order_b).all()),
            "rows": len(a),
        }
    return found


def speeds(model: str, texts: list[str], queries: list[str], args: argparse.Namespace) -> Any:
    """The embedder on the CPU over a slice and on ``args.device`` at each batch size (in one
    call and in calls of ``args.calls``), then the cross-encoder on each: one row each."""
    import torch

    from chainrag.components.index.embedders import FlagModelEmbedder
    from chainrag.components.retrieval.rerankers import CrossEncoderReranker
    from chainrag.context import StageContext

    gpu, ctx, rows = args.device, StageContext(), []

    def row(what: str, device: str, batch: int, n: int, fn: Callable[[], Any]) -> None:
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        seconds = timed(fn)[1]
        used = torch.cuda.max_memory_allocated() if device == "cuda" else None
        rows.append({
            "what": what, "device": device, "batch": batch, "n": n,
            "seconds": round(seconds, 2), "per_second": round(n / seconds),
            "1M_minutes": round(1e6 / (n / seconds) / 60, 2),
            "peak_gpu_gib": None if used is None else round(used / 2**30, 2),
        })  # fmt: skip
        print(rows[-1], flush=True)

    cpu, cut = FlagModelEmbedder(model_path=model, device="cpu"), texts[: args.cpu_sentences]
    cpu(texts[:128], ctx)  # warm
    row("embedder", "cpu", cpu.batch_size, len(cut), functools.partial(cpu, cut, ctx))
    for batch in args.batches:
        embedder = FlagModelEmbedder(model_path=model, device=gpu, batch_size=batch)
        embedder(texts[: batch * 2], ctx)  # load and warm up
        row("embedder", gpu, batch, len(texts), functools.partial(embedder, texts, ctx))
        for size in args.calls:  # as chainrag index calls it: --batch-sentences at a time

            def in_calls(e: FlagModelEmbedder = embedder, size: int = size) -> None:
                for start in range(0, len(texts), size):
                    e(texts[start : start + size], ctx)

            row(f"embedder, calls of {size:,}", gpu, batch, len(texts), in_calls)
    pairs = [[queries[i % len(queries)], t] for i, t in enumerate(texts[: args.rerank_pairs])]
    for d, n in (("cpu", args.rerank_pairs // 10), (gpu, args.rerank_pairs)):
        torch.manual_seed(0)
        reranker = CrossEncoderReranker(model_path=model, device=d, batch_size=256)
        reranker.scores(pairs[:256], ctx)
        row("cross_encoder pairs", d, 256, n, functools.partial(reranker.scores, pairs[:n], ctx))
    return rows


def show(out: dict[str, Any]) -> str:
    """The figures as two Markdown tables."""
    lines = [
        f"{out['gpu']}, torch {out['torch']}, {out['cpu_threads']} CPU threads; "
        f"{out['sentences']:,} sentences ({out['real_sentences']:,} real, repeated)",
        "",
        "| agreement, cpu vs cuda | rows | min cosine | max abs diff |",
        "|---|---|---|---|",
    ]
    for name, a in out["agreement"].items():
        cosine = a.get("min_cosine", "-")
        lines.append(f"| {name} | {a['rows']} | {cosine} | {a['max_abs_diff']:.2e} |")
    lines += [
        "",
        "| stage | device | batch | n | s | per s | 1M, min | peak GPU GiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out["speed"]:
        lines.append(
            f"| {r['what']} | {r['device']} | {r['batch']} | {r['n']:,} | {r['seconds']} | "
            f"{r['per_second']:,} | {r['1M_minutes']} | {r['peak_gpu_gib'] or '-'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="sentences and fp16 weights into --folder (here)")
    prep.add_argument("--folder", type=Path, default=ROOT / ".gpu")
    meas = sub.add_parser("measure", help="cpu vs cuda agreement and speed (on a GPU machine)")
    meas.add_argument("--folder", type=Path, default=ROOT / ".gpu")
    meas.add_argument("--work", default="/tmp/encoders_device")
    meas.add_argument("--sentences", type=int, default=100_000)
    meas.add_argument("--agree", type=int, default=4096, help="sentences compared cpu vs cuda")
    meas.add_argument("--pairs", type=int, default=512, help="reranker pairs compared")
    meas.add_argument("--cpu-sentences", type=int, default=8192)
    meas.add_argument("--rerank-pairs", type=int, default=20_000)
    meas.add_argument("--batches", type=int, nargs="+", default=[64, 256, 1024, 4096])
    meas.add_argument("--calls", type=int, nargs="*", default=[], metavar="SENTENCES",
                      help="also embed the sentences in calls of this many, as chainrag index "
                      "does with --batch-sentences")  # fmt: skip
    meas.add_argument("--out", type=Path, default=None)
    meas.add_argument(
        "--device",
        default="cuda",
        help="the device compared with cpu (cpu: a "
        "smoke run of this script on a machine without a GPU)",
    )
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.folder)
        return
    os.environ.setdefault("TQDM_DISABLE", "1")
    out = measure(args)
    print(show(out))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
