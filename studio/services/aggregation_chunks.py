"""The write half of :func:`studio.services.aggregation.aggregate` in short transactions, so that no submit waits long.

On SQLite every submit waits for the one write lock. The read half (:func:`~studio.services.aggregation.
answers_to_aggregate`) has already worked out every side a scenario-deciding campaign writes and the review items it
opens (:class:`Planned`); here they are written ``chunk`` scenarios at a time, each chunk
its own write transaction (on SQLite with a short pause between them, so that a waiting submit gets the lock), then
the review items and the audit entry in a last one. Each transaction first checks
that the campaign is in the state the plan was made in (its status, closing choice and quota: the answers that count
as decided); if it was opened or closed in between, the rest of the campaign is aggregated the way
:func:`~studio.services.aggregation.aggregate_campaign` does it, in one write transaction (the caller's
``one_transaction``: this module does not import :mod:`studio.services.aggregation`, which calls it).

The outcome is the one-transaction run's: writes compare first, each chunk reads the status rows (a curator's
decision stands) and the subtasks (the classification's action) as they are stored when it writes them, and answers
stored after the read half count at the next run, as they do for the one-transaction run. Campaigns that decide
nothing (report-only rules, adjudication) are run as before: in one write transaction, their reports made in the read
half.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from sqlalchemy import Engine, select
from sqlmodel import Session, col

from studio.db import is_sqlite, read_session, write_session
from studio.models import AuditLog, Campaign
from studio.services.aggregation_scenarios import (
    AggregationSummary,
    ScenarioWrites,
    labels_of,
    open_reviews,
    write_chunk,
)
from studio.services.progress import complete_at
from studio.services.queue import get_campaign

__all__ = ["CHUNK", "Planned", "audit_aggregation", "campaign_state", "plan_key", "write_chunks"]

logger = logging.getLogger(__name__)
#: One campaign's write in one transaction (the fallback), given the write session and the campaign's name.
OneTransaction = Callable[[Session, str], AggregationSummary]

#: Scenarios written per write transaction: about 20 ms of SQLite's write lock each at the paper's size.
CHUNK = 500
#: The pause between two write transactions on SQLite. A waiting writer's busy handler polls the lock at growing
#: intervals (1, 2, 5, 10, 15, 20, 25 ms ...): back-to-back transactions would leave it gaps it mostly misses, so it
#: would wait for the whole write half after all; a gap longer than its polling interval lets it in at its next poll.
PAUSE_S = 0.03


class Planned(NamedTuple):
    """A scenario-deciding campaign's run as the read half worked it out: the campaign's :func:`plan_key` then, the
    summary (but for what writing finds: ``changed``, ``statuses``, ``labels``, review items) and the writes."""

    key: tuple[str, bool, int]
    summary: AggregationSummary
    writes: ScenarioWrites


def campaign_state(campaign: Campaign) -> tuple[str, bool]:
    """What a report-only summary depends on besides the answers: the campaign's status and closing choice (which
    items count complete, and the summary's words)."""
    return (campaign.status, campaign.decide_below_quota)


def plan_key(campaign: Campaign) -> tuple[str, bool, int]:
    """What a planned run depends on besides the answers: :func:`campaign_state` and the quota that decides an item."""
    return (*campaign_state(campaign), complete_at(campaign))


def audit_aggregation(session: Session, campaign: Campaign, summary: AggregationSummary, *, actor: str) -> None:
    """Log a run that changed anything in the audit log (and in the log)."""
    if summary.changed:
        session.add(
            AuditLog(
                actor=actor,
                action="campaign.aggregate",
                entity="campaign",
                entity_id=campaign.name,
                detail={"changed": summary.changed, "statuses": summary.statuses},
            )
        )
        session.flush()
    logger.info("aggregated %s: %d answers, %d changed", campaign.name, summary.answers, summary.changed)


def write_chunks(
    engine: Engine,
    *,
    campaign: str | None,
    actor: str,
    plans: Mapping[str, Planned],
    one_transaction: OneTransaction,
    chunk: int | None = None,
) -> list[AggregationSummary]:
    """Write ``plans`` for ``campaign`` (every campaign when None, oldest first; campaigns opened on the way too) in
    transactions of ``chunk`` scenarios (default :data:`CHUNK`; see the module docstring); a campaign without a plan,
    or whose state changed since, goes through ``one_transaction``."""
    size = chunk or CHUNK
    summaries: list[AggregationSummary] = []
    done: set[int] = set()
    while True:
        pending: list[tuple[Any, Any]]
        with read_session(engine) as session:
            if campaign is not None:
                pending = [(get_campaign(session, campaign).id, campaign)]
            else:
                pending = list(session.execute(select(col(Campaign.id), col(Campaign.name)).order_by(col(Campaign.id))))
        todo = [(int(cid), str(name)) for cid, name in pending if cid not in done]
        if not todo:
            return summaries
        for campaign_id, name in todo:
            done.add(campaign_id)
            summaries.append(
                _write_campaign(engine, name=name, actor=actor, plans=plans, fallback=one_transaction, chunk=size)
            )


def _write_campaign(
    engine: Engine, *, name: str, actor: str, plans: Mapping[str, Planned], fallback: OneTransaction, chunk: int
) -> AggregationSummary:
    """One campaign's write half: its plan in chunks where it has one, else (or when the campaign's state changed
    meanwhile) ``fallback`` in one write transaction."""
    planned, written = plans.get(name), 0
    if planned is not None and (planned.writes.updates or planned.writes.to_review):
        summary, written = _write_planned(engine, name=name, planned=planned, actor=actor, chunk=chunk)
        if summary is not None:
            return summary
        logger.info("campaign %s changed state during aggregation: the rest is aggregated in one transaction", name)
    with write_session(engine) as session:
        summary = fallback(session, name)
    summary.changed += written
    return summary


def _let_writers_in(engine: Engine) -> None:
    """On SQLite, pause (:data:`PAUSE_S`) so that a writer waiting for the lock takes it before the next chunk."""
    if is_sqlite(engine):
        time.sleep(PAUSE_S)


def _write_planned(
    engine: Engine, *, name: str, planned: Planned, actor: str, chunk: int
) -> tuple[AggregationSummary | None, int]:
    """Write ``planned`` in chunks; return its summary (None when the campaign's state changed since the plan) and the
    rows the chunks changed."""
    ids, changed, statuses = list(planned.writes.updates), 0, Counter[str]()
    for start in range(0, len(ids), max(1, chunk)):
        with write_session(engine) as session:
            if plan_key(get_campaign(session, name)) != planned.key:
                return None, changed
            rows, now = write_chunk(session, planned.writes, ids[start : start + chunk])
        changed, statuses = changed + rows, statuses + now
        _let_writers_in(engine)
    with write_session(engine) as session:
        found = get_campaign(session, name)
        if plan_key(found) != planned.key:
            return None, changed
        summary = planned.summary.model_copy(deep=True)
        summary.changed, summary.statuses, summary.labels = changed, dict(statuses), labels_of(planned.writes)
        open_reviews(session, found, planned.writes, summary)
        audit_aggregation(session, found, summary, actor=actor)
    return summary, changed
