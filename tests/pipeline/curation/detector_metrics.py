"""How well the PII and meta-text detectors do on labelled data: recall, false flags and damage, per field and kind.

Two kinds of labelled sets live in ``fixtures/``:

- **scenario sets**, run through :func:`pipeline.curation.preprocess.clean_scenario` exactly as ``h2h preprocess``
  runs them (companion name, propagation across fields, numbering and all):
  ``demo_labels.jsonl`` labels the 67 bundled demo scenarios (``data/demo/scenarios.jsonl``);
  ``pii_scenarios_dev.jsonl`` and ``pii_scenarios_heldout.jsonl`` hold new scenarios in the public release's shapes.
  Each line names the **identifiers** (``entity``, ``text``, optionally ``within``: only the occurrences of ``text``
  inside an occurrence of ``within``, e.g. the surname 孙 in 孙老师) and the **decoys**: non-identifiers a detector
  may take for one (companion names, public hotlines, places, common words, pets, public figures), by ``kind``.
  Every occurrence of a label's text in every text field counts (Latin text on word boundaries).
- **text sets** (``pii_labelled.jsonl``, ``pii_heldout.jsonl``; ``meta_*.jsonl``): one text, the expected spans.

Figures, per field group (persona, context, history, input, reference) and per kind:

- *recall*: identifier occurrences replaced exactly (same span, same entity) / all identifier occurrences;
  *covered* (``caught``) adds those replaced in part or left in place but flagged for a curator's review
  (``action: review``);
- *false flags*: replacements that touch no identifier at all;
- *damage*: replacements that change any text that is not an identifier (false flags, and replacements that run
  past an identifier), with the number of characters changed; *decoys damaged*: decoy occurrences a replacement
  touched, per decoy kind;
- *review noise*: review flags on no identifier (they cost a curator a look, they change nothing).

The development sets (``demo_labels``, ``pii_scenarios_dev``, ``pii_labelled``, ``meta_labelled``) were used to
tune the detectors; the held-out sets (``pii_scenarios_heldout``, ``meta_heldout_asides``, written before any tuning,
and the older ``pii_heldout``/``meta_heldout``) are measured, not tuned on. ``python -m
tests.pipeline.curation.detector_metrics`` prints every figure; ``test_detector_metrics.py`` pins them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
DEMO_SCENARIOS = Path(__file__).parents[3] / "data" / "demo" / "scenarios.jsonl"
SCENARIO_SETS = ("demo_labels.jsonl", "pii_scenarios_dev.jsonl", "pii_scenarios_heldout.jsonl")
TEXT_SETS = ("pii_labelled.jsonl", "pii_heldout.jsonl")
META_SETS = ("meta_labelled.jsonl", "meta_heldout.jsonl", "meta_heldout_asides.jsonl")
GROUPS = ("persona", "context", "history", "input", "reference")

Span = tuple[int, int]


@dataclass
class Figures:
    """Counts per ``(group, kind)``; ``kind`` is the identifier's entity, or for damage the replacement's entity."""

    cases: int = 0
    expected: Counter[tuple[str, str]] = field(default_factory=Counter)
    found: Counter[tuple[str, str]] = field(default_factory=Counter)
    caught: Counter[tuple[str, str]] = field(default_factory=Counter)
    false_flags: Counter[tuple[str, str]] = field(default_factory=Counter)
    damage: Counter[tuple[str, str]] = field(default_factory=Counter)
    damage_chars: int = 0
    review_noise: Counter[tuple[str, str]] = field(default_factory=Counter)
    kept: Counter[tuple[str, str]] = field(default_factory=Counter)
    decoys: Counter[str] = field(default_factory=Counter)
    decoys_damaged: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(getattr(self, name).values())

    @property
    def recall(self) -> float:
        return self.total("found") / max(self.total("expected"), 1)

    def summary(self) -> dict[str, int]:
        names = ("expected", "found", "caught", "false_flags", "damage", "review_noise", "kept", "decoys")
        return {name: self.total(name) for name in names} | {
            "damage_chars": self.damage_chars,
            "decoys_damaged": self.total("decoys_damaged"),
        }

    def line(self, name: str) -> str:
        total = self.summary()
        return (
            f"{name}: {self.cases} cases, recall {total['found']}/{total['expected']} = {self.recall:.1%}"
            f" (covered, also in part or for review: {total['caught']}/{total['expected']}); "
            f"false flags {total['false_flags']}; damage {total['damage']} ({self.damage_chars} chars); "
            f"review noise {total['review_noise']}; "
            f"decoys damaged {total['decoys_damaged']}/{total['decoys']}; kept {total['kept']}"
        )

    def table(self) -> list[str]:
        """Per group and kind: found/expected (caught), false flags, damage; then decoys per kind."""
        keys = sorted(set(self.expected) | set(self.false_flags) | set(self.damage) | set(self.review_noise))
        rows = [f"  {'field':<10} {'kind':<10} {'recall':>8} {'caught':>7} {'false':>6} {'damage':>7} {'noise':>6}"]
        for key in sorted(keys, key=lambda key: (GROUPS.index(key[0]), key[1])):
            recall = f"{self.found[key]}/{self.expected[key]}"
            rows.append(
                f"  {key[0]:<10} {key[1]:<10} {recall:>8} {self.caught[key]:>7} {self.false_flags[key]:>6} "
                f"{self.damage[key]:>7} {self.review_noise[key]:>6}"
            )
        decoys = ", ".join(f"{kind} {self.decoys_damaged[kind]}/{count}" for kind, count in sorted(self.decoys.items()))
        rows.append(f"  decoys damaged per kind: {decoys}")
        return rows


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def group_of(path: str) -> str:
    if path == "user_input":
        return "input"
    return path.split(".")[0]


def occurrences(text: str, needle: str, within: str | None = None) -> Iterator[Span]:
    """Every span of ``needle`` in ``text`` (inside an occurrence of ``within`` when given); Latin on word edges."""
    outer = within or needle
    edge = outer[:1].isascii()
    pattern = rf"(?<![A-Za-z0-9_]){re.escape(outer)}(?![A-Za-z0-9_])" if edge else re.escape(outer)
    for match in re.finditer(pattern, text):
        offset = outer.find(needle)
        yield match.start() + offset, match.start() + offset + len(needle)


def overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _outside(span: Span, covered: Iterable[Span]) -> int:
    """How many characters of ``span`` lie outside every span of ``covered``."""
    inside = set()
    for start, end in covered:
        inside.update(range(max(start, span[0]), min(end, span[1])))
    return (span[1] - span[0]) - len(inside)


def _score_field(figures: Figures, where: str, text: str, labels: dict[str, Any], flags: list[Any]) -> None:
    """Count one field (``where``: "case-id field-path"): its identifier occurrences against the replacements
    and review flags on it."""
    group = group_of(where.split()[-1])
    identifiers = [
        ((start, end), item["entity"])
        for item in labels["identifiers"]
        for start, end in occurrences(text, item["text"], item.get("within"))
    ]
    spans = [span for span, _ in identifiers]
    decoys = [
        ((start, end), item["kind"])
        for item in labels["decoys"]
        for start, end in occurrences(text, item["text"])
        if not any(overlaps((start, end), span) for span in spans)
    ]
    replaced = [flag for flag in flags if getattr(flag, "action", "replaced") == "replaced"]
    review = [flag for flag in flags if getattr(flag, "action", "replaced") == "review"]
    for span, entity in identifiers:
        figures.expected[group, entity] += 1
        if any(tuple(flag.span) == span and flag.entity == entity for flag in replaced):
            figures.found[group, entity] += 1
            figures.caught[group, entity] += 1
        elif any(overlaps(tuple(flag.span), span) for flag in replaced + review):
            figures.caught[group, entity] += 1
        else:
            figures.examples.append(f"missed {entity} {text[span[0] : span[1]]!r} in {where}")
    for flag in replaced:
        span = tuple(flag.span)
        if not any(overlaps(span, other) for other in spans):
            figures.false_flags[group, flag.entity] += 1
        outside = _outside(span, spans)
        if outside:
            figures.damage[group, flag.entity] += 1
            figures.damage_chars += outside
            figures.examples.append(f"damage {flag.entity} {flag.before!r} -> {flag.after} in {where}")
    for flag in review:
        if not any(overlaps(tuple(flag.span), span) for span in spans):
            figures.review_noise[group, flag.entity] += 1
            figures.examples.append(f"review noise {flag.entity} {flag.before!r} in {where}")
    for flag in flags:
        if getattr(flag, "action", "replaced") == "kept":
            figures.kept[group, flag.entity] += 1
    for span, kind in decoys:
        figures.decoys[kind] += 1
        if any(overlaps(span, tuple(flag.span)) for flag in replaced):
            figures.decoys_damaged[kind] += 1


def scenario_cases(name: str) -> list[tuple[Any, dict[str, Any]]]:
    """``(Scenario, labels)`` of a scenario set (the demo labels are joined to the bundled demo scenarios)."""
    from pipeline.records import Scenario

    rows = read_jsonl(FIXTURES / name)
    if name == "demo_labels.jsonl":
        demo = {row["id"]: Scenario.model_validate(row) for row in read_jsonl(DEMO_SCENARIOS)}
        return [(demo[row["id"]], row) for row in rows]
    return [(Scenario.model_validate(row["scenario"]), row) for row in rows]


def scenario_figures(name: str) -> Figures:
    """Run preprocess's per-scenario cleaning on every labelled scenario and count what it did to each field."""
    from pipeline.curation.fields import text_fields
    from pipeline.curation.preprocess import clean_scenario

    figures = Figures()
    for scenario, labels in scenario_cases(name):
        figures.cases += 1
        _, report = clean_scenario(scenario)
        pii = [flag for flag in report.flags if flag.kind == "pii"]
        for path, text in text_fields(scenario):
            flags = [flag for flag in pii if flag.field == path]
            _score_field(figures, f"{scenario.id} {path}", text, labels, flags)
    return figures


@dataclass(frozen=True)
class _Hit:
    """A detector hit seen as a flag (what :func:`_score_field` reads)."""

    entity: str
    span: Span
    before: str
    after: str
    action: str


def text_figures(name: str) -> Figures:
    """The text sets, through :func:`pipeline.curation.pii.detect_all` (``keep`` as the case gives it)."""
    from pipeline.curation.pii import detect_all

    figures = Figures()
    for case in read_jsonl(FIXTURES / name):
        figures.cases += 1
        labels = {"identifiers": case["expect"], "decoys": []}
        hits = [
            _Hit(hit.entity, (hit.start, hit.end), hit.text, "", hit.action)
            for hit in detect_all(case["text"], keep=case.get("keep", []))
        ]
        _score_field(figures, f"{case['id']} user_input", case["text"], labels, hits)
    return figures


def meta_figures(name: str) -> Figures:
    """A meta span counts when its text (stripped) equals an expected one; every other span is a false flag."""
    from pipeline.curation.meta import meta_spans

    figures = Figures()
    for case in read_jsonl(FIXTURES / name):
        figures.cases += 1
        expected = Counter(text.strip() for text in case["meta"])
        got = Counter(case["text"][span.start : span.end].strip() for span in meta_spans(case["text"]))
        figures.expected["reference", "meta_text"] += sum(expected.values())
        figures.found["reference", "meta_text"] += sum((expected & got).values())
        figures.caught["reference", "meta_text"] += sum((expected & got).values())
        figures.false_flags["reference", "meta_text"] += sum((got - expected).values())
        figures.examples.extend(f"meta false flag {text!r}" for text in got - expected)
    return figures


def demo_meta_false_flags() -> list[str]:
    """Meta-text spans found in the generated fields of the demo scenarios (which hold no meta-commentary)."""
    from pipeline.curation.fields import text_fields
    from pipeline.curation.meta import meta_spans
    from pipeline.curation.preprocess import GENERATED_PREFIXES

    found = []
    for scenario, _ in scenario_cases("demo_labels.jsonl"):
        for path, text in text_fields(scenario):
            if path.startswith(GENERATED_PREFIXES):
                found.extend(f"{scenario.id} {path}: {text[s.start : s.end]!r}" for s in meta_spans(text))
    return found


def main() -> None:
    for name in SCENARIO_SETS:
        figures = scenario_figures(name)
        print(figures.line(name))
        print("\n".join(figures.table()))
        print("\n".join(f"    {example}" for example in figures.examples))
    for name in TEXT_SETS:
        figures = text_figures(name)
        print(figures.line(name))
        print("\n".join(f"    {example}" for example in figures.examples))
    for name in META_SETS:
        figures = meta_figures(name)
        print(figures.line(name))
        print("\n".join(f"    {example}" for example in figures.examples))
    print(f"demo meta-text false flags: {demo_meta_false_flags()}")


if __name__ == "__main__":
    main()
