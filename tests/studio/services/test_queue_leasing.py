"""Handing out on PostgreSQL without a campaign-wide lock: items others hold are passed over (SKIP LOCKED), a lease
is inserted only while its item has a free slot as committed, and one person's requests run one at a time."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import Engine, event, func, select

from studio.db import read_session, write_session
from studio.models import CampaignPublic, Item, Lease, UserPublic, utc_now
from studio.services.lease_rows import claim_lease
from studio.services.queue import campaign_state, next_item
from tests.studio.conftest import add_people
from tests.studio.services.test_queue import answer


def leases_on(engine: Engine, item_id: int) -> int:
    with read_session(engine) as session:
        return session.execute(select(func.count()).where(Lease.item_id == item_id)).scalar_one()


def test_a_next_does_not_wait_for_another_annotators_open_handout(
    db_url: str, corpus: Engine, campaign: CampaignPublic, password_hash: str
) -> None:
    """While one annotator's next is still in its transaction (its item's row locked), another's next returns at once
    with another item; before, both queued on the campaign's lock."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite has one writer at a time by design (BEGIN IMMEDIATE)")
    first, second = add_people(corpus, password_hash, ["first", "second"], "annotator")
    holding, finished = threading.Event(), threading.Event()
    taken: dict[str, int] = {}

    def other_annotator() -> None:
        holding.wait(timeout=30)
        with write_session(corpus) as session:
            view = next_item(session, campaign="vote", user=second)
            taken["second"] = view.item_id if view else -1
        finished.set()

    thread = threading.Thread(target=other_annotator)
    thread.start()
    with write_session(corpus) as session:
        view = next_item(session, campaign="vote", user=first)
        assert view is not None
        taken["first"] = view.item_id
        holding.set()
        # Still inside the first transaction: the second next must complete without it.
        assert finished.wait(timeout=20), "the second next waited for the first annotator's transaction"
    thread.join(timeout=30)
    assert taken["second"] not in (-1, taken["first"])  # the first's item was locked: passed over, not shared


def test_a_lease_is_claimed_only_while_the_item_has_a_free_slot_as_committed(
    corpus: Engine, campaign: CampaignPublic, password_hash: str
) -> None:
    """The claim counts slots when it runs, not when the candidate was read: an item whose slots were taken
    meanwhile (two live leases on a two-person item) gets no third lease, and nothing is inserted."""
    one, two, late = add_people(corpus, password_hash, ["one", "two", "late"], "annotator")
    with write_session(corpus) as session:
        item_id = next_item(session, campaign="vote", user=one).item_id
    with write_session(corpus) as session:
        assert next_item(session, campaign="vote", user=two).item_id == item_id  # fill: the same item's second slot
    now = utc_now()
    with write_session(corpus) as session:
        found = campaign_state(session, "vote")
        claim = {"campaign": found, "item_id": item_id, "user_id": late.id, "issued_at": now}
        assert claim_lease(session, id="late-lease", expires_at=now + timedelta(seconds=60), **claim) is False
    assert leases_on(corpus, item_id) == 2
    with write_session(corpus) as session:  # a slot freed by expiry counts as free again
        found = campaign_state(session, "vote")
        later = now + timedelta(seconds=601)
        claim = {"campaign": found, "item_id": item_id, "user_id": late.id, "issued_at": later}
        assert claim_lease(session, id="late-lease", expires_at=later + timedelta(seconds=60), **claim) is True
    assert leases_on(corpus, item_id) == 3


def test_a_double_click_on_next_gives_one_lease(
    db_url: str, corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    """Two nexts of one person at once: the second waits for the first (the person's lock) and gets the same item
    back — never a second lease (no hoarding)."""
    person = users["annotator"]
    views: list[int] = []
    start = threading.Barrier(2)

    def click() -> None:
        start.wait(timeout=30)
        with write_session(corpus) as session:
            view = next_item(session, campaign="vote", user=person)
            views.append(view.item_id if view else -1)

    threads = [threading.Thread(target=click) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(views) == 2 and views[0] == views[1] != -1
    with read_session(corpus) as session:
        held = session.execute(select(func.count()).where(Lease.user_id == person.id)).scalar_one()
    assert held == 1


def test_fill_passes_over_the_items_others_hold_in_one_statement(
    db_url: str, corpus: Engine, campaign: CampaignPublic, password_hash: str
) -> None:
    """``fill`` on PostgreSQL: while another transaction holds the fullest open item, the next one in fill order
    (most answers first, then position) comes from one index scan — no level query, no candidate query per level."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite has one writer at a time by design (BEGIN IMMEDIATE): nothing is ever locked")
    first, holder, other = add_people(corpus, password_hash, ["first", "holder", "other"], "annotator")
    with write_session(corpus) as session:
        answered = next_item(session, campaign="vote", user=first)
        assert answered is not None
    answer(corpus, first, answered, "first-vote")  # the fullest item: one answer, none elsewhere
    statements: list[str] = []
    taken: dict[str, int] = {}

    def others_next() -> None:
        event.listen(corpus, "before_cursor_execute", lambda _c, _k, sql, *_a: statements.append(sql))
        with write_session(corpus) as session:
            view = next_item(session, campaign="vote", user=other)
            taken["other"] = view.item_id if view else -1

    with write_session(corpus) as session:
        held = next_item(session, campaign="vote", user=holder)
        assert held is not None and held.item_id == answered.item_id  # fill: the item with an answer first
        thread = threading.Thread(target=others_next)
        thread.start()
        thread.join(timeout=20)
    assert not thread.is_alive(), "the other next waited for the holder's transaction"
    with read_session(corpus) as session:
        positions = dict(session.execute(select(Item.id, Item.position).where(Item.campaign_id == campaign.id)).all())
    unanswered = sorted((position, item_id) for item_id, position in positions.items() if item_id != held.item_id)
    assert taken["other"] == unanswered[0][1]  # the first in position order among the items with no answer
    candidates = [sql for sql in statements if "SKIP LOCKED" in sql]
    assert len(candidates) == 1 and "fullest" not in " ".join(statements), statements
