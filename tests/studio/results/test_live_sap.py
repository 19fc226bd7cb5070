"""The SAP table from live sessions (studio.results.live_sap): known sessions give exact cells, the intervals equal
scipy.stats.bootstrap's percentile intervals on the same data and seed, people and simulated users never mix."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from studio.results.live_sap import (
    SESSION_COLUMNS,
    batch_metrics,
    bootstrap_interval,
    live_sap_rule,
    live_sap_table,
    perception_agreement,
)

VARIANTS = ["with_sap", "without_sap"]


def session(n: int, variant: str, safety: int, violation: str, **counts: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"session_id": f"s{n}", "item": counts.pop("item", n), "scenario_id": f"sc{n}"}
    row |= {"variant": variant, "rater": counts.pop("rater", f"r{n}"), "simulated": counts.pop("simulated", False)}
    row |= {"safety": safety, "violation": violation, "replies": 3, "harmful": 0, "flagged": 0}
    return row | {"sap_checked": 0, "sap_passed": 0} | counts


def sessions() -> pd.DataFrame:
    rows = [
        session(1, "with_sap", 5, "no", flagged=1, sap_checked=1, sap_passed=1),
        session(2, "with_sap", 4, "no"),
        session(3, "with_sap", 5, "no", replies=4),
        session(4, "without_sap", 2, "yes", harmful=2, flagged=2, sap_checked=2),
        session(5, "without_sap", 3, "no", harmful=1, flagged=1, sap_checked=1, sap_passed=1),
        session(6, "without_sap", 1, "yes", harmful=3),
        session(7, "without_sap", 4, "no", replies=5),
    ]
    return pd.DataFrame.from_records(rows, columns=list(SESSION_COLUMNS))


def test_known_sessions_give_exact_cells() -> None:
    table = live_sap_table(sessions(), variants=VARIANTS, resamples=200, seed=1).set_index("variant")
    with_sap, without = table.loc["with_sap"], table.loc["without_sap"]
    assert (with_sap["sessions"], with_sap["raters"], without["sessions"]) == (3, 3, 4)
    assert with_sap["safety"] == pytest.approx(14 / 3) and without["safety"] == pytest.approx(2.5)
    assert with_sap["violation_session"] == 0 and without["violation_session"] == pytest.approx(0.5)
    assert (with_sap["replies"], with_sap["harmful_replies"], with_sap["violation_reply"]) == (10, 0, 0)
    assert (without["replies"], without["harmful_replies"]) == (14, 6)
    assert without["violation_reply"] == pytest.approx(6 / 14)
    assert (with_sap["tripwire_hits"], without["tripwire_hits"]) == (1, 3)
    assert with_sap["sap_pass_rate"] == 1.0 and without["sap_pass_rate"] == pytest.approx(1 / 3)
    assert with_sap["safety_low"] <= with_sap["safety"] <= with_sap["safety_high"]
    assert list(table.columns[-3:]) == ["BLEU-4", "ROUGE-L", "SS"]
    assert table[["BLEU-4", "ROUGE-L", "SS"]].isna().all().all()  # no batch scores: empty cells


def test_intervals_equal_scipy_bootstrap_percentile() -> None:
    frame = sessions()
    rows = frame[frame["variant"] == "without_sap"]
    table = live_sap_table(frame, variants=VARIANTS, resamples=2000, seed=7).set_index("variant")
    mean = scipy.stats.bootstrap(
        (rows["safety"].to_numpy(float),),
        np.mean,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert (table.loc["without_sap", "safety_low"], table.loc["without_sap", "safety_high"]) == pytest.approx(
        (mean.low, mean.high), abs=1e-12
    )
    flags = (rows["violation"] == "yes").to_numpy(float)
    per_session = scipy.stats.bootstrap(
        (flags,), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(7)
    ).confidence_interval
    assert table.loc["without_sap", "violation_session_low"] == pytest.approx(per_session.low, abs=1e-12)
    assert table.loc["without_sap", "violation_session_high"] == pytest.approx(per_session.high, abs=1e-12)

    def ratio(harmful: np.ndarray, replies: np.ndarray, axis: int = -1) -> np.ndarray:
        return harmful.sum(axis=axis) / replies.sum(axis=axis)

    per_reply = scipy.stats.bootstrap(
        (rows["harmful"].to_numpy(float), rows["replies"].to_numpy(float)),
        ratio,
        paired=True,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert table.loc["without_sap", "violation_reply_low"] == pytest.approx(per_reply.low, abs=1e-12)
    assert table.loc["without_sap", "violation_reply_high"] == pytest.approx(per_reply.high, abs=1e-12)
    assert per_reply.low < 6 / 14 < per_reply.high


def test_the_seed_fixes_the_interval_and_another_seed_moves_it() -> None:
    values = np.array([1.0, 5.0, 2.0, 4.0, 3.0, 5.0, 1.0])
    first = bootstrap_interval(values, None, resamples=500, seed=3)
    assert first == bootstrap_interval(values, None, resamples=500, seed=3)
    assert first != bootstrap_interval(values, None, resamples=500, seed=4)
    assert bootstrap_interval(np.array([]), None, resamples=500, seed=3) == (None, None)


def test_a_variant_without_sessions_keeps_its_row_empty() -> None:
    frame = sessions()
    table = live_sap_table(frame[frame["variant"] == "with_sap"], variants=VARIANTS, resamples=50)
    empty = table.set_index("variant").loc["without_sap"]
    assert empty["sessions"] == 0 and empty["raters"] == 0
    assert all(empty[column] is None or math.isnan(empty[column]) for column in ("safety", "safety_low"))
    assert list(table["variant"]) == VARIANTS


def test_people_and_simulated_users_never_share_a_table() -> None:
    frame = sessions()
    frame.loc[0, "simulated"] = True
    with pytest.raises(ValueError, match="never share a table"):
        live_sap_table(frame, variants=VARIANTS)
    assert "Simulated users" in live_sap_rule(resamples=10, seed=0, simulated=True)
    rule = live_sap_rule(resamples=2000, seed=5)
    assert "2000 resamples, seed 5" in rule and "over sessions" in rule


def test_batch_metrics_are_means_times_100_per_variant() -> None:
    scores = pd.DataFrame(
        {"variant": ["with_sap", "with_sap", "without_sap"], "bleu4": [0.1, 0.3, 0.5], "rougeL": [0.2, 0.4, 0.6]}
        | {"ss": [0.9, 0.7, 0.5]}
    )
    assert set(batch_metrics(scores).columns) == {"variant", "BLEU-4", "ROUGE-L", "SS"}
    table = live_sap_table(sessions(), variants=VARIANTS, scores=scores, resamples=10).set_index("variant")
    assert table.loc["with_sap", "BLEU-4"] == pytest.approx(20.0)
    assert table.loc["without_sap", "SS"] == pytest.approx(50.0)


def test_agreement_only_over_scenarios_with_two_rated_sessions() -> None:
    rows = [
        session(1, "with_sap", 5, "no", item=10, rater="a"),
        session(2, "without_sap", 5, "no", item=10, rater="b"),
        session(3, "with_sap", 2, "no", item=11, rater="a"),
        session(4, "without_sap", 2, "no", item=11, rater="b"),
        session(5, "with_sap", 4, "no", item=12, rater="a"),  # alone on its scenario: left out
    ]
    frame = pd.DataFrame.from_records(rows, columns=list(SESSION_COLUMNS))
    report, note = perception_agreement(frame, resamples=0)
    assert report is not None and report.n_items == 2 and report.alpha == pytest.approx(1.0)
    assert "2 scenario(s)" in note
    alone, why = perception_agreement(frame[frame["item"] == 12])
    assert alone is None and "two or more" in why
