"""The detectors' recall and false flags on the labelled sets stay at least as good as measured (see the report)."""

from __future__ import annotations

from tests.pipeline.curation.detector_metrics import meta_figures, pii_figures


def test_pii_development_set() -> None:
    figures = pii_figures("pii_labelled.jsonl")
    assert figures.cases == 59 and sum(figures.expected.values()) == 38
    assert sum(figures.found.values()) >= 37 and sum(figures.false_flags.values()) == 0


def test_pii_held_out_set() -> None:
    figures = pii_figures("pii_heldout.jsonl")
    assert figures.cases == 31 and sum(figures.expected.values()) == 21
    assert sum(figures.found.values()) >= 18 and sum(figures.false_flags.values()) <= 3


def test_meta_text_sets() -> None:
    development, held_out = meta_figures("meta_labelled.jsonl"), meta_figures("meta_heldout.jsonl")
    assert (sum(development.expected.values()), sum(held_out.expected.values())) == (13, 8)
    assert development.recall == 1.0 and held_out.recall == 1.0
    assert not development.false_flags and not held_out.false_flags
