"""BGE-M3 similarity (SS) at size: our scoring path against FlagEmbedding's own ``encode``, side by side.

One model, the same texts, one run. The model is a random-weight XLM-RoBERTa loaded by the real ``BGEM3FlagModel``:

* ``--size tiny``: the project's tiny embedder (``h2h tiny-models``), for a CPU;
* ``--size bge-m3``: BGE-M3's own layer dimensions (24 layers, hidden 1024, 16 heads, feed-forward 4096, 8,192
  positions), random weights, with the project's byte-level tokenizer (its vocabulary is smaller than BGE-M3's
  250,002 tokens: that costs memory, not time). For a GPU. Its outputs are noise; the time is real.

The pairs are the bundled demo responses against their scenarios' references, in ``--copies`` copies whose texts
differ by a suffix (402 pairs per copy, 67 references shared by six responses each, as a run shares them). Each
round times, per batch size, alternating which goes first:

* raw: ``BGEM3FlagModel.encode`` over the distinct texts, then the cosines in numpy — the library at its best;
* ours: ``pipeline.scoring.embedding.cosine_similarities`` with the embedder ``h2h score`` loads
  (``load_embedder("bge-m3", model=DIR)``): distinct texts, encode, normalise, cosine, clip.

It prints pairs per second of each, their ratio (goal: ours/raw ≥ 0.95), the largest SS difference between the two,
and what the paper's 465,000 responses would take at our rate.

    python benchmarks/bench_bge_m3.py [--size tiny|bge-m3] [--copies 5] [--batch-size 32 --batch-size 256] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.paths import demo_dir
from pipeline.scoring.embedding import cosine_similarities, load_embedder

GOAL = 0.95
PAPER_RESPONSES = 465_000  # 4,650 scenarios x 50 models x 2 variants (ARCHITECTURE.md "Scale")
#: BGE-M3's encoder dimensions (XLM-RoBERTa large with 8,192 positions).
BGE_M3_SIZE = {"hidden_size": 1024, "layers": 24, "heads": 16, "intermediate_size": 4096}


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=("tiny", "bge-m3"), default="tiny")
    parser.add_argument("--model-dir", type=Path, default=None, help="where to build (or reuse) the bge-m3 size model")
    parser.add_argument("--copies", type=int, default=5, help="copies of the 402 demo pairs")
    parser.add_argument("--batch-size", type=int, action="append", default=None, help="repeatable [32]")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, alternating which path goes first")
    parser.add_argument("--device", default=None, help="cuda, cpu … [cuda where there is one]")
    return parser.parse_args(argv)


def demo_pairs(copies: int) -> tuple[list[str], list[str]]:
    """(responses, their references): the demo's responses against their scenarios' references, ``copies`` times."""
    references = {}
    for line in (demo_dir() / "scenarios.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            references[record["id"]] = record["reference"]
    responses = [
        json.loads(line) for line in (demo_dir() / "responses.jsonl").read_text(encoding="utf-8").splitlines() if line
    ]
    hypotheses, refs = [], []
    for k in range(copies):
        suffix = f" ({k})" if k else ""
        for response in responses:
            hypotheses.append(response["text"] + suffix)
            refs.append(references[response["scenario_id"]] + suffix)
    return hypotheses, refs


def bge_m3_sized_model(directory: Path) -> Path:
    """Build (once) a random-weight encoder of BGE-M3's dimensions into ``directory``."""
    from pipeline.tinymodels import TinyRecipe, build_embedder_model, training_corpus

    if (directory / "config.json").exists():
        return directory
    # The usual 0.02 init: the tiny models' 0.5 would overflow fp16 through 24 layers.
    recipe = TinyRecipe(vocab_size=32_000, embedder_max_positions=8192, init_std=0.02, **BGE_M3_SIZE)
    started = time.perf_counter()
    build_embedder_model(directory, recipe=recipe, corpus=training_corpus())
    print(f"built a BGE-M3-sized random encoder in {time.perf_counter() - started:.0f} s: {directory}")
    return directory


def time_raw(model: Any, hypotheses: list[str], references: list[str], batch_size: int) -> tuple[float, list[float]]:
    """Seconds and SS of FlagEmbedding's encode over the distinct texts, cosines in numpy."""
    start = time.perf_counter()
    distinct = list(dict.fromkeys([*references, *hypotheses]))
    vectors = np.asarray(model.encode(distinct, batch_size=batch_size, return_dense=True)["dense_vecs"], np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    row = {text: index for index, text in enumerate(distinct)}
    cosines = np.einsum("ij,ij->i", vectors[[row[t] for t in hypotheses]], vectors[[row[t] for t in references]]).clip(
        0.0, 1.0
    )
    return time.perf_counter() - start, [float(value) for value in cosines]


def time_ours(embedder: Any, hypotheses: list[str], references: list[str]) -> tuple[float, list[float]]:
    start = time.perf_counter()
    similarities = cosine_similarities(embedder, hypotheses, references)
    return time.perf_counter() - start, similarities


def describe(model: Any, device: str) -> str:
    import torch

    encoder = model.model.model if hasattr(model.model, "model") else model.model
    parameters = sum(parameter.numel() for parameter in encoder.parameters())
    where = torch.cuda.get_device_name(0) if device.startswith("cuda") else "CPU"
    return f"{parameters / 1e6:,.0f} M parameters, {next(encoder.parameters()).dtype}, on {where}"


def bench_batch_size(model_dir: Path, pairs: tuple[list[str], list[str]], batch: int, rounds: int, device: str) -> bool:
    """Time both paths at one batch size; print each round and the totals; True when their SS agree."""
    embedder = load_embedder("bge-m3", model=str(model_dir), device=device, batch_size=batch)
    model = embedder._model  # type: ignore[union-attr]  # the BGEM3FlagModel our embedder wraps
    hypotheses, references = pairs
    # Warm-up, untimed: one whole pass of each path (CUDA kernels for every padded length, caches, allocator).
    time_raw(model, hypotheses, references, batch)
    time_ours(embedder, hypotheses, references)
    totals = {"raw": 0.0, "ours": 0.0}
    largest = 0.0
    for round_number in range(rounds):
        order = ("raw", "ours") if round_number % 2 == 0 else ("ours", "raw")
        measured = {}
        for path in order:
            if path == "raw":
                measured[path] = time_raw(model, hypotheses, references, batch)
            else:
                measured[path] = time_ours(embedder, hypotheses, references)
            totals[path] += measured[path][0]
        largest = max(largest, float(np.max(np.abs(np.subtract(measured["raw"][1], measured["ours"][1])))))
        rate = {path: len(hypotheses) / measured[path][0] for path in measured}
        print(
            f"batch {batch} round {round_number + 1} ({' then '.join(order)}): raw {rate['raw']:,.0f} pairs/s, "
            f"ours {rate['ours']:,.0f} pairs/s, ratio {rate['ours'] / rate['raw']:.3f}"
        )
    raw_rate, our_rate = (rounds * len(hypotheses) / totals[path] for path in ("raw", "ours"))
    print(
        f"batch {batch} overall: raw {raw_rate:,.0f} pairs/s, ours {our_rate:,.0f} pairs/s, "
        f"ratio {our_rate / raw_rate:.3f} (goal ≥ {GOAL}); largest |SS raw - SS ours| {largest:.1e}; "
        f"{PAPER_RESPONSES:,} responses at our rate: {PAPER_RESPONSES / our_rate / 60:,.1f} min"
    )
    return largest < 1e-6


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import torch

    device = arguments.device or ("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as scratch:
        if arguments.size == "tiny":
            from pipeline.tinymodels import cached_tiny_models

            model_dir = cached_tiny_models().embedder
        else:
            model_dir = bge_m3_sized_model(arguments.model_dir or Path(scratch) / "bge-m3-sized")
        pairs = demo_pairs(arguments.copies)
        started = time.perf_counter()
        batch_sizes = arguments.batch_size or [32]
        loaded: Any = load_embedder("bge-m3", model=str(model_dir), device=device, batch_size=batch_sizes[0])
        print(f"model loaded in {time.perf_counter() - started:.1f} s: {describe(loaded._model, device)}")
        distinct = len(set(pairs[0]) | set(pairs[1]))
        print(f"{len(pairs[0]):,} pairs ({distinct:,} distinct texts), {arguments.rounds} rounds")
        agree = [bench_batch_size(model_dir, pairs, batch, arguments.rounds, device) for batch in batch_sizes]
    print(f"SS equal (raw vs ours, every pair, to 1e-6): {'yes' if all(agree) else 'NO'}")
    return 0 if all(agree) else 1


if __name__ == "__main__":
    sys.exit(main())
