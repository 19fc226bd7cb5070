"""The store keeps a column per metric (the schema; tests/studio/test_db.py keeps the migrations equal to the
models): the columns, and every list of score columns the services read, follow ``pipeline.taxonomy``."""

from __future__ import annotations

from pipeline.taxonomy import JUDGE_SCORE_NAMES, METRIC_LABELS, METRIC_NAMES, TABLE3_METRIC_NAMES
from studio.models import ScoreRow
from studio.results.store_views import SCORE_COLUMNS, SCORE_METRICS
from studio.results.tables import TABLE3_METRICS
from studio.services.ingest import SCORE_FIELDS
from studio.services.research import SAFETY_SCORE_COLUMNS
from studio.services.research_quality import JUDGE_METRICS, METRIC_RANGES
from studio.ui.curate_responses import SCORE_LABELS


def test_the_score_table_has_a_column_per_metric_and_judge_score() -> None:
    columns = set(ScoreRow.__table__.columns.keys())  # type: ignore[attr-defined]
    missing = [name for name in (*METRIC_NAMES, *JUDGE_SCORE_NAMES) if name not in columns]
    assert not missing, (
        f"studio.models.corpus.ScoreRowBase lacks column(s) {missing} of pipeline.taxonomy.METRICS / JUDGE_SCORES: "
        "add each as `name: float | None = None` and a migration in studio/migrations/versions/"
    )


def test_the_services_read_every_metric_in_registry_order() -> None:
    assert SCORE_FIELDS == METRIC_NAMES
    assert (*METRIC_NAMES, *JUDGE_SCORE_NAMES) == SCORE_METRICS
    start = SCORE_COLUMNS.index(METRIC_NAMES[0])
    assert SCORE_COLUMNS[start : start + len(SCORE_METRICS)] == SCORE_METRICS
    assert tuple(METRIC_RANGES) == SCORE_METRICS
    assert set(JUDGE_SCORE_NAMES) == JUDGE_METRICS


def test_table3_and_the_curation_page_label_from_the_registry() -> None:
    assert {name: METRIC_LABELS[name] for name in TABLE3_METRIC_NAMES} == TABLE3_METRICS
    assert TABLE3_METRICS == {"bleu4": "BLEU-4", "rougeL": "ROUGE-L", "ss": "SS"}
    assert SAFETY_SCORE_COLUMNS[3:-1] == TABLE3_METRIC_NAMES
    assert list(SCORE_LABELS.values()) == ["S", "BLEU-4", "ROUGE-L", "SS", "J_judge", "J", "J_human", "J_final"]
