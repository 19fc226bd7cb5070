"""Crowd decisions and early stopping on simulated crowds of the paper's shape (issue 21's figures).

* Stopping: 4,650 items × 20 votes, three labels; a third of the items lopsided (the leading label's share ~0.8), a
  third mixed (~0.55), a third contested (~0.4): label shares drawn from a Dirichlet around those. Each item's votes
  replayed in a random order through ``curtail`` and ``predictive`` (0.99, min_votes 5): decisions identical to the
  20 votes, and votes saved.
* Accuracy against known truth: 1,000 items × 10 votes from 40 raters — 15 careful (right 85% of the time), 15
  spammers (uniform random), 10 careless (right 50%, else one fixed label): majority vs Dawid–Skene vs MACE.
* ``h2h consensus`` on 93,000 votes (4,650 × 20, one question), the whole command in a subprocess, per method.

Run: ``python benchmarks/bench_crowd.py``. Figures are printed side by side with their goals; no test is timed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

LABELS = np.array(["keep", "revise", "discard"])
SHAPES = {"lopsided": (0.8, 30.0), "mixed": (0.55, 30.0), "contested": (0.4, 30.0)}


def paper_crowd(items: int, *, seed: int) -> list[list[str]]:
    """``items`` items of 20 votes each, in the order they came; a third of each shape in :data:`SHAPES`."""
    rng = np.random.default_rng(seed)
    orders = []
    for index in range(items):
        top, concentration = list(SHAPES.values())[index % 3]
        mean = np.roll([top, (1 - top) / 2, (1 - top) / 2], rng.integers(3))
        shares = rng.dirichlet(mean * concentration)
        orders.append(list(rng.choice(LABELS, size=20, p=shares)))
    return orders


def bench_stopping(items: int, seed: int) -> None:
    from studio.results.stopping import DecidedQuestion, replay

    question = DecidedQuestion("verdict", tuple(LABELS))
    votes = {f"s{index}": order for index, order in enumerate(paper_crowd(items, seed=seed))}
    for rule, goals in (("curtail", (100.0, 30.0)), ("predictive", (99.5, 45.0))):
        start = time.perf_counter()
        report = replay(votes, quota=20, question=question, rule=rule, confidence=0.99, min_votes=5).to_dict()  # type: ignore[arg-type]
        took = time.perf_counter() - start
        identical, saved = 100 * float(report["identical_fraction"]), 100 * float(report["saved_fraction"])  # type: ignore[arg-type]
        print(
            f"{rule:<11} identical {identical:6.2f}% (goal {goals[0]:g})  saved {saved:5.1f}% (goal ≥ {goals[1]:g})  "
            f"changed {len(report['changed_items'])}  [{took:.1f} s over {items} items]"  # type: ignore[arg-type]
        )
        for shape_index, shape in enumerate(SHAPES):
            part = {item: order for index, (item, order) in enumerate(votes.items()) if index % 3 == shape_index}
            shaped = replay(part, quota=20, question=question, rule=rule, confidence=0.99, min_votes=5).to_dict()  # type: ignore[arg-type]
            print(
                f"    {shape:<10} identical {100 * float(shaped['identical_fraction']):6.2f}%  "  # type: ignore[arg-type]
                f"saved {100 * float(shaped['saved_fraction']):5.1f}%"  # type: ignore[arg-type]
            )


def careless_crowd(items: int, *, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    """10 votes per item from 15 careful raters, 15 spammers and 10 careless raters; the votes and the truth."""
    rng = np.random.default_rng(seed)
    kinds = np.array([0] * 15 + [1] * 15 + [2] * 10)  # careful, spammer, careless
    truth = rng.integers(0, 3, items)
    item_of = np.repeat(np.arange(items), 10)
    rater_of = np.concatenate([rng.choice(len(kinds), 10, replace=False) for _ in range(items)])
    right = rng.random(len(item_of)) < np.array([0.85, 0.0, 0.5])[kinds[rater_of]]
    wrong = np.where(kinds[rater_of] == 2, rater_of % 3, rng.integers(0, 3, len(item_of)))
    votes = pd.DataFrame(
        {
            "item": [f"s{i}" for i in item_of],
            "annotator": [f"r{r}" for r in rater_of],
            "value": LABELS[np.where(right, truth[item_of], wrong)],
        }
    )
    return votes, pd.Series(LABELS[truth], index=[f"s{i}" for i in range(items)])


def bench_accuracy(seeds: int) -> None:
    from studio.results.consensus import METHODS, decide

    scores: dict[str, list[float]] = {method: [] for method in METHODS}
    for seed in range(seeds):
        votes, truth = careless_crowd(1000, seed=seed)
        for method in METHODS:
            decided = decide(votes, method=method).set_index("item")["decision"].reindex(truth.index)
            scores[method].append(100 * float((decided == truth).mean()))  # a majority tie counts as wrong
    base = np.mean(scores["majority"])
    for method, values in scores.items():
        print(f"accuracy {method:<12} {np.mean(values):5.1f}%  ({np.mean(values) - base:+.1f} points; goal ≥ +2)")


def write_votes(path: Path, *, seed: int) -> None:
    """93,000 votes (4,650 items × 20) of one question, as h2h export votes writes its columns."""
    rng = np.random.default_rng(seed)
    items, per_item = 4650, 20
    orders = paper_crowd(items, seed=seed)
    item_of = np.repeat(np.arange(1, items + 1), per_item)
    raters = np.concatenate([rng.choice(400, per_item, replace=False) for _ in range(items)])
    frame = pd.DataFrame(
        {
            "campaign": "vote",
            "item": item_of,
            "annotator": [f"user{r}" for r in raters],
            "question": "verdict",
            "value": np.concatenate(orders),
            "answered_at": pd.Timestamp("2025-01-01", tz="UTC") + pd.to_timedelta(np.arange(len(item_of)), unit="s"),
        }
    )
    frame["answered_at"] = frame["answered_at"].map(lambda stamp: stamp.isoformat())
    frame.to_csv(path, index=False, encoding="utf-8-sig")


def bench_command(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        votes = Path(folder) / "votes.csv"
        write_votes(votes, seed=0)
        for method in ("majority", "dawid-skene", "mace"):
            command = [sys.executable, "-m", "pipeline.cli", "consensus", "--votes", str(votes), "--question"]
            command += ["verdict", "--method", method, "-o", str(Path(folder) / f"{method}.csv")]
            timings = []
            for _ in range(repeats):
                start = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True)
                timings.append(time.perf_counter() - start)
            print(
                f"h2h consensus --method {method:<12} 93,000 votes: {min(timings):.2f} s (best of {repeats}; goal < 3)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=4650, help="Items replayed for the stopping figures.")
    parser.add_argument("--seeds", type=int, default=3, help="Simulated crowds for the accuracy figures.")
    parser.add_argument("--repeats", type=int, default=3, help="Runs of each timed command (the best is printed).")
    args = parser.parse_args()
    bench_stopping(args.items, seed=0)
    bench_accuracy(args.seeds)
    bench_command(args.repeats)


if __name__ == "__main__":
    main()
