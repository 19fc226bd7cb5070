"""Table 3's two-level bootstrap draws its raters a block of resamples at a time (memory at the paper's size): the
intervals are the same numbers as with one draw, whatever the block."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studio.results import table_intervals
from studio.results.table_intervals import table3_intervals


def _ratings(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two models × two variants × 40 responses, each rated by 1 to 4 raters; their BLEU-4 / ROUGE-L / SS."""
    rng = np.random.default_rng(seed)
    answers, scores = [], []
    for model in ("m-a", "m-b"):
        for variant in ("with_sap", "without_sap"):
            for number in range(40):
                scenario = f"s-{number}"
                for rater in range(int(rng.integers(1, 5))):
                    answers.append(
                        {
                            "model": model,
                            "variant": variant,
                            "scenario_id": scenario,
                            "annotator": f"r-{rater}",
                            "safety": int(rng.integers(1, 6)),
                            "violation": str(rng.choice(["yes", "no"])),
                        }
                    )
                scores.append(
                    {
                        "model": model,
                        "variant": variant,
                        "scenario_id": scenario,
                        **{name: float(rng.random()) for name in ("bleu4", "rougeL", "ss")},
                    }
                )
    return pd.DataFrame(answers), pd.DataFrame(scores)


@pytest.mark.parametrize("cells", [1, 37, 1000])
def test_a_blockwise_draw_gives_the_intervals_of_one_draw(monkeypatch: pytest.MonkeyPatch, cells: int) -> None:
    answers, scores = _ratings(7)
    monkeypatch.setattr(table_intervals, "DRAW_CELLS", 10**12)  # one block: the draw as a single call
    whole = table3_intervals(answers, scores, by_model=True, violation_tie="not_violation", resamples=120)
    monkeypatch.setattr(table_intervals, "DRAW_CELLS", cells)
    blocks = table3_intervals(answers, scores, by_model=True, violation_tie="not_violation", resamples=120)
    pd.testing.assert_frame_equal(blocks, whole)
    assert whole["safety_low"].notna().all() and (whole["safety_low"] <= whole["safety_high"]).all()
