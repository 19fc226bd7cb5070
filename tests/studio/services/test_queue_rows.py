"""studio.services.queue_rows.campaign_row with ``holding_item``: on PostgreSQL one statement reads the campaign and
locks its item; the item row is handed to the transaction's next locked read once, and the lock is really held."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, exc, text

from studio.db import write_session
from studio.models import CampaignPublic
from studio.services.queue_rows import campaign_row, item_row
from tests.studio.helpers import counted_statements


def reads(statements: list[str]) -> int:
    """How many of ``statements`` are reads or writes (SQLite's BEGIN IMMEDIATE left out)."""
    return sum(not statement.startswith("BEGIN") for statement in statements)


def first_item_id(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text("SELECT min(id) FROM item")).scalar_one())


def test_the_held_item_is_the_item_row_and_is_handed_over_once(
    db_url: str, corpus: Engine, campaign: CampaignPublic
) -> None:
    item_id = first_item_id(corpus)
    with write_session(corpus) as session:
        expected = item_row(session, item_id)
    with counted_statements(corpus) as statements, write_session(corpus) as session:
        found = campaign_row(session, "vote", holding_item=item_id)
        assert found is not None and found.name == "vote"
        assert reads(statements) == 1
        held = item_row(session, item_id, locked=True)
        # PostgreSQL: the campaign and its locked item in one statement, nothing after. SQLite: read on its own.
        sent = reads(statements)
        assert sent == (1 if db_url.startswith("postgresql") else 2)
        again = item_row(session, item_id, locked=True)  # handed over once: read again now
        assert reads(statements) == sent + 1
    assert tuple(held) == tuple(again) == tuple(expected)


def test_an_item_the_campaign_lacks_is_none(db_url: str, corpus: Engine, campaign: CampaignPublic) -> None:
    with write_session(corpus) as session:
        assert campaign_row(session, "vote", holding_item=2_000_000) is not None
        assert item_row(session, 2_000_000, locked=True) is None
        assert campaign_row(session, "no-such-campaign", holding_item=first_item_id(corpus)) is None


def test_the_held_item_is_not_handed_to_another_transaction(corpus: Engine, campaign: CampaignPublic) -> None:
    item_id = first_item_id(corpus)
    with counted_statements(corpus) as statements, write_session(corpus) as session:
        campaign_row(session, "vote", holding_item=item_id)
        session.commit()  # the transaction that held it ends; the session goes on in a new one
        before = reads(statements)
        assert item_row(session, item_id, locked=True) is not None
        assert reads(statements) == before + 1  # read (and locked) again, in this transaction


def test_on_postgresql_the_row_is_locked_until_the_transaction_ends(
    db_url: str, corpus: Engine, campaign: CampaignPublic
) -> None:
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock covers the transaction; nothing is locked by row")
    item_id = first_item_id(corpus)
    probe = text("SELECT id FROM item WHERE id = :id FOR NO KEY UPDATE NOWAIT")
    with write_session(corpus) as session:
        campaign_row(session, "vote", holding_item=item_id)
        with corpus.connect() as other, pytest.raises(exc.OperationalError, match="could not obtain lock"):
            other.execute(probe, {"id": item_id})
    with corpus.connect() as other:
        assert other.execute(probe, {"id": item_id}).scalar_one() == item_id
