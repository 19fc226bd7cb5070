"""Submitting and revising answers: validation, idempotent retries, leases, time spent, nothing stored on error."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from studio.db import read_session, write_session
from studio.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from studio.models import Answer, AnswerRevision, CampaignPublic, Item, UserPublic, utc_now
from studio.services.answer_values import Revision
from studio.services.answers import revise_answer, submit_answer
from studio.services.campaigns import set_campaign_status
from studio.services.progress import progress
from studio.services.queue import next_item, skip_item
from tests.studio.conftest import add_people

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def stored_answers(engine: Engine) -> int:
    with read_session(engine) as session:
        return session.execute(select(func.count(Answer.id))).scalar_one()


def take(engine: Engine, user: UserPublic, **kwargs):  # noqa: ANN201
    with write_session(engine) as session:
        return next_item(session, campaign="vote", user=user, **kwargs)


def submit(engine: Engine, user: UserPublic, view, submission: str = "sub-1", **kwargs):  # noqa: ANN001,ANN201
    arguments = {"item_id": view.item_id, "lease_id": view.lease_id, "answers": VOTE} | kwargs
    with write_session(engine) as session:
        return submit_answer(session, campaign="vote", user=user, submission_id=submission, **arguments)


@pytest.mark.parametrize(
    ("answers", "problem"),
    [
        ({"verdict": "maybe", "subtask_label": "dialogue_base"}, "answers.verdict"),
        ({"verdict": "keep"}, "answers.subtask_label: an answer is required"),
        ({**VOTE, "mood": "happy"}, "answers.mood: unknown question"),
        ({**VOTE, "comment": "长" * 2001}, "answers.comment"),
    ],
)
def test_invalid_values_are_refused_naming_the_question_and_store_nothing(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], answers: dict, problem: str
) -> None:
    view = take(corpus, users["annotator"])
    with pytest.raises(InvalidInput, match=problem):
        submit(corpus, users["annotator"], view, answers=answers)
    assert stored_answers(corpus) == 0


def test_a_retry_returns_the_stored_answer_and_a_second_answer_is_a_conflict(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    person = users["annotator"]
    view = take(corpus, person)
    first = submit(corpus, person, view)
    retry = submit(corpus, person, view)
    assert first.created and not retry.created and retry.answer == first.answer
    with pytest.raises(Conflict, match="already answered"):
        submit(corpus, person, view, submission="sub-2")
    with read_session(corpus) as session:
        assert session.get(Item, view.item_id).answer_count == 1
    assert stored_answers(corpus) == 1


def test_someone_elses_lease_is_forbidden_and_a_skipped_lease_cannot_submit(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    owner, intruder = users["annotator"], add_people(corpus, password_hash, ["intruder"], "annotator")[0]
    view = take(corpus, owner)
    with pytest.raises(PermissionDenied, match="someone else"):
        submit(corpus, intruder, view)
    with pytest.raises(NotFound, match="item_id"):
        submit(corpus, owner, view, item_id=999)
    with write_session(corpus) as session:
        skip_item(session, campaign="vote", user=owner, item_id=view.item_id, lease_id=view.lease_id)
    with pytest.raises(Conflict, match="skipped"):
        submit(corpus, owner, view)
    assert stored_answers(corpus) == 0


def test_an_expired_lease_is_accepted_while_its_slot_is_free_and_refused_once_taken(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    slow, quick, other, third = add_people(corpus, password_hash, ["slow", "quick", "other", "third"], "annotator")
    now = utc_now()
    expired = take(corpus, quick, now=now)
    assert submit(corpus, quick, expired, now=now + timedelta(seconds=700)).created  # slot still free
    stale = take(corpus, slow, now=now)
    assert stale.item_id == expired.item_id  # the queue fills items first: the one an answer short of its quota
    later = now + timedelta(seconds=700)
    # slow's lease has expired; another takes the item's last slot (quota 2) with a live lease; then it is full.
    assert take(corpus, other, now=later).item_id == stale.item_id
    assert take(corpus, third, now=later).item_id != stale.item_id
    with pytest.raises(Conflict, match="expired"):
        submit(corpus, slow, stale, submission="late", now=later)
    assert stored_answers(corpus) == 1


def clock(*readings: datetime) -> Callable[[], datetime]:
    """A stand-in for ``utc_now`` that answers ``readings`` in turn (and fails if asked once more)."""
    pending = list(readings)
    return lambda: pending.pop(0)


def test_a_live_lease_near_expiry_is_accepted_when_another_expired_lease_gave_its_slot_away(
    corpus: Engine,
    campaign: CampaignPublic,
    users: dict[str, UserPublic],
    password_hash: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Quota 2: C's lease expires 30 s before A's; B takes C's slot. A, still within its lease, must be accepted
    even though its request read the clock while C's lease still looked live."""
    import studio.services.answers as answers_module

    early, holder, late = add_people(corpus, password_hash, ["early", "holder", "late"], "annotator")
    now = utc_now()
    first = take(corpus, early, now=now - timedelta(seconds=30))
    held = take(corpus, holder, now=now)
    assert take(corpus, late, now=now + timedelta(seconds=571)).item_id == held.item_id == first.item_id
    monkeypatch.setattr(answers_module, "utc_now", clock(now + timedelta(seconds=569), now + timedelta(seconds=572)))
    assert submit(corpus, holder, held, submission="in-time").created
    assert stored_answers(corpus) == 1


def test_a_submit_that_waited_for_the_item_lock_decides_with_the_clock_read_after_it(
    db_url: str,
    corpus: Engine,
    campaign: CampaignPublic,
    users: dict[str, UserPublic],
    password_hash: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PostgreSQL: the submit began 10 s before its lease expired and got the item's row lock at 601 s, after two
    ``next`` calls that saw the lease expired gave the item's two slots away: it reads its clock once, under the lock,
    and must not fill a third."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock is held from the submit's first read: no next runs in between")
    import studio.services.answers as answers_module

    slow, other, third = add_people(corpus, password_hash, ["slow", "other", "third"], "annotator")
    now = utc_now()
    held = take(corpus, slow, now=now)
    later = now + timedelta(seconds=601)  # the default lease is 600 s
    assert [take(corpus, person, now=later).item_id for person in (other, third)] == [held.item_id] * 2
    monkeypatch.setattr(answers_module, "utc_now", clock(later))  # a second reading would fail the test
    with pytest.raises(Conflict, match="expired"):
        submit(corpus, slow, held, submission="waited")
    assert stored_answers(corpus) == 0


def test_a_lease_closes_once(corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]) -> None:
    from studio.services.lease_rows import release_lease

    view = take(corpus, users["annotator"])
    with write_session(corpus) as session:
        assert release_lease(session, view.lease_id, at=utc_now(), outcome="skipped") is True
        assert release_lease(session, view.lease_id, at=utc_now(), outcome="answered") is False
        assert release_lease(session, "no-such-lease", at=utc_now(), outcome="answered") is False


def test_a_skip_committed_while_a_submit_of_the_same_lease_runs_makes_the_submit_fail(
    db_url: str,
    corpus: Engine,
    campaign: CampaignPublic,
    users: dict[str, UserPublic],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PostgreSQL: a skip takes its person's lock, a submit the item's row, so they can interleave (and must not
    deadlock: the skip's row pointing at the item locks it KEY SHARE); the skip freed the slot (maybe for someone
    else already), so the submit must not fill it too."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock runs a skip and a submit one after the other")
    import studio.services.answers as answers_module

    person = users["annotator"]
    view = take(corpus, person)
    check_lease = answers_module.checked_own_lease

    def read_then_skip_elsewhere(lease, *args):  # noqa: ANN001,ANN002,ANN202
        assert lease.released_at is None  # the submit has read the lease as open ...
        with write_session(corpus) as other:  # ... when a skip of it commits in another transaction
            skip_item(other, campaign="vote", user=person, item_id=view.item_id, lease_id=view.lease_id)
        return check_lease(lease, *args)

    monkeypatch.setattr(answers_module, "checked_own_lease", read_then_skip_elsewhere)
    with pytest.raises(Conflict, match="released meanwhile"):
        submit(corpus, person, view)
    assert stored_answers(corpus) == 0
    with read_session(corpus) as session:
        assert session.get(Item, view.item_id).answer_count == 0


def test_time_spent_is_measured_by_the_server_and_client_seconds_are_capped(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    person = users["annotator"]
    now = utc_now()
    view = take(corpus, person, now=now)
    with pytest.raises(InvalidInput, match="seconds_spent"):
        submit(corpus, person, view, seconds_spent=-3, now=now + timedelta(seconds=30))
    stored = submit(corpus, person, view, seconds_spent=10_000, now=now + timedelta(seconds=30)).answer
    assert stored.server_seconds == pytest.approx(30) and stored.seconds_spent == pytest.approx(35)


def test_revision_keeps_history_and_closing_the_campaign_stops_revisions(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    person = users["annotator"]
    view = take(corpus, person)
    submit(corpus, person, view)
    with write_session(corpus) as session:
        revised = revise_answer(
            session,
            campaign="vote",
            user=person,
            item_id=view.item_id,
            revision=Revision(answers={"verdict": "discard", "subtask_label": "dialogue_emotion"}),
        ).answer
    assert revised.revision == 1 and revised.values["verdict"] == "discard"
    with read_session(corpus) as session:
        history = session.execute(select(AnswerRevision)).scalars().all()
        mine = progress(session, campaign="vote", user=person)
    assert [(entry.revision, entry.values["verdict"]) for entry in history] == [(0, "keep")]
    assert (
        mine["mine"]["answers"] == 1
        and mine["mine"]["left"] == 5
        and mine["overall"] == {"answers": 1, "items": 6, "complete_items": 0}
    )
    with write_session(corpus) as session:
        set_campaign_status(session, name="vote", status="closed")
    with pytest.raises(PermissionDenied, match="closed"), write_session(corpus) as session:
        revise_answer(session, campaign="vote", user=person, item_id=view.item_id, revision=Revision(answers=VOTE))
    with write_session(corpus) as session:
        set_campaign_status(session, name="vote", status="open")
    stranger = add_people(corpus, password_hash, ["stranger"], "annotator")[0]
    with pytest.raises(NotFound, match="no answer"), write_session(corpus) as session:
        revise_answer(session, campaign="vote", user=stranger, item_id=view.item_id, revision=Revision(answers=VOTE))


@pytest.mark.parametrize("answers", [VOTE | {"comment": "\ud800"}, VOTE | {"\ud800": "x"}])
def test_text_that_is_not_unicode_is_refused_naming_the_field(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], answers: dict
) -> None:
    view = take(corpus, users["annotator"])
    with pytest.raises(InvalidInput, match=r"answers\..*not valid Unicode"):
        submit(corpus, users["annotator"], view, answers=answers)
    with pytest.raises(InvalidInput, match="submission_id"):
        submit(corpus, users["annotator"], view, submission="\udfff")
    assert stored_answers(corpus) == 0
