"""A faster CPU embedder that keeps the vectors? all-MiniLM-L6-v2 through PyTorch (chainrag's
``flag_model`` embedder, FlagModel) against ONNX Runtime in fp32 and with int8 dynamic
quantisation, side by side in one run on this machine.

    PYTHONPATH=DIR .venv/bin/python bench/cpu_embedders.py [--sentences 4096] [--batch 64]
        [--repeats 3] [--out FILE]

ONNX Runtime is not a dependency of chainrag: install it where the bench can import it
(``pip install --target DIR onnxruntime==1.32.0 onnx==1.23.2`` and their needs) and put that
folder on PYTHONPATH. The network is exported once from the offline model folder with
``torch.onnx.export`` (opset 17); the int8 model is ``onnxruntime.quantization.quantize_dynamic``
of it (weights int8, activations quantised per batch), once at its defaults and once per channel
on the MatMul weights only. Every path gets the same texts the same
way FlagModel does: tokenised with the model's fast tokenizer (truncated at 256), sorted by
length, padded per batch of ``--batch``, mean-pooled over the attention mask, L2-normalised.

The texts: the first ``--sentences`` of the 23,308 real sentences of the 2Wiki corpus index
(``bench/encoders_device.py prepare`` writes them to .gpu/sentences.txt.gz). Printed: sentences
a second (median of ``--repeats``), and each path's vectors against PyTorch's: the largest
absolute difference of a coordinate and the smallest cosine of a pair.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MAX_LENGTH = 256


def batches(
    tokenizer: Any, texts: Sequence[str], size: int
) -> list[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """(original positions, padded int64 inputs) per batch, longest texts first, as FlagModel."""
    ids = tokenizer(list(texts), truncation=True, max_length=MAX_LENGTH)["input_ids"]
    order = np.argsort([-len(i) for i in ids], kind="stable")
    out = []
    for start in range(0, len(order), size):
        chosen = order[start : start + size]
        padded = tokenizer.pad({"input_ids": [ids[i] for i in chosen]}, return_tensors="np")
        inputs = {
            "input_ids": padded["input_ids"].astype(np.int64),
            "attention_mask": padded["attention_mask"].astype(np.int64),
            "token_type_ids": np.zeros_like(padded["input_ids"], dtype=np.int64),
        }
        out.append((chosen, inputs))
    return out


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    out: np.ndarray = pooled / np.maximum(norms, 1e-12)
    return out


def export(folder: str, path: Path) -> None:
    """The model folder's network as ONNX, inputs and output with dynamic batch and length."""
    import torch
    from transformers import AutoModel

    class Hidden(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state  # fmt: skip

    model = Hidden(AutoModel.from_pretrained(folder)).eval()
    example = tuple(torch.ones((2, 8), dtype=torch.int64) for _ in range(3))
    axes = {0: "batch", 1: "tokens"}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with torch.inference_mode():
        torch.onnx.export(
            model,
            example,
            str(path),
            input_names=names,
            output_names=["last_hidden_state"],
            opset_version=17,
            dynamo=False,
            dynamic_axes=dict.fromkeys([*names, "last_hidden_state"], axes),
        )


def onnx_path(model: Path, threads: int) -> Callable[[Sequence[str], int], np.ndarray]:
    import onnxruntime as ort
    from transformers import AutoTokenizer

    from chainrag.components.index.embedders import offline_minilm_path

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    tokenizer = AutoTokenizer.from_pretrained(offline_minilm_path())

    def embed(texts: Sequence[str], size: int) -> np.ndarray:
        out = np.zeros((len(texts), 384), np.float32)
        for chosen, inputs in batches(tokenizer, texts, size):
            hidden = session.run(["last_hidden_state"], inputs)[0]
            out[chosen] = mean_pooled(hidden, inputs["attention_mask"])
        return out

    return embed


def torch_path() -> Callable[[Sequence[str], int], np.ndarray]:
    from chainrag.components.index.embedders import FlagModelEmbedder
    from chainrag.context import StageContext

    ctx = StageContext()

    def embed(texts: Sequence[str], size: int) -> np.ndarray:
        return FlagModelEmbedder(batch_size=size, device="cpu")(list(texts), ctx)

    return embed


def paths_of(threads: int) -> dict[str, Callable[[Sequence[str], int], np.ndarray]]:
    """PyTorch's path and ONNX Runtime's three, the network exported and quantised anew."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from chainrag.components.index.embedders import offline_minilm_path

    work = Path(tempfile.mkdtemp(prefix="cpu_embedders_"))
    fp32, int8 = work / "minilm.onnx", work / "minilm.int8.onnx"
    channel = work / "minilm.int8-channel.onnx"
    export(offline_minilm_path(), fp32)
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    quantize_dynamic(str(fp32), str(channel), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"])  # fmt: skip
    return {
        "pytorch (flag_model)": torch_path(),
        "onnxruntime fp32": onnx_path(fp32, threads),
        "onnxruntime int8": onnx_path(int8, threads),
        "onnxruntime int8, per channel, MatMul only": onnx_path(channel, threads),
    }


def compare(paths: dict[str, Any], texts: list[str], batch: int, repeats: int) -> list[Any]:
    """Each path's median seconds over ``repeats`` rounds (the paths alternating, so drift
    hits each alike) and its vectors against PyTorch's."""
    for embed in paths.values():
        embed(texts[:128], batch)  # load, warm
    times: dict[str, list[float]] = {name: [] for name in paths}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for name, embed in paths.items():
            start = time.perf_counter()
            vectors[name] = embed(texts, batch)
            times[name].append(time.perf_counter() - start)
    base = vectors["pytorch (flag_model)"].astype(np.float64)
    rows = []
    for name in paths:
        v = vectors[name].astype(np.float64)
        cos = (v * base).sum(1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(base, axis=1))
        seconds = statistics.median(times[name])
        rows.append({"path": name, "seconds": seconds, "per_second": len(texts) / seconds,
                     "rounds": [round(t, 2) for t in times[name]],
                     "max_abs_diff": float(np.abs(v - base).max()),
                     "min_cosine": float(cos.min())})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sentences", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    with gzip.open(ROOT / ".gpu" / "sentences.txt.gz", "rt", encoding="utf-8") as fh:
        texts = [line.rstrip("\n") for line in fh][: args.sentences]
    rows = compare(paths_of(args.threads), texts, args.batch, args.repeats)
    print(f"{len(texts):,} real sentences, batch {args.batch}, {args.threads} threads, "
          f"median of {args.repeats}")  # fmt: skip
    print("| path | s | sentences/s | rounds (s) | max abs diff vs PyTorch | min cosine |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['path']} | {r['seconds']:.2f} | {r['per_second']:,.0f} | {r['rounds']} | "
              f"{r['max_abs_diff']:.1e} | {r['min_cosine']:.6f} |")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
