"""Lexical scoring speed: the naive per-pair library loop against the fast path, side by side.

Builds Chinese pairs from the bundled demo data: ~300 references (the demo's Chinese references and
variations of them, of the same lengths) and 10 hypotheses per reference (the demo's responses to
them and edits of the reference: deletions, substitutions, truncations, additions). Then times

* naive: per pair, ``BLEU(max_ngram_order=n, effective_order=True, tokenize="zh").sentence_score``
  for n = 1..4 and ``RougeScorer(["rouge1", "rougeL"]).score`` (objects built once);
* fast, 1 worker and 2 workers (``pipeline.scoring.lexical.score_pairs``; pool start-up included),

checks that every number is identical, and prints pairs/s and the speed-ups.

    python benchmarks/bench_lexical.py [--pairs 3000] [--references 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from pathlib import Path

from pipeline.jsonl import read_records
from pipeline.paths import demo_dir
from pipeline.records import Response, Scenario
from pipeline.scoring.lexical import LexicalScores, LibraryScorer, score_pairs


def chinese_texts(directory: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The demo's Chinese references, and the demo responses to each of them."""
    scenarios = [s for s in read_records(directory / "scenarios.jsonl", Scenario) if s.tags.language != "en"]
    by_id = {scenario.id: scenario.reference for scenario in scenarios}
    responses: dict[str, list[str]] = {reference: [] for reference in by_id.values()}
    for response in read_records(directory / "responses.jsonl", Response):
        if response.scenario_id in by_id:
            responses[by_id[response.scenario_id]].append(response.text)
    return list(by_id.values()), responses


def vary(rng: random.Random, text: str, alphabet: str) -> str:
    """A synthetic variation of ``text``: some characters substituted, dropped or added, maybe truncated."""
    chars = list(text)
    for _ in range(rng.randint(0, max(1, len(chars) // 5))):
        position = rng.randrange(len(chars))
        action = rng.random()
        if action < 0.4:
            chars[position] = rng.choice(alphabet)
        elif action < 0.7 and len(chars) > 1:
            del chars[position]
        else:
            chars.insert(position, rng.choice(alphabet))
    if rng.random() < 0.3:
        chars = chars[: rng.randint(len(chars) // 2, len(chars))]
    return "".join(chars)


def build_pairs(count: int, reference_count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (hypothesis, reference) pairs over ``reference_count`` shared Chinese references."""
    rng = random.Random(seed)
    demo_references, demo_responses = chinese_texts(demo_dir())
    alphabet = "".join(sorted(set("".join(demo_references))))
    references = dict.fromkeys(demo_references)
    while len(references) < reference_count:
        references[vary(rng, rng.choice(demo_references), alphabet)] = None
    references = list(references)[:reference_count]
    per_reference = -(-count // reference_count)
    pairs: list[tuple[str, str]] = []
    for reference in references:
        hypotheses = list(demo_responses.get(reference, []))[: per_reference // 2]
        while len(hypotheses) < per_reference:
            hypotheses.append(vary(rng, reference, alphabet))
        pairs.extend((hypothesis, reference) for hypothesis in hypotheses)
    rng.shuffle(pairs)
    return pairs[:count]


def timed(label: str, run: Callable[[], list[LexicalScores]], pairs: int) -> tuple[list[LexicalScores], float, float]:
    """Run ``run``; print and return its result, its pairs/s by wall clock and by this process's CPU time.

    CPU time is the steadier figure on a shared machine; it does not count pool workers' time.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:<26} {wall:7.3f} s wall {pairs / wall:9.0f} pairs/s | {cpu:7.3f} s cpu {pairs / cpu:9.0f} pairs/s")
    return result, pairs / wall, pairs / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--references", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pairs = build_pairs(args.pairs, args.references, args.seed)
    lengths = sorted(len(reference) for _, reference in pairs)
    print(f"{len(pairs)} pairs over {len({r for _, r in pairs})} references; "
          f"reference length median {lengths[len(lengths) // 2]} chars, max {lengths[-1]}")  # fmt: skip
    library = LibraryScorer("zh")
    naive_run = lambda: [library.score(hypothesis, reference) for hypothesis, reference in pairs]  # noqa: E731
    naive, naive_wall, naive_cpu = timed("naive (sacrebleu+rouge)", naive_run, len(pairs))
    fast1, wall1, cpu1 = timed("fast, 1 worker", lambda: score_pairs(pairs, tokenizer="zh", workers=1), len(pairs))
    fast2, wall2, _ = timed("fast, 2 workers (wall)", lambda: score_pairs(pairs, tokenizer="zh", workers=2), len(pairs))
    worst = max(abs(a - b) for x, y in zip(naive, fast1, strict=True) for a, b in zip(x, y, strict=True))
    assert fast1 == fast2, "1 and 2 workers disagree"
    assert worst <= 1e-9, f"fast path differs from the libraries by {worst}"
    identical = sum(x == y for x, y in zip(naive, fast1, strict=True))
    # the only permitted difference: sacrebleu's 1.0000000000000004 for a perfect match, clamped to 1.0
    clamped_only = all(
        a == b or (a == 1.0 and 1.0 < b <= 1.0 + 1e-12)
        for x, y in zip(fast1, naive, strict=True)
        for a, b in zip(x, y, strict=True)
    )
    print(f"largest difference from the libraries: {worst:.3g}; bit-identical pairs: {identical}/{len(pairs)}; "
          f"every other difference is a BLEU of 1+ulps clamped to 1: {clamped_only}")  # fmt: skip
    print(f"speed-up by wall clock: 1 worker {wall1 / naive_wall:.1f}x, 2 workers {wall2 / naive_wall:.1f}x; "
          f"by CPU time, 1 worker: {cpu1 / naive_cpu:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
