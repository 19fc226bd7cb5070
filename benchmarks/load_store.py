"""Prepare a store for the load benchmark with the real services, and read back what it stored.

The store gets ``n_scenarios`` scenarios (the bundled demo scenarios repeated under new ids, so item
content has realistic sizes), one crowd_vote campaign with a large quota and ``n_annotators``
annotator accounts. Names carry a per-run tag, so a PostgreSQL database can be reused run after run.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select, text

from pipeline.paths import demo_dir

logger = logging.getLogger(__name__)

DEMO_SCENARIOS = demo_dir() / "scenarios.jsonl"
SCENARIO_PREFIX = "bench-"


@dataclass(frozen=True)
class BenchStore:
    """What the benchmark needs to drive the prepared store."""

    database_url: str
    campaign: str
    usernames: list[str]
    password: str
    items: int
    people_per_item: int


def _ensure_scenarios(engine: Engine, work_dir: Path, count: int) -> None:
    """Ingest ``count`` scenarios ``bench-00000``... through ``h2h ingest``'s code path (idempotent)."""
    from pipeline.dataset import load_scenarios
    from pipeline.rundir import RunDir, model_dump_line
    from studio.services.ingest import ingest_run

    templates = load_scenarios(DEMO_SCENARIOS)
    scenarios = [
        templates[number % len(templates)].model_copy(update={"id": f"{SCENARIO_PREFIX}{number:05d}"})
        for number in range(count)
    ]
    run = RunDir(work_dir / "bench-run").ensure()
    run.scenarios.write_text("".join(model_dump_line(scenario) + "\n" for scenario in scenarios), encoding="utf-8")
    report = ingest_run(engine, run)
    logger.info("scenarios: %d added, %d updated", report.scenarios_added, report.scenarios_updated)


def prepare_store(
    database_url: str,
    work_dir: Path,
    *,
    tag: str,
    scenarios: int,
    people_per_item: int,
    annotators: int,
    assignment: str = "fill",
) -> BenchStore:
    """Migrate the store, ingest scenarios, create ``annotators`` accounts and a crowd_vote campaign over them
    (``assignment``: its queue order, ``fill`` as a campaign's default)."""
    from studio.db import create_db_engine, upgrade_db, write_session
    from studio.services.auth import create_user
    from studio.services.campaigns import create_campaign
    from studio.workflows import load_schemas

    engine = create_db_engine(database_url)
    try:
        upgrade_db(engine)
        _ensure_scenarios(engine, work_dir, scenarios)
        password = f"{tag}-password"
        usernames = [f"{tag}-{number:03d}" for number in range(annotators)]
        schema = load_schemas()["crowd_vote"]
        with write_session(engine) as session:
            for username in usernames:
                create_user(session, username=username, password=password, role="annotator", actor="bench")
        with write_session(engine) as session:
            campaign = create_campaign(
                session,
                name=f"{tag}-vote",
                schema=schema,
                people_per_item=people_per_item,
                actor="bench",
                assignment=assignment,
            )
            items = _campaign_items(session, campaign.id)
        if engine.dialect.name == "postgresql":
            # A bulk fill leaves PostgreSQL without statistics, which autovacuum gathers in a running store: without
            # them the queue's plan may scan every open item (see bench_paper_size.py).
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text("VACUUM ANALYZE"))
    finally:
        engine.dispose()
    return BenchStore(
        database_url=database_url,
        campaign=campaign.name,
        usernames=usernames,
        password=password,
        items=items,
        people_per_item=people_per_item,
    )


def _campaign_items(session: Any, campaign_id: int) -> int:
    from sqlalchemy import func

    from studio.models import Item

    return session.execute(select(func.count(Item.id)).where(Item.campaign_id == campaign_id)).scalar_one()


@dataclass(frozen=True)
class StoredAnswers:
    """The campaign's answers as the database holds them."""

    by_submission: dict[str, dict[str, Any]]  # submission_id -> {"answer_id", "item_id", "username", "values"}
    per_item_user: Counter[tuple[int, int]]
    over_quota_items: int
    count_mismatch_items: int


def read_stored_answers(database_url: str, campaign: str) -> StoredAnswers:
    """Read every stored answer of ``campaign`` straight from the database (not through the API)."""
    from sqlalchemy import func

    from studio.db import create_db_engine, read_session
    from studio.models import Answer, Campaign, Item, User

    engine = create_db_engine(database_url)
    try:
        with read_session(engine) as session:
            found = session.execute(select(Campaign).where(Campaign.name == campaign)).scalars().one()
            rows = session.execute(
                select(Answer.id, Answer.item_id, Answer.user_id, Answer.submission_id, Answer.values, User.username)
                .join(User, User.id == Answer.user_id)
                .where(Answer.campaign_id == found.id)
            ).all()
            counted = dict(
                session.execute(
                    select(Answer.item_id, func.count(Answer.id))
                    .where(Answer.campaign_id == found.id)
                    .group_by(Answer.item_id)
                ).all()
            )
            items = session.execute(select(Item.id, Item.answer_count).where(Item.campaign_id == found.id)).all()
    finally:
        engine.dispose()
    by_submission = {
        row.submission_id: {"answer_id": row.id, "item_id": row.item_id, "username": row.username, "values": row.values}
        for row in rows
    }
    return StoredAnswers(
        by_submission=by_submission,
        per_item_user=Counter((row.item_id, row.user_id) for row in rows),
        over_quota_items=sum(1 for item in items if counted.get(item.id, 0) > found.people_per_item),
        count_mismatch_items=sum(1 for item in items if counted.get(item.id, 0) != item.answer_count),
    )
