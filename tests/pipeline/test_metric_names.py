"""One list of metric names (``pipeline.taxonomy.METRICS``): no module types the names out again, and the record
classes that must spell each metric as a field keep those fields equal to the registry."""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.commands.score import OUTPUT_FIELDS
from pipeline.records import Score
from pipeline.scoring.combine import automatic_scores, combine_s, s_of
from pipeline.scoring.lexical import LexicalScores
from pipeline.taxonomy import COMBINED_METRIC, METRIC_NAMES, METRICS, S_TERMS, SIMILARITY_METRIC

ROOT = Path(__file__).resolve().parents[2]
#: Where a metric's name or label may be typed: the registry, and the migrations (history: the schema as it was).
DECLARED_IN = ("pipeline/taxonomy.py",)
HISTORY = ("studio/migrations/",)
#: (file, literal) that may stay, and why. S is left out of the check: it is the one combined score, named on its
#: own by the leaderboard, J and the results pages (as J_final is); a hand list of metrics still names the others.
ALLOWED: dict[tuple[str, str], str] = {
    ("pipeline/departures.py", "SS"): "the topic of a departure from the paper, prose",
}


def _watched() -> set[str]:
    """The registry's names and labels, but S's."""
    return {value for metric in METRICS if metric.name != COMBINED_METRIC for value in (metric.name, metric.label)}


def _literals(root: Path, watched: set[str]) -> Iterator[tuple[str, int, str]]:
    """(file, line, literal) of every string constant in ``watched`` under root's pipeline/ and studio/."""
    for package in ("pipeline", "studio"):
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in DECLARED_IN or relative.startswith(HISTORY):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in watched:
                    yield relative, node.lineno, str(node.value)


def hand_typed(root: Path) -> list[str]:
    """``file:line: 'literal'`` of every metric name or label typed outside the registry (and not allowed)."""
    return [
        f"{file}:{line}: {literal!r}"
        for file, line, literal in _literals(root, _watched())
        if (file, literal) not in ALLOWED
    ]


def test_no_module_types_a_metric_name_or_label_by_hand() -> None:
    found = hand_typed(ROOT)
    assert not found, (
        "metric names/labels typed by hand; derive them from pipeline.taxonomy (METRIC_NAMES, METRIC_LABELS, "
        "S_TERMS, TABLE3_METRIC_NAMES):\n" + "\n".join(found)
    )


def test_the_check_sees_a_hand_typed_list(tmp_path: Path) -> None:
    (tmp_path / "studio").mkdir()
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "studio" / "listing.py").write_text('FIELDS = ("bleu1", "rougeL", "S")\nTITLE = "ROUGE-L"\n')
    assert sorted(hand_typed(tmp_path)) == [
        "studio/listing.py:1: 'bleu1'",
        "studio/listing.py:1: 'rougeL'",
        "studio/listing.py:2: 'ROUGE-L'",
    ]


def test_the_allowed_literals_are_still_there() -> None:
    """An allowance nobody needs any more is removed, so the list stays the list of open exceptions."""
    seen = {(file, literal) for file, _, literal in _literals(ROOT, _watched())}
    assert set(ALLOWED) <= seen, sorted(set(ALLOWED) - seen)


def test_the_score_record_has_a_field_per_metric_in_registry_order() -> None:
    fields = [name for name in Score.model_fields if name in set(METRIC_NAMES)]
    missing = [name for name in METRIC_NAMES if name not in Score.model_fields]
    assert not missing, f"pipeline.records.Score lacks a field for metric(s) {missing} of pipeline.taxonomy.METRICS"
    assert tuple(fields) == METRIC_NAMES, "pipeline.records.Score's metric fields are out of the registry's order"


def test_every_lexical_score_is_a_metric_and_every_term_of_s_is_computed() -> None:
    lexical = set(LexicalScores._fields)
    assert lexical <= set(METRIC_NAMES), f"LexicalScores fields {lexical - set(METRIC_NAMES)} are not in METRICS"
    uncomputed = set(S_TERMS) - lexical - {SIMILARITY_METRIC}
    assert not uncomputed, f"terms of S {uncomputed} are neither in LexicalScores nor the similarity"


def test_every_metric_is_in_01_and_s_averages_seven_terms() -> None:
    assert all((metric.low, metric.high) == (0.0, 1.0) for metric in METRICS)
    assert len(S_TERMS) == 7
    assert COMBINED_METRIC not in S_TERMS


def test_score_pairs_writes_id_then_every_metric() -> None:
    assert ("id", *METRIC_NAMES) == OUTPUT_FIELDS


def test_s_is_the_papers_sum_bit_for_bit() -> None:
    generator = random.Random(19)
    for _ in range(2000):
        values = [generator.random() for _ in range(7)]
        bleu, rouge1, rouge_l, ss = values[:4], values[4], values[5], values[6]
        expected = (sum(bleu) + rouge1 + rouge_l + ss) / 7.0
        assert combine_s(bleu, rouge1, rouge_l, ss) == expected
        lexical = LexicalScores._make(values[:6])._asdict()
        scores = automatic_scores(lexical, ss)
        assert tuple(scores) == METRIC_NAMES
        assert scores[COMBINED_METRIC] == expected


def test_without_a_similarity_s_is_undefined() -> None:
    lexical = LexicalScores._make([0.5] * 6)._asdict()
    assert automatic_scores(lexical, None)[COMBINED_METRIC] is None
    with pytest.raises(KeyError):
        s_of(lexical)
