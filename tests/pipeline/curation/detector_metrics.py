"""Recall and false-flag counts of the PII and meta-text detectors on the labelled sets in ``fixtures/``.

``*_labelled.jsonl`` is the development set (the detectors were tuned on it); ``*_heldout.jsonl`` was written
afterwards and measured once, untuned. Run ``python -m tests.pipeline.curation.detector_metrics`` to print the
figures; ``test_detector_metrics.py`` keeps them from getting worse.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass
class Figures:
    """Expected items, the ones found (per kind), false flags (per kind) and the cases."""

    expected: Counter[str] = field(default_factory=Counter)
    found: Counter[str] = field(default_factory=Counter)
    false_flags: Counter[str] = field(default_factory=Counter)
    cases: int = 0

    @property
    def recall(self) -> float:
        return sum(self.found.values()) / max(sum(self.expected.values()), 1)

    def line(self, name: str) -> str:
        kinds = ", ".join(f"{kind} {self.found[kind]}/{count}" for kind, count in sorted(self.expected.items()))
        return (
            f"{name}: {self.cases} cases, recall {sum(self.found.values())}/{sum(self.expected.values())} = "
            f"{self.recall:.1%} ({kinds}); false flags {sum(self.false_flags.values())} {dict(self.false_flags)}"
        )


def _cases(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def pii_figures(name: str) -> Figures:
    """A hit counts when its entity and text equal an expected one; every other hit is a false flag."""
    from pipeline.curation.pii import detect

    figures = Figures()
    for case in _cases(name):
        figures.cases += 1
        expected = Counter((item["entity"], item["text"]) for item in case["expect"])
        got = Counter((hit.entity, hit.text) for hit in detect(case["text"], keep=case.get("keep", [])))
        for (entity, _), count in expected.items():
            figures.expected[entity] += count
        for key, count in (expected & got).items():
            figures.found[key[0]] += count
        for key, count in (got - expected).items():
            figures.false_flags[key[0]] += count
    return figures


def meta_figures(name: str) -> Figures:
    """A meta span counts when its text (stripped) equals an expected one; every other span is a false flag."""
    from pipeline.curation.meta import meta_spans

    figures = Figures()
    for case in _cases(name):
        figures.cases += 1
        expected = Counter(text.strip() for text in case["meta"])
        got = Counter(case["text"][span.start : span.end].strip() for span in meta_spans(case["text"]))
        figures.expected["meta_text"] += sum(expected.values())
        figures.found["meta_text"] += sum((expected & got).values())
        if got - expected:
            figures.false_flags["meta_text"] += sum((got - expected).values())
    return figures


def main() -> None:
    for name in ("pii_labelled.jsonl", "pii_heldout.jsonl"):
        print(pii_figures(name).line(name))
    for name in ("meta_labelled.jsonl", "meta_heldout.jsonl"):
        print(meta_figures(name).line(name))


if __name__ == "__main__":
    main()
