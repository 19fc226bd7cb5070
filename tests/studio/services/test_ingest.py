"""h2h ingest: a run directory into the store; idempotent; changed scenarios updated and audit-logged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from pipeline.records import ALPHA, JUDGED_SUBTASKS
from pipeline.rundir import RunDir, model_dump_line
from studio.db import read_session
from studio.models import AuditLog, ResponseRow, ScenarioRow, ScoreRow
from studio.services.ingest import IngestError, ingest_run
from tests.studio.conftest import make_scenarios, write_run


def table_counts(engine: Engine) -> dict[str, int]:
    with read_session(engine) as session:
        return {
            table.__name__: session.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (ScenarioRow, ResponseRow, ScoreRow, AuditLog)
        }


def snapshot(engine: Engine) -> list[tuple]:
    with read_session(engine) as session:
        rows = session.execute(select(ScoreRow, ResponseRow).join(ResponseRow).order_by(ScoreRow.id)).all()
        return [(score.model_dump(exclude={"updated_at"}), response.model_dump()) for score, response in rows]


def test_ingest_stores_everything_and_flags_itinerary_items_below_tau_or_unjudged(
    engine: Engine, run_dir: RunDir
) -> None:
    report = ingest_run(engine, run_dir)
    assert (report.scenarios_added, report.responses_added, report.scores_added) == (6, 24, 24)
    with read_session(engine) as session:
        rows = session.execute(select(ScoreRow, ResponseRow).join(ResponseRow)).all()
    judged = [(score, response) for score, response in rows if score.subtask in JUDGED_SUBTASKS]
    assert len(judged) == 12
    for score, response in judged:
        if response.scenario_id == "iti-3":  # no judgment at all
            assert score.J is None and response.needs_adjudication
        else:
            expected = ALPHA * 5 * score.S + (1 - ALPHA) * score.J_judge
            assert pytest.approx(expected) == score.J and score.J_final == pytest.approx(expected)
            assert response.needs_adjudication == (expected < 3.5)
    assert report.flagged_for_adjudication == sum(response.needs_adjudication for _, response in judged)
    assert all(
        score.J is None and not response.needs_adjudication
        for score, response in rows
        if score.subtask not in JUDGED_SUBTASKS
    )


def test_reingesting_the_same_run_changes_nothing(engine: Engine, run_dir: RunDir) -> None:
    ingest_run(engine, run_dir)
    before, counts = snapshot(engine), table_counts(engine)
    report = ingest_run(engine, run_dir)
    assert report.scenarios_added == report.scenarios_updated == report.responses_added == report.scores_added == 0
    assert report.scores_updated == report.responses_updated == 0
    assert snapshot(engine) == before and table_counts(engine) == counts


def test_changed_scenario_text_updates_in_place_and_is_audit_logged(engine: Engine, tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    ingest_run(engine, run)
    scenarios = make_scenarios()
    scenarios[0] = scenarios[0].model_copy(update={"reference": "新的参考回复。"})
    run.scenarios.write_text("".join(model_dump_line(s) + "\n" for s in scenarios), encoding="utf-8")
    report = ingest_run(engine, run)
    assert (report.scenarios_added, report.scenarios_updated) == (0, 1)
    with read_session(engine) as session:
        assert session.get(ScenarioRow, "dlg-1").reference == "新的参考回复。"
        logs = session.execute(select(AuditLog).where(AuditLog.action == "scenario.update")).scalars().all()
        assert session.execute(select(func.count()).select_from(ScenarioRow)).scalar_one() == 6
    assert [(log.entity_id, log.detail["fields"]) for log in logs] == [("dlg-1", ["reference"])]


def test_results_file_is_used_when_present(engine: Engine, run_dir: RunDir) -> None:
    from pipeline.results import build_results

    scenarios = run_dir.load_scenarios()
    from pipeline.records import Judgment, Score

    results = build_results(scenarios, run_dir.load(run_dir.scores, Score), run_dir.load(run_dir.judgments, Judgment))
    lines = []
    for result in results:
        data = result.model_dump(mode="json")
        if data["scenario_id"] == "iti-3":
            data["J_judge"], data["J"], data["J_final"], data["needs_adjudication"] = 5.0, 5.0, 5.0, False
        lines.append(json.dumps(data, ensure_ascii=False))
    run_dir.results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ingest_run(engine, run_dir)
    with read_session(engine) as session:
        rows = session.execute(
            select(ScoreRow, ResponseRow).join(ResponseRow).where(ResponseRow.scenario_id == "iti-3")
        ).all()
    assert rows and all(score.J == 5.0 and not response.needs_adjudication for score, response in rows)


def test_a_response_to_an_unknown_scenario_stores_nothing(engine: Engine, run_dir: RunDir) -> None:
    ingest_run(engine, run_dir)
    counts = table_counts(engine)
    scenarios = make_scenarios()[1:]  # dlg-1 dropped: its responses now name an unknown scenario
    fresh = write_run(run_dir.root.parent / "other", scenarios=scenarios)
    with fresh.responses.open("a", encoding="utf-8") as handle:
        handle.write(run_dir.responses.read_text(encoding="utf-8").splitlines()[0].replace("dlg-1", "nowhere") + "\n")
    with pytest.raises(IngestError, match="nowhere"):
        ingest_run(engine, fresh)
    assert table_counts(engine) == counts
