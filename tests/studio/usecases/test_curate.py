"""Curation on the real store (SQLite and PostgreSQL), through the use cases (``studio.usecases.curate``, which
authorise the caller) and the services below them: browse with filters and pages, one scenario's tallies, accept /
edit / reject with an audit trail, immutable dataset versions, and re-ingesting under edits."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from pipeline.records import Scenario
from pipeline.rundir import RunDir
from studio.db import read_session, write_session
from studio.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from studio.models import AuditLog, ResponseRow, UserPublic
from studio.models.curation import DatasetVersion, ImmutableVersionError
from studio.services import curation
from studio.services.aggregation import aggregate_campaign
from studio.services.ingest import ingest_run
from studio.services.listing import ResponseFilters, ScenarioFilters, parse
from studio.usecases import curate
from tests.studio.helpers import make_scenarios, write_run


@pytest.fixture
def aggregated(voted: Engine) -> Engine:
    """The corpus after the crowd vote (see ``conftest.voted``), aggregated."""
    with write_session(voted) as session:
        aggregate_campaign(session, campaign="vote")
    return voted


def ids(page: curation.Page) -> list[str]:
    return [row["id"] for row in page.rows]


def test_browse_scenarios_filters_and_pages(aggregated: Engine, users: dict[str, UserPublic]) -> None:
    researcher = users["researcher"]
    with read_session(aggregated) as session:

        def browse(**filters: object) -> curation.Page:
            return curate.browse_scenarios(session, caller=researcher, filters=parse(ScenarioFilters, **filters))

        # iti-2's verdict agrees (keep 2/2); its subtask label ties, which the classification rule leaves alone.
        assert ids(browse(status="in_review")) == ["dlg-3", "iti-3"]
        assert ids(browse(agreement_below=0.6)) == ["dlg-3", "iti-3"]
        assert ids(browse(disagreement=True)) == ["dlg-3", "iti-3"]
        assert ids(browse(subtask="itinerary_basic", order="id")) == ["iti-1", "iti-3"]
        # The ties differ from any crowd model: by default the models' disagreements come first.
        assert ids(browse(subtask="itinerary_basic")) == ["iti-3", "iti-1"]
        assert ids(browse(status="pending")) == []
        first, second = browse(page_size=4), browse(page=2, page_size=4)
        assert (first.total, len(first.rows), len(second.rows)) == (6, 4, 2)
        tied = ["dlg-3", "iti-3"]
        assert ids(first) + ids(second) == tied + sorted(s.id for s in make_scenarios() if s.id not in tied)
        with pytest.raises(InvalidInput, match="status"):
            browse(status="maybe")
        with pytest.raises(InvalidInput, match="page_size"):
            browse(page_size=0)


def test_browse_responses_by_flag_and_adjudication(aggregated: Engine, users: dict[str, UserPublic]) -> None:
    with read_session(aggregated) as session:
        flagged = curate.browse_responses(
            session, caller=users["curator"], filters=ResponseFilters(flagged=True, page_size=100)
        )
        every = curate.browse_responses(session, caller=users["curator"], filters=ResponseFilters(page_size=100))
        alpha = curate.browse_responses(
            session, caller=users["curator"], filters=ResponseFilters(model="model-alpha", variant="with_sap")
        )
        expected = session.execute(select(func.count()).where(ResponseRow.needs_adjudication.is_(True))).scalar_one()
    assert flagged.total == expected > 0 and all(row["needs_adjudication"] for row in flagged.rows)
    assert every.total == 24 and alpha.total == 6
    assert {row["model"] for row in alpha.rows} == {"model-alpha"}


def test_scenario_detail_shows_tallies_agreement_comments_and_scores(
    aggregated: Engine, users: dict[str, UserPublic]
) -> None:
    with read_session(aggregated) as session:
        detail = curate.scenario_detail(session, caller=users["curator"], scenario_id="dlg-3")
        with pytest.raises(NotFound):
            curate.scenario_detail(session, caller=users["curator"], scenario_id="nope")
    (vote,) = detail["campaigns"]
    assert vote["questions"]["verdict"] == {"counts": {"keep": 1, "discard": 1}, "percent_agreement": 0.0}
    assert vote["questions"]["subtask_label"]["percent_agreement"] == 1.0
    assert {c["text"] for c in vote["comments"]} == {"ann-1 on dlg-3", "ann-2 on dlg-3"}
    assert len(detail["responses"]) == 4 and all(r["S"] is not None for r in detail["responses"])
    assert detail["status"]["status"] == "in_review" and detail["base_changed"] is False


def audit_entries(engine: Engine, action: str) -> list[AuditLog]:
    with read_session(engine) as session:
        return list(session.execute(select(AuditLog).where(AuditLog.action == action)).scalars())


def test_decisions_need_a_reason_are_audited_and_outrank_aggregation(
    aggregated: Engine, users: dict[str, UserPublic]
) -> None:
    curator = users["curator"]
    with write_session(aggregated) as session, pytest.raises(InvalidInput, match="reason"):
        curate.decide(session, caller=curator, scenario_id="dlg-1", action="reject", reason="  ")
    assert audit_entries(aggregated, "scenario.reject") == []
    with write_session(aggregated) as session:
        curate.decide(session, caller=curator, scenario_id="dlg-1", action="reject", reason="duplicate")
        curate.decide(
            session,
            caller=curator,
            scenario_id="dlg-2",
            action="edit",
            reason="typo",
            edits={"reference": "我在这里陪着你。你现在安全吗？"},
        )
        with pytest.raises(InvalidInput, match="edits.reference"):
            curate.decide(
                session, caller=curator, scenario_id="dlg-2", action="edit", reason="x", edits={"reference": ""}
            )
        with pytest.raises(InvalidInput, match="edits.id"):
            curate.decide(
                session, caller=curator, scenario_id="dlg-2", action="edit", reason="x", edits={"id": "other"}
            )
    (reject,) = audit_entries(aggregated, "scenario.reject")
    assert reject.actor == "curator" and reject.detail["reason"] == "duplicate"
    assert reject.detail["before"]["status"] == "accepted" and reject.detail["after"]["status"] == "rejected"
    (edit,) = audit_entries(aggregated, "scenario.edit")
    assert edit.detail["before"]["edits"] == {} and edit.detail["after"]["edits"]["reference"].startswith("我在")
    with write_session(aggregated) as session:
        assert aggregate_campaign(session, campaign="vote").changed == 0
        page = curate.browse_scenarios(session, caller=curator, filters=ScenarioFilters(status="rejected"))
        detail = curate.scenario_detail(session, caller=curator, scenario_id="dlg-2")
    assert ids(page) == ["dlg-1", "iti-1"]
    assert detail["scenario"]["reference"] == "我在这里陪着你。你现在安全吗？"
    assert detail["ingested"]["reference"] == "I'm here with you. Are you safe right now?"
    assert detail["status"]["status"] == "accepted"  # an edit is an edit-and-accept, in one step
    assert detail["status"]["decided_by"] == "curator:curator"


def test_audit_entries_newest_first_filtered_and_limited(aggregated: Engine, users: dict[str, UserPublic]) -> None:
    curator = users["curator"]
    with write_session(aggregated) as session:
        for scenario_id, reason in (("dlg-1", "first"), ("dlg-2", "second"), ("dlg-1", "third")):
            curate.decide(session, caller=curator, scenario_id=scenario_id, action="accept", reason=reason)
        curate.publish(session, caller=curator, name="v1")
    with read_session(aggregated) as session:
        everything = curate.audit_entries(session, caller=curator)
        of_dlg1 = curate.audit_entries(session, caller=curator, scenario_id="dlg-1")
        newest = curation.list_audit_entries(session, visible=None, entity="scenario", limit=1)
        versions = curation.list_audit_entries(session, visible=None, entity="dataset_version")
        for bad in (0, curation.MAX_AUDIT_ENTRIES + 1):
            with pytest.raises(InvalidInput, match="limit"):
                curate.audit_entries(session, caller=curator, limit=bad)
    assert [entry.id for entry in everything] == sorted((entry.id for entry in everything), reverse=True)
    assert [entry.action for entry in everything[:4]] == ["dataset.publish", *["scenario.accept"] * 3]
    assert [entry.detail["reason"] for entry in of_dlg1] == ["third", "first"]
    assert [(entry.entity_id, entry.detail["reason"]) for entry in newest] == [("dlg-1", "third")]
    assert [(entry.action, entry.entity_id, entry.actor) for entry in versions] == [
        ("dataset.publish", "v1", "curator")
    ]


def test_published_versions_are_immutable_and_identical_content_returns_the_existing_one(
    aggregated: Engine, users: dict[str, UserPublic]
) -> None:
    curator = users["curator"]
    with write_session(aggregated) as session:
        curate.decide(
            session,
            caller=curator,
            scenario_id="dlg-2",
            action="edit",
            reason="typo",
            edits={"user_input": "I feel hopeless today."},
        )
        curate.decide(session, caller=curator, scenario_id="dlg-2", action="accept", reason="fixed")
        first, created = curate.publish(session, caller=curator, name="v1")
    assert created and first.n_scenarios == 3  # dlg-1 and iti-2 accepted by the crowd's rule, dlg-2 by the curator
    with write_session(aggregated) as session:
        again, created_again = curate.publish(session, caller=curator, name="v1-copy")
        records = curate.dataset_version_records(session, caller=users["researcher"], version="v1")
    assert not created_again and again.id == first.id and again.name == "v1"
    assert [r["id"] for r in records] == ["dlg-1", "dlg-2", "iti-2"]
    assert records[1]["user_input"] == "I feel hopeless today."
    assert all(Scenario.model_validate(record) for record in records)
    with write_session(aggregated) as session:
        curate.decide(session, caller=curator, scenario_id="iti-3", action="accept", reason="ok")
        with pytest.raises(Conflict, match="v1"):
            curate.publish(session, caller=curator, name="v1")
        second, _ = curate.publish(session, caller=curator, name="v2", note="with iti-3")
    assert second.n_scenarios == 4 and second.content_hash != first.content_hash
    with write_session(aggregated) as session:
        assert len(curation.dataset_version_records(session, version="v1")) == 3
        stored = session.execute(select(DatasetVersion).where(DatasetVersion.name == "v1")).scalars().one()
        stored.note = "rewritten"
        with pytest.raises(ImmutableVersionError):
            session.flush()
        session.rollback()
    with write_session(aggregated) as session:
        assert [v.name for v in curate.dataset_versions(session, caller=users["researcher"])] == ["v1", "v2"]
    assert [e.entity_id for e in audit_entries(aggregated, "dataset.publish")] == ["v1", "v2"]


def test_publishing_nothing_accepted_is_refused(store: Engine, corpus: Engine, users: dict[str, UserPublic]) -> None:
    with write_session(store) as session, pytest.raises(InvalidInput, match="no accepted scenario"):
        curate.publish(session, caller=users["admin"], name="empty")


def test_reingest_keeps_ids_and_curator_edits(
    store: Engine, corpus: Engine, run_dir: RunDir, users: dict[str, UserPublic], tmp_path: Path
) -> None:
    curator = users["curator"]
    with write_session(store) as session:
        curate.decide(
            session,
            caller=curator,
            scenario_id="dlg-1",
            action="edit",
            reason="warmer",
            edits={"reference": "辛苦啦，抱抱你，先好好休息。"},
        )
    with read_session(store) as session:
        before = dict(
            session.execute(
                select(ResponseRow.scenario_id + ":" + ResponseRow.model + ":" + ResponseRow.variant, ResponseRow.id)
            ).all()
        )
    report = ingest_run(store, run_dir)
    assert (report.scenarios_added, report.scenarios_updated, report.responses_added) == (0, 0, 0)
    scenarios = make_scenarios()
    scenarios[0] = scenarios[0].model_copy(update={"user_input": "今天真的好累。"})
    ingest_run(store, write_run(tmp_path / "run2", scenarios=scenarios))
    with read_session(store) as session:
        after = dict(
            session.execute(
                select(ResponseRow.scenario_id + ":" + ResponseRow.model + ":" + ResponseRow.variant, ResponseRow.id)
            ).all()
        )
        detail = curate.scenario_detail(session, caller=curator, scenario_id="dlg-1")
        page = curate.browse_scenarios(session, caller=curator, filters=ScenarioFilters(subtask="dialogue_base"))
    assert after == before
    assert detail["scenario"]["reference"] == "辛苦啦，抱抱你，先好好休息。"
    assert detail["scenario"]["user_input"] == "今天真的好累。"
    assert detail["base_changed"] is True and page.rows[0]["base_changed"] is True
    assert audit_entries(store, "scenario.update")[0].entity_id == "dlg-1"


@pytest.mark.parametrize("role", ["annotator", "expert", "researcher"])
def test_roles_for_curation(store: Engine, corpus: Engine, users: dict[str, UserPublic], role: str) -> None:
    user = users[role]
    with write_session(store) as session:
        with pytest.raises(PermissionDenied):
            curate.decide(session, caller=user, scenario_id="dlg-1", action="accept", reason="ok")
        with pytest.raises(PermissionDenied):
            curate.publish(session, caller=user, name="v")
        readers = (
            lambda: curate.browse_scenarios(session, caller=user),
            lambda: curate.browse_responses(session, caller=user),
            lambda: curate.scenario_detail(session, caller=user, scenario_id="dlg-1"),
            lambda: curate.dataset_versions(session, caller=user),
            lambda: curate.dataset_version_records(session, caller=user, version="v"),
            lambda: curate.audit_entries(session, caller=user),
        )
        for read in readers:
            if role == "researcher":
                with contextlib.suppress(NotFound):  # an unknown version: the role check passed
                    read()
            else:
                with pytest.raises(PermissionDenied):
                    read()
    with read_session(store) as session:
        assert (
            session.execute(
                select(func.count()).select_from(AuditLog).where(AuditLog.action.like("scenario.%"))
            ).scalar_one()
            == 0
        )
