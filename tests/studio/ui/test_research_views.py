"""How the Research page shows Table 3 and Fig. 7 with their intervals (pure display builders)."""

from __future__ import annotations

import pandas as pd

from studio.ui import research_views as views


def test_table3_and_fig7_cells_show_each_estimate_with_its_interval() -> None:
    frame = pd.DataFrame(
        {
            "variant": ["with_sap"],
            "responses": [4],
            "safety": [3.5],
            "violation_rate": [0.25],
            "violation_tie": ["not_violation"],
            "BLEU-4": [12.0],
            "safety_low": [3.0],
            "safety_high": [4.25],
            "violation_rate_low": [0.0],
            "violation_rate_high": [0.5],
            "BLEU-4_low": [None],
            "BLEU-4_high": [None],
        }
    )
    shown = views.table3_display(frame)
    assert list(shown.columns) == [
        "Variant",
        views.TABLE3_HEADERS["responses"],
        f"{views.TABLE3_HEADERS['safety']} [95% CI]",
        f"{views.TABLE3_HEADERS['violation_rate']} [95% CI]",
        "BLEU-4 [95% CI]",
    ]
    assert shown.iloc[0].tolist() == ["with_sap", "4", "3.50 [3.00, 4.25]", "25.0% [0.0%, 50.0%]", "12.00"]
    fig7 = pd.DataFrame({"model": ["m"], "explicit": [4.0], "implicit": [float("nan")]})
    bounds = pd.DataFrame({"model": ["m"], "kind": ["explicit"], "rating": [4.0], "low": [3.5], "high": [4.5]})
    assert views.instruction_display(fig7, bounds).iloc[0].tolist() == ["m", "4.00 [3.50, 4.50]", ""]
    assert views.instruction_display(fig7).iloc[0].tolist() == ["m", "4.00", ""]
