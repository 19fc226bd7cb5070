"""Time the judge-bias card (``studio.results.judge_bias.judge_bias_card``) at the paper's scale and beyond, and show
that the planted biases it is meant to catch are caught.

Simulated adjudicated items: the experts' score uniform on [0, 5]; the judge's = the experts' + 0.002 per 100
characters of length − 0.3, with noise; S uniform. Plus 2,000 pair judgments with 12% flips. Prints seconds per card
(1,000 seeded resamples) and the card's material rows. Run: ``.venv/bin/python benchmarks/bench_judge_bias.py``.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from pipeline.curation.records import PairJudgment
from studio.results.judge_bias import judge_bias_card


def items(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    length = rng.integers(200, 6000, n)
    human = rng.uniform(0, 5, n)
    judge = np.clip(human + length / 5000 - 0.3 + rng.normal(0, 0.6, n), 0, 5)
    return pd.DataFrame({"J_judge": judge, "J_human": human, "S": rng.uniform(0, 1, n), "length": length})


def pairs(n: int, flip_share: float, seed: int = 0) -> list[PairJudgment]:
    rng = np.random.default_rng(seed)
    made = []
    for index in range(n):
        flip = rng.random() < flip_share
        made.append(
            PairJudgment(
                id=f"p{index}", winner=None if flip else "a", consistent=not flip, needs_human=flip,
                uncertainty=0.0, order_verdicts={"ab": "a", "ba": "b" if flip else "a"},
                votes={"a": 1, "b": 1, "tie": 0}, first_shown_rate=1.0 if flip else 0.5, samples=[],
                judge_model="judge", prompt_version="v1",
            )
        )  # fmt: skip
    return made


def main() -> None:
    judged = pairs(2000, 0.12)
    for n in (300, 4650, 20000):
        frame = items(n)
        judge_bias_card(frame.head(50), pairs=judged)  # warm the imports
        started = time.perf_counter()
        card = judge_bias_card(frame, pairs=judged)
        seconds = time.perf_counter() - started
        print(f"n = {n:>6} items, 2,000 pairs: {seconds:.2f} s per card (1,000 resamples)")
        for row in card.table().itertuples(index=False):
            print(f"    {row.measure:<17} {row.value:8.3f} [{row.low}, {row.high}] material={row.material}")
        print(f"    {card.summary}")


if __name__ == "__main__":
    main()
