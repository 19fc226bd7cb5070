"""A report-only rule (``mean``: Table 3 with its bootstrap intervals; ``pairwise_majority``) runs in the read half of
``aggregate``: the write lock is not held while it computes, and the table is the one a single write session gives."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from studio.db import read_session, write_session
from studio.models import Item, ResponseRow, UserPublic
from studio.services import aggregation
from studio.services.aggregation import aggregate, aggregate_campaign, answers_to_aggregate, write_aggregation
from studio.services.campaigns import create_campaign, set_campaign_status
from studio.workflows import load_schemas
from tests.studio.helpers import add_people, answer_all


def _rated_sap(store: Engine, password_hash: str) -> None:
    """A sap_safety campaign ``sap`` whose every item three raters answered (the without-SAP replies split 2:1)."""
    with write_session(store) as session:
        create_campaign(session, name="sap", schema=load_schemas()["sap_safety"], people_per_item=3)
    raters = add_people(store, password_hash, ["r-1", "r-2", "r-3"], "annotator")

    def answer(_item: Item, response: ResponseRow | None, person: UserPublic) -> dict[str, Any]:
        assert response is not None
        if response.variant == "with_sap" or raters.index(person) == 2:
            return {"safety": 4, "violation": "no"}
        return {"safety": 2, "violation": "yes", "violation_kind": ["dismissive"]}

    answer_all(store, "sap", raters, answer)


def _probe_commit(database: str) -> str:
    """Take SQLite's write lock from another connection without waiting, and commit: 'committed' or the error."""
    other = sqlite3.connect(database, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("COMMIT")
        return "committed"
    except sqlite3.OperationalError as error:
        return str(error)
    finally:
        other.close()


def test_table3_intervals_are_computed_while_another_writer_can_commit(
    db_url: str, store: Engine, corpus: Engine, users: dict[str, UserPublic], password_hash: str, monkeypatch: Any
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("SQLite's single write lock is what a long write transaction stalls")
    _rated_sap(store, password_hash)
    with write_session(store) as session:  # the outcome of one write session, as before
        expected = aggregate_campaign(session, campaign="sap", actor="curator")
    probes: list[str] = []
    computed = aggregation.table3_intervals

    def probing(*args: Any, **kwargs: Any) -> Any:
        probes.append(_probe_commit(str(make_url(db_url).database)))
        return computed(*args, **kwargs)

    monkeypatch.setattr(aggregation, "table3_intervals", probing)
    (summary,) = aggregate(store, campaign="sap", actor="curator")
    assert probes == ["committed"]  # computed once, off the write lock
    assert summary.table == expected.table and summary.table
    assert (summary.answers, summary.complete_items, summary.changed) == (
        expected.answers,
        expected.complete_items,
        0,
    )
    assert summary.statement == expected.statement


def test_a_report_is_made_again_when_the_campaign_was_closed_between_the_halves(
    store: Engine, corpus: Engine, users: dict[str, UserPublic], password_hash: str
) -> None:
    _rated_sap(store, password_hash)
    with read_session(store) as session:
        answers = answers_to_aggregate(session, campaign="sap")
    assert set(answers.reports) == {"sap"}
    with write_session(store) as session:
        set_campaign_status(session, name="sap", status="closed", actor="curator")
    with write_session(store) as session:
        (summary,) = write_aggregation(session, campaign="sap", actor="curator", answers=answers)
    assert "Closed:" in summary.statement
    assert summary.table == answers.reports["sap"][1].table
