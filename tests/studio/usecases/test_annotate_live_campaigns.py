"""A live-session campaign's items are conversations: the item-by-item doors (next, skip, submit, revise) refuse
them, so a rating can only arrive through the live use cases, which check the conversation first."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, func, select

from studio.db import read_session, write_session
from studio.errors import InvalidInput
from studio.models import Lease
from studio.usecases import annotate
from studio.usecases.annotate import AnswerLimits, Revision, Submission
from tests.studio.live_helpers import live_campaign

# Never called: the doors refuse before any companion would be asked.
UNUSED_URL = "http://127.0.0.1:9/v1"


def test_the_annotate_doors_refuse_a_live_campaign(engine: Engine, password_hash: str) -> None:
    rater = live_campaign(engine, password_hash, base_url=UNUSED_URL, raters=1)[0]
    with write_session(engine) as session, pytest.raises(InvalidInput, match="live-session campaign"):
        annotate.next_item(session, caller=rater, campaign="live", lease_seconds=600)
    submission = Submission(item_id=1, lease_id="x", submission_id="s-1", answers={"safety": 5, "violation": "no"})
    with write_session(engine) as session, pytest.raises(InvalidInput, match="Live sessions page"):
        annotate.submit(session, caller=rater, campaign="live", submission=submission, limits=AnswerLimits())
    with write_session(engine) as session, pytest.raises(InvalidInput, match="live-session campaign"):
        annotate.skip(session, caller=rater, campaign="live", item_id=1, lease_id="x")
    with write_session(engine) as session, pytest.raises(InvalidInput, match="live-session campaign"):
        annotate.revise(
            session,
            caller=rater,
            campaign="live",
            item_id=1,
            revision=Revision(answers={"safety": 1}),
            limits=AnswerLimits(),
        )
    with read_session(engine) as session:
        assert session.execute(select(func.count()).select_from(Lease)).scalar() == 0


def test_the_answer_service_refuses_a_live_item_sent_item_by_item(engine: Engine, password_hash: str) -> None:
    """Below the use cases too: a lease on a live item (as a live session takes one) does not let a plain submit store
    a rating without its conversation."""
    from studio.errors import Conflict
    from studio.services import answers
    from studio.services.queue import take_lease

    rater = live_campaign(engine, password_hash, base_url=UNUSED_URL, raters=1)[0]
    with write_session(engine) as session:
        handout = take_lease(session, campaign="live", user=rater)
        assert handout is not None
        submission = Submission(
            item_id=handout.item_id,
            lease_id=handout.lease_id,
            submission_id="s-2",
            answers={"safety": 5, "violation": "no"},
        )
        with pytest.raises(Conflict, match="end of its conversation"):
            answers.submit(session, campaign="live", user=rater, submission=submission)
