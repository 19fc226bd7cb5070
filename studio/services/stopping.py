"""Decision-preserving stopping, live (ARCHITECTURE.md "Crowd decisions"): the store side of a workflow's
``stopping:`` rule.

:func:`pending_stop` runs in the submit transaction, under the item's lock, before the answer is stored: it counts the
item's stored votes on the questions a stop must preserve (:func:`studio.results.stopping.decided_questions`), adds
the vote being stored and asks :func:`studio.results.stopping.check_stop` with the campaign's quota — remaining =
quota − stored votes, so an open lease counts as a vote to come, never as a vote. :func:`record_stop` then marks the
item (``Item.stopped_at``, which the queue's candidate query filters on) and writes its :class:`ItemStop`, once.
Reading the item's answers costs one indexed query of at most ``quota`` rows, and only in campaigns that stop.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import Select, bindparam, insert, select, update
from sqlalchemy.sql.dml import Update
from sqlmodel import Session, col

from studio.db import core_connection
from studio.models import Answer, Campaign, Item, ScenarioRow
from studio.models.campaigns import ItemStop
from studio.results.stopping import DecidedQuestion, StopCheck, check_stop, decided_questions
from studio.services.progress import quota_of
from studio.services.queue import campaign_schema, get_campaign
from studio.services.queue_rows import CampaignState

logger = logging.getLogger(__name__)

#: The columns of a campaign's stops, as the export and the Curate page give them.
STOP_COLUMNS: tuple[str, ...] = ("item", "scenario", "votes_at_stop", "rule", "probability", "stopped_at")


@dataclass(frozen=True, slots=True)
class PendingStop:
    """A stop the vote being stored brings about: the votes the item will hold with it, and the rule's check."""

    votes: int
    rule: str
    check: StopCheck


@lru_cache(maxsize=1)
def _item_values_query() -> Select[tuple[Any]]:
    return select(col(Answer.values)).where(col(Answer.item_id) == bindparam("item_id"))


def _counts(rows: list[Mapping[str, Any]], questions: list[DecidedQuestion]) -> tuple[dict[str, dict[str, int]], int]:
    """Votes per label of each question over ``rows`` (answer values), and how many rows there are."""
    counts: dict[str, dict[str, int]] = {}
    for question in questions:
        tally = Counter(str(row[question.question]) for row in rows if row.get(question.question) is not None)
        counts[question.question] = dict(tally)
    return counts, len(rows)


def pending_stop(
    session: Session, *, campaign: CampaignState, item: Any, values: Mapping[str, Any]
) -> PendingStop | None:
    """The stop storing ``values`` on ``item`` (an item row) brings about, or None (no ``stopping:`` in the
    campaign's schema, the item stopped already, or the rule says go on).

    Call it under the item's row lock (``queue_rows.item_row(locked=True)``; SQLite's write lock) so the stored
    votes it counts stay the item's until the answer is stored.
    """
    rule = campaign.schema.stopping
    if rule is None or item.stopped_at is not None:
        return None
    questions = decided_questions(campaign.schema)
    if not questions:
        return None
    rows = core_connection(session).execute(_item_values_query(), {"item_id": item.id}).scalars()
    stored = [row or {} for row in rows]
    counts, votes = _counts([*stored, values], questions)
    if votes >= quota_of(campaign):
        return None  # the quota itself completes the item: a stop there would not be early
    frozen = tuple(tuple(sorted(counts[question.question].items())) for question in questions)
    check = _check(frozen, quota_of(campaign), tuple(questions), rule.rule, rule.confidence, rule.min_votes)
    return PendingStop(votes=votes, rule=rule.rule, check=check) if check.stop else None


@lru_cache(maxsize=8192)
def _check(
    frozen: tuple[tuple[tuple[str, int], ...], ...],
    quota: int,
    questions: tuple[DecidedQuestion, ...],
    rule: Literal["curtail", "predictive"],
    confidence: float,
    min_votes: int,
) -> StopCheck:
    """:func:`check_stop` on counts frozen per question, remembered: it is a pure function (``predictive`` samples
    with a fixed seed), and its forecast over an 11-label question costs milliseconds — inside the submit's write
    lock — while crowds reach the same few count states again and again."""
    counts = {question.question: dict(pairs) for question, pairs in zip(questions, frozen, strict=True)}
    return check_stop(counts, quota=quota, questions=questions, rule=rule, confidence=confidence, min_votes=min_votes)


@lru_cache(maxsize=1)
def _mark_stopped() -> Update:
    return (
        update(Item)
        .where(col(Item.id) == bindparam("item_id"), col(Item.stopped_at).is_(None))
        .values(stopped_at=bindparam("stopped_at"))
    )


def record_stop(session: Session, *, campaign_id: int, item_id: int, stop: PendingStop, at: datetime) -> bool:
    """Mark the item stopped and write its :class:`ItemStop`, in the caller's transaction; True when this call
    stopped it (False: it was stopped already, and nothing is written — the mark's condition makes it once)."""
    conn = core_connection(session)
    if int(conn.execute(_mark_stopped(), {"item_id": item_id, "stopped_at": at}).rowcount) != 1:
        return False
    record = {
        "item_id": item_id,
        "campaign_id": campaign_id,
        "votes_at_stop": stop.votes,
        "rule": stop.rule,
        "probability": stop.check.probability,
        "stopped_at": at,
    }
    conn.execute(insert(ItemStop), record)
    logger.info("item %s stopped at %s votes (%s, p=%.4f)", item_id, stop.votes, stop.rule, stop.check.probability)
    return True


def campaign_stops(session: Session, campaign: Campaign) -> list[dict[str, Any]]:
    """Every stop of ``campaign``, in the order they happened: :data:`STOP_COLUMNS` (``scenario`` is the item's
    scenario id; ``stopped_at`` the time of the stop)."""
    query = (
        select(
            col(ItemStop.item_id),
            col(ScenarioRow.id),
            col(ItemStop.votes_at_stop),
            col(ItemStop.rule),
            col(ItemStop.probability),
            col(ItemStop.stopped_at),
        )
        .join(Item, col(Item.id) == col(ItemStop.item_id))
        .join(ScenarioRow, col(ScenarioRow.id) == col(Item.scenario_id))
        .where(col(ItemStop.campaign_id) == campaign.id)
        .order_by(col(ItemStop.stopped_at), col(ItemStop.item_id))
    )
    return [dict(zip(STOP_COLUMNS, row, strict=True)) for row in session.execute(query).all()]


class StopsReport(BaseModel):
    """A campaign's stops as curators read them: each stop (:data:`STOP_COLUMNS`) and the workflow's stopping rule
    in words (its ``statement()``; what the campaign says when its workflow stops nothing early)."""

    campaign: str
    statement: str
    stops: list[dict[str, Any]]


def stops_report(session: Session, *, campaign: str) -> StopsReport:
    """The stops of the campaign called ``campaign`` with its rule in words; ``NotFound`` for an unknown name."""
    found = get_campaign(session, campaign)
    rule = campaign_schema(found).stopping
    statement = rule.statement() if rule is not None else "This campaign's workflow stops no item early."
    return StopsReport(campaign=found.name, statement=statement, stops=campaign_stops(session, found))
