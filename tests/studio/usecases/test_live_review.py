"""The expert review of live sessions the crisis tripwire marked: the list experts work from, the transcript they may
read only while a session waits for them, and the review that clears the mark (kept on the session and audit-logged)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from pipeline.live.standin import StandinCompanion
from studio.db import read_session, write_session
from studio.errors import Conflict, PermissionDenied
from studio.models import AuditLog, UserPublic
from studio.usecases import live
from tests.studio.helpers import add_people
from tests.studio.live_helpers import CRISIS_TEXT, ORDINARY_TEXT, context_of, live_campaign, say, start


@pytest.fixture
def standin() -> Iterator[StandinCompanion]:
    with StandinCompanion(token_delay_s=0.0) as companion:
        yield companion


def _flagged_and_plain(engine: Engine, password_hash: str, base_url: str) -> tuple[list[UserPublic], str, str]:
    raters = live_campaign(engine, password_hash, base_url=base_url, variants=["without_sap"])
    flagged, plain = (start(engine, rater).session_id for rater in raters)
    say(context_of(engine, raters[0]), flagged, CRISIS_TEXT)
    say(context_of(engine, raters[1]), plain, ORDINARY_TEXT)
    return raters, flagged, plain


def test_an_expert_lists_reads_and_reviews_a_marked_session(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    raters, flagged, plain = _flagged_and_plain(engine, password_hash, standin.base_url)
    expert = add_people(engine, password_hash, ["expert-1"], "expert")[0]
    with read_session(engine) as session:
        waiting = live.sessions_for_review(session, caller=expert, campaign="live")
        assert [entry.session_id for entry in waiting] == [flagged]
        assert waiting[0].flagged_messages == 1 and waiting[0].failed_replies == 1
        assert "dismissive" in waiting[0].missing and "no risk check" in waiting[0].missing
        assert live.transcript(session, caller=expert, session_id=flagged).turns[0].crisis
        with pytest.raises(PermissionDenied, match="marked for review"):
            live.transcript(session, caller=expert, session_id=plain)
        with pytest.raises(PermissionDenied):
            live.sessions_for_review(session, caller=raters[1], campaign="live")
    with write_session(engine) as session:
        reviewed = live.review_session(
            session, caller=expert, session_id=flagged, review=live.ReviewIn(note="called the rater; script only")
        )
    assert not reviewed.needs_review and reviewed.reviewed_by == "expert-1"
    assert reviewed.review_note == "called the rater; script only"
    with read_session(engine) as session:
        assert live.sessions_for_review(session, caller=expert, campaign="live") == []
        # Reviewed: the expert's access ends with the review (researchers still read it).
        with pytest.raises(PermissionDenied):
            live.transcript(session, caller=expert, session_id=flagged)
        audit = session.execute(select(AuditLog).where(col(AuditLog.action) == "live.review")).scalars().all()
        assert [(entry.actor, entry.entity_id) for entry in audit] == [("expert-1", flagged)]
    with write_session(engine) as session, pytest.raises(Conflict, match="reviewed by expert-1"):
        live.review_session(session, caller=expert, session_id=flagged, review=live.ReviewIn(note="again"))
    with write_session(engine) as session, pytest.raises(Conflict, match="not waiting for review"):
        live.review_session(session, caller=expert, session_id=plain, review=live.ReviewIn(note="nothing"))
