"""A curator's decision on the real store (SQLite and PostgreSQL): it lands on the scenario the page shows, at the
revision it showed (a stale one is refused and stores nothing), an edit is an edit-and-accept in one step, and the
edit form's fields become edits with their problems named by field."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select

from studio.db import read_session, write_session
from studio.errors import Conflict, InvalidInput, PermissionDenied
from studio.models import AuditLog, UserPublic
from studio.models.curation import ScenarioStatus
from studio.services.curation_decisions import EditProblem, form_edits, form_values
from studio.usecases import curate


def shown(engine: Engine, caller: UserPublic, scenario_id: str) -> str:
    """The hidden field the page writes when it shows ``scenario_id``."""
    with read_session(engine) as session:
        return curate.ShownScenario.of(
            curate.scenario_detail(session, caller=caller, scenario_id=scenario_id)
        ).to_page()


def statuses(engine: Engine) -> dict[str, str]:
    with read_session(engine) as session:
        return {row.scenario_id: row.status for row in session.execute(select(ScenarioStatus)).scalars()}


def test_a_decision_lands_on_the_scenario_shown_at_its_revision(corpus: Engine, users: dict[str, UserPublic]) -> None:
    curator = users["curator"]
    page_of_dlg2 = shown(corpus, curator, "dlg-2")
    with write_session(corpus) as session:
        scenario, status = curate.decide_shown(
            session, caller=curator, shown=page_of_dlg2, action="reject", reason="off topic"
        )
    assert (scenario.scenario_id, status.status) == ("dlg-2", "rejected")
    assert statuses(corpus) == {"dlg-2": "rejected"}
    # The same page again: dlg-2 changed since (it was rejected), so a second decision from it is refused.
    with write_session(corpus) as session, pytest.raises(Conflict, match="dlg-2 changed since it was opened"):
        curate.decide_shown(session, caller=curator, shown=page_of_dlg2, action="accept", reason="oops")
    assert statuses(corpus) == {"dlg-2": "rejected"}
    with read_session(corpus) as session:
        assert len(session.execute(select(AuditLog).where(AuditLog.entity_id == "dlg-2")).all()) == 1


def test_a_page_that_shows_nothing_or_a_garbled_field_decides_nothing(
    corpus: Engine, users: dict[str, UserPublic]
) -> None:
    for page_field, problem in (("", "no scenario is open"), ('{"scenario_id": "dlg-1"}', "reload the page")):
        with write_session(corpus) as session, pytest.raises(InvalidInput, match=problem):
            curate.decide_shown(session, caller=users["curator"], shown=page_field, action="accept", reason="ok")
    with write_session(corpus) as session, pytest.raises(PermissionDenied):
        curate.decide_shown(
            session, caller=users["annotator"], shown=shown(corpus, users["curator"], "dlg-1"), action="accept",
            reason="x",
        )  # fmt: skip
    assert statuses(corpus) == {}


def test_rest_decisions_with_a_stale_revision_are_refused(corpus: Engine, users: dict[str, UserPublic]) -> None:
    curator = users["curator"]
    with read_session(corpus) as session:
        revision = curate.scenario_detail(session, caller=curator, scenario_id="dlg-1")["revision"]
    with write_session(corpus) as session:
        curate.decide(session, caller=curator, scenario_id="dlg-1", action="accept", reason="a", revision=revision)
    with write_session(corpus) as session, pytest.raises(Conflict):
        curate.decide(session, caller=curator, scenario_id="dlg-1", action="reject", reason="b", revision=revision)
    assert statuses(corpus) == {"dlg-1": "accepted"}


def test_an_edit_is_accepted_in_one_step_and_the_form_names_the_field_in_trouble(
    corpus: Engine, users: dict[str, UserPublic]
) -> None:
    curator = users["curator"]
    with read_session(corpus) as session:
        record = curate.scenario_detail(session, caller=curator, scenario_id="dlg-2")["scenario"]
    form = form_values(record)
    with write_session(corpus) as session, pytest.raises(EditProblem) as refused:
        curate.decide_shown(
            session,
            caller=curator,
            shown=shown(corpus, curator, "dlg-2"),
            action="edit",
            reason="typo",
            form={**form, "reference": ""},
        )
    assert refused.value.field == "reference" and "at least 1 character" in refused.value.problem
    assert statuses(corpus) == {}
    with write_session(corpus) as session, pytest.raises(InvalidInput, match="nothing was changed"):
        curate.decide_shown(
            session, caller=curator, shown=shown(corpus, curator, "dlg-2"), action="edit", reason="r", form=form
        )
    edited = {
        **form,
        "reference": "我在这里陪着你。",
        "context.memories": "likes tea\n\n walks at dusk ",
        "context.date": "2025-05-01",
    }
    with write_session(corpus) as session:
        _, status = curate.decide_shown(
            session, caller=curator, shown=shown(corpus, curator, "dlg-2"), action="edit", reason="fix", form=edited
        )
    assert status.status == "accepted" and status.decided_by == "curator:curator"
    assert status.edits["reference"] == "我在这里陪着你。"
    assert status.edits["context"]["memories"] == ["likes tea", "walks at dusk"]
    assert status.edits["context"]["date"] == "2025-05-01"
    with read_session(corpus) as session:
        detail = curate.scenario_detail(session, caller=curator, scenario_id="dlg-2")
    assert (
        detail["scenario"]["reference"] == "我在这里陪着你。" and detail["ingested"]["reference"] != "我在这里陪着你。"
    )


def test_form_edits_keep_only_what_changed() -> None:
    record = {
        "persona": "Mia",
        "user_input": "hi",
        "reference": "hello",
        "context": {"memories": ["a"], "schedule": [], "hobbies": [], "date": None},
    }
    assert form_edits(record, form_values(record)) == {}
    assert form_edits(record, {**form_values(record), "user_input": "hey"}) == {"user_input": "hey"}
    changed = form_edits(record, {**form_values(record), "context.location": " Hangzhou "})
    assert changed == {"context": {**record["context"], "location": "Hangzhou"}}
    with pytest.raises(EditProblem, match="edits.id"):
        form_edits(record, {"id": "other"})
