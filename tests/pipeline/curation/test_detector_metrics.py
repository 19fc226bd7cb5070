"""The detectors' figures on the labelled sets (``detector_metrics``) stay at least as good as measured: recall
may rise, false flags, damage and damaged decoys may not. A change that worsens any of them fails here."""

from __future__ import annotations

import pytest

from tests.pipeline.curation.detector_metrics import (
    demo_meta_false_flags,
    meta_figures,
    scenario_figures,
    text_figures,
)


@pytest.mark.parametrize(
    ("name", "cases", "expected", "found", "caught", "damage", "review_noise", "decoys", "kept"),
    [
        # the 67 bundled demo scenarios (tuned on): before this work 9/18 found, 54 damaged, 58/185 decoys hit
        ("demo_labels.jsonl", 67, 18, 18, 18, 0, 1, 185, 4),
        ("pii_scenarios_dev.jsonl", 18, 51, 50, 50, 0, 2, 106, 3),
        # written before any tuning, never tuned on
        ("pii_scenarios_heldout.jsonl", 25, 61, 49, 51, 0, 3, 129, 2),
    ],
)
def test_scenario_sets(
    name: str,
    cases: int,
    expected: int,
    found: int,
    caught: int,
    damage: int,
    review_noise: int,
    decoys: int,
    kept: int,
) -> None:
    figures = scenario_figures(name)
    total = figures.summary()
    assert (figures.cases, total["expected"], total["decoys"]) == (cases, expected, decoys)
    assert total["found"] >= found and total["caught"] >= caught
    assert total["false_flags"] == 0 and total["damage"] <= damage and total["decoys_damaged"] == 0
    assert total["review_noise"] <= review_noise
    assert total["kept"] == kept  # the public hotlines, each kept and reported


def test_the_companion_hotlines_and_places_of_the_demo_are_never_touched() -> None:
    figures = scenario_figures("demo_labels.jsonl")
    assert figures.decoys["companion"] == 67 and figures.decoys["public_number"] == 11
    assert not figures.decoys_damaged and not figures.damage_chars


@pytest.mark.parametrize(
    ("name", "cases", "expected", "found", "damage"),
    [("pii_labelled.jsonl", 59, 38, 38, 0), ("pii_heldout.jsonl", 31, 22, 22, 0)],
)
def test_text_sets(name: str, cases: int, expected: int, found: int, damage: int) -> None:
    figures = text_figures(name)
    total = figures.summary()
    assert (figures.cases, total["expected"]) == (cases, expected)
    assert total["found"] >= found and total["false_flags"] == 0 and total["damage"] <= damage


def test_meta_text_sets() -> None:
    sets = {name: meta_figures(name) for name in ("meta_labelled.jsonl", "meta_heldout.jsonl")}
    asides = meta_figures("meta_heldout_asides.jsonl")
    assert [figures.total("expected") for figures in sets.values()] == [16, 8] and asides.total("expected") == 8
    for figures in [*sets.values(), asides]:
        assert figures.recall == 1.0 and figures.total("false_flags") == 0
    assert demo_meta_false_flags() == []
