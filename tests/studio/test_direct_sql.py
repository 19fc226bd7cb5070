"""studio.direct_sql: hot-path statements run on the driver give what ``Connection.execute`` gives, on both stores —
rows (UTC timestamps, JSON, floats), row counts, listeners, SQLAlchemy's exceptions and a lost connection dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, exc, func, select, text
from sqlmodel import Session

from studio import direct_sql
from studio.db import core_connection, read_session, write_session
from studio.models import CampaignPublic, Lease, ScoreRow, UserPublic
from studio.services import answer_rows, lease_rows, queue_rows
from studio.services.answers import submit_answer
from studio.services.queue import take_lease
from tests.studio.helpers import counted_statements

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def answered(engine: Engine, user: UserPublic) -> tuple[int, str]:
    """One item leased and answered by ``user``: (item id, lease id)."""
    with write_session(engine) as session:
        handout = take_lease(session, campaign="vote", user=user)
        assert handout is not None
        item_id, lease_id = handout.item_id, handout.lease_id
    with write_session(engine) as session:
        submit_answer(
            session, campaign="vote", user=user, item_id=item_id, lease_id=lease_id, submission_id="s1", answers=VOTE
        )
    return item_id, lease_id


def both_ways(session: Session, statement: Any, params: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The rows of ``statement`` through the driver directly and through ``Connection.execute``."""
    direct = list(direct_sql.execute(session, statement, params))
    through_core = list(core_connection(session).execute(statement, params))
    return direct, through_core


def test_rows_equal_those_of_connection_execute(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    user = users["annotator"]
    item_id, lease_id = answered(corpus, user)
    now = datetime.now(UTC)
    with read_session(corpus) as session:
        score_response = session.scalar(select(ScoreRow.response_id).limit(1))
        statements = [
            (queue_rows._campaign_query(), {"name": "vote"}),
            (queue_rows._item_query(locked=False), {"item_id": item_id}),
            (lease_rows._lease_query(), {"lease_id": lease_id}),
            (lease_rows._live_lease_count_query(), {"item_id": item_id, "now": now, "excluding": ""}),
            (queue_rows._score_query(), {"response_id": score_response}),
            (
                answer_rows._earlier_answers_query(),
                {"submission_id": "s1", "item_id": item_id, "user_id": user.id, "lease_id": lease_id},
            ),
        ]
        for statement, params in statements:
            direct, through_core = both_ways(session, statement, params)
            assert direct, statement
            assert [tuple(row) for row in direct] == [tuple(row) for row in through_core], statement
            assert [row._asdict() for row in direct] == [row._asdict() for row in through_core], statement
        earlier = direct_sql.execute(session, *statements[-1]).one()
        assert earlier.answer_values == VOTE  # JSON read back as the object stored
        assert earlier.lease_released_at.tzinfo is not None  # an aware UTC timestamp, as through SQLAlchemy
        assert earlier.lease_released_at.utcoffset() == timedelta(0)
        assert isinstance(direct_sql.execute(session, *statements[4]).one().bleu1, float)
    assert earlier.lease_outcome == "answered"


def test_no_row_and_scalars(corpus: Engine, campaign: CampaignPublic) -> None:
    with read_session(corpus) as session:
        nothing = direct_sql.execute(session, lease_rows._lease_query(), {"lease_id": "no-such-lease"})
        assert nothing.first() is None and nothing.scalar() is None and list(nothing) == []
        with pytest.raises(LookupError, match="one row"):
            nothing.one()
        count = direct_sql.execute(
            session,
            lease_rows._live_lease_count_query(),
            {"item_id": 1, "now": datetime.now(UTC), "excluding": ""},
        )
        assert count.scalar_one() == 0


def test_an_update_reports_its_row_count(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    with write_session(corpus) as session:
        handout = take_lease(session, campaign="vote", user=users["annotator"])
        assert handout is not None
        bound = {"lease_id": handout.lease_id, "released_at": datetime.now(UTC), "outcome": "skipped"}
        assert direct_sql.execute(session, lease_rows._release_lease(), bound).rowcount == 1
        assert direct_sql.execute(session, lease_rows._release_lease(), bound).rowcount == 0
    with read_session(corpus) as session:
        assert session.get(Lease, handout.lease_id).outcome == "skipped"  # type: ignore[union-attr]


def test_listeners_see_each_statement_and_a_missing_value_is_named(corpus: Engine, campaign: CampaignPublic) -> None:
    with counted_statements(corpus) as seen, read_session(corpus) as session:
        direct_sql.execute(session, queue_rows._campaign_query(), {"name": "vote"})
        with pytest.raises(ValueError, match=r"\['name'\]"):
            direct_sql.execute(session, queue_rows._campaign_query(), {})
    assert sum("FROM campaign" in statement for statement in seen) == 1


def test_a_constraint_violation_is_sqlalchemys_integrity_error(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    user = users["annotator"]
    with write_session(corpus) as session:
        handout = take_lease(session, campaign="vote", user=user)
        assert handout is not None
    now = datetime.now(UTC)
    bound = {
        "id": handout.lease_id,  # the same id again: the lease's primary key refuses it
        "campaign_id": handout.campaign.id,
        "item_id": handout.item_id,
        "user_id": user.id,
        "issued_at": now,
        "expires_at": now + timedelta(minutes=5),
        "now": now,
        "quota": 20,
    }
    with pytest.raises(exc.IntegrityError), write_session(corpus) as session:
        direct_sql.execute(session, lease_rows._claim_lease(), bound)


def test_a_lost_connection_is_invalidated_and_the_pool_recovers(corpus: Engine, campaign: CampaignPublic) -> None:
    if corpus.dialect.name != "postgresql":
        pytest.skip("a server-side disconnect is a PostgreSQL matter")
    with pytest.raises(exc.OperationalError) as raised, read_session(corpus) as session:
        pid = direct_sql.execute(session, select(func.pg_backend_pid()), {}).scalar()
        with corpus.connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        direct_sql.execute(session, queue_rows._campaign_query(), {"name": "vote"})
    assert raised.value.connection_invalidated
    with read_session(corpus) as session:  # a fresh connection: the dead one never went back to the pool
        assert direct_sql.execute(session, queue_rows._campaign_query(), {"name": "vote"}).first() is not None
