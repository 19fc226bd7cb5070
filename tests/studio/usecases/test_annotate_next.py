"""studio.usecases.annotate.next_item: one person's nexts run one at a time — on PostgreSQL the person's lock is
taken by the statement that reads the campaign (no round trip of its own), and it still holds a second next back."""

from __future__ import annotations

import threading

from sqlalchemy import Engine, func, select

from studio.db import read_session, write_session
from studio.errors import PermissionDenied
from studio.models import CampaignPublic, Lease, UserPublic
from studio.usecases import annotate
from tests.studio.helpers import counted_statements


def test_a_second_next_waits_for_the_first_and_gets_its_item(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    person = users["annotator"]
    second: list[int] = []
    with write_session(corpus) as first:
        view = annotate.next_item(first, caller=person, campaign="vote", lease_seconds=300)
        assert view is not None

        def click_again() -> None:
            with write_session(corpus) as session:
                again = annotate.next_item(session, caller=person, campaign="vote", lease_seconds=300)
                second.append(-1 if again is None else again.item_id)

        thread = threading.Thread(target=click_again)
        thread.start()
        thread.join(timeout=1.0)
        assert thread.is_alive() and second == []  # held back while the first next's transaction is open
    thread.join(timeout=30)
    assert second == [view.item_id]  # the lease the first one took, not a second item
    with read_session(corpus) as session:
        held = session.execute(select(func.count()).where(Lease.user_id == person.id)).scalar_one()  # type: ignore[arg-type]
    assert held == 1


def test_on_postgresql_the_campaign_read_takes_the_lock(
    db_url: str, corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    with counted_statements(corpus) as statements, write_session(corpus) as session:
        assert annotate.next_item(session, caller=users["annotator"], campaign="vote", lease_seconds=300)
    locks = [statement for statement in statements if "pg_advisory_xact_lock" in statement]
    if db_url.startswith("sqlite"):
        assert locks == []  # BEGIN IMMEDIATE: the write lock covers it
    else:
        assert len(locks) == 1 and "FROM campaign" in locks[0], locks


def test_a_caller_refused_the_campaign_gets_no_item(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    """The lock is taken before the check that the caller may answer; the check still refuses (nothing leased)."""
    refused = users["researcher"]
    try:
        with write_session(corpus) as session:
            annotate.next_item(session, caller=refused, campaign="vote", lease_seconds=300)
    except PermissionDenied:
        pass
    else:
        raise AssertionError("a researcher was handed an item of an annotators' campaign")
    with read_session(corpus) as session:
        assert session.execute(select(func.count()).select_from(Lease)).scalar_one() == 0
