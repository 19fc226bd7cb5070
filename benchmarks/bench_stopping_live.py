"""What a workflow's ``stopping:`` rule costs each answer: next + submit cycles with stopping off, ``curtail`` and
``predictive`` (0.99, min_votes 5) side by side, through the real services, on one store.

One store (SQLite file, or ``--db`` a PostgreSQL URL), ``--items`` scenarios, three crowd_vote campaigns over them
(one per setting, the bundled workflow otherwise) and ``--people`` annotators. Votes: two items in three lopsided
(keep 0.8), one in three contested (keep 0.45, revise 0.4); the subtask label mostly agreed. Rounds alternate the
order of the settings (a machine that slows down slows all three); each round is ``--cycles`` cycles. Prints ms per
cycle per round, the medians and each setting's ratio to "off", and how many items each setting stopped.

    python benchmarks/bench_stopping_live.py [--db postgresql+psycopg://postgres@127.0.0.1:5432/DB] [--rounds 4]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.load_store import _ensure_scenarios  # noqa: E402

SETTINGS: dict[str, dict[str, Any] | None] = {
    "off": None,
    "curtail": {"rule": "curtail"},
    "predictive": {"rule": "predictive", "confidence": 0.99, "min_votes": 5},
}
OTHER_LABELS = ["dialogue_emotion", "dialogue_schedule", "recollection_synthesis", "itinerary_basic"]


def prepare(url: str, work: Path, *, items: int, people: int) -> tuple[Any, str, list[Any]]:
    """Migrate, ingest ``items`` scenarios, add ``people`` annotators and one campaign per setting (tagged names)."""
    from studio.db import create_db_engine, upgrade_db, write_session
    from studio.models import UserPublic
    from studio.services.auth import create_user
    from studio.services.campaigns import create_campaign
    from studio.workflows import WorkflowSchema, load_schemas

    engine = create_db_engine(url)
    upgrade_db(engine)
    _ensure_scenarios(engine, work, items)
    tag, base = uuid.uuid4().hex[:8], load_schemas()["crowd_vote"]
    with write_session(engine) as session:
        users = [
            UserPublic.model_validate(
                create_user(session, username=f"stop{tag}-{n}", password="x" * 12, role="annotator")
            )
            for n in range(people)
        ]
        for name, stopping in SETTINGS.items():
            fields = base.model_dump(mode="json") | ({"stopping": stopping} if stopping else {})
            create_campaign(session, name=f"{name}-{tag}", schema=WorkflowSchema.model_validate(fields))
    if url.startswith("postgresql"):
        with engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
    return engine, tag, users


def vote(rng: random.Random, item_id: int) -> dict[str, str]:
    shares = [0.8, 0.15, 0.05] if item_id % 3 else [0.45, 0.4, 0.15]
    label = "dialogue_base" if rng.random() < 0.75 else rng.choice(OTHER_LABELS)
    return {"verdict": rng.choices(["keep", "revise", "discard"], shares)[0], "subtask_label": label}


def cycles(engine: Any, campaign: str, users: list[Any], *, count: int, rng: random.Random) -> float:
    """``count`` next + submit cycles, every annotator in turn; milliseconds per cycle."""
    from studio.db import write_session
    from studio.services.answers import submit_answer
    from studio.services.queue import next_item

    started = time.perf_counter()
    for number in range(count):
        user = users[number % len(users)]
        with write_session(engine) as session:
            view = next_item(session, campaign=campaign, user=user)
            if view is None:
                raise SystemExit(f"{campaign}: the queue ran dry; use more --items or fewer --cycles")
            submit_answer(
                session,
                campaign=campaign,
                user=user,
                item_id=view.item_id,
                lease_id=view.lease_id,
                submission_id=uuid.uuid4().hex,
                answers=vote(rng, view.item_id),
            )
    return 1000 * (time.perf_counter() - started) / count


def stops_per_campaign(engine: Any, tag: str) -> dict[str, int]:
    from sqlalchemy import func, select
    from sqlmodel import col

    from studio.db import read_session
    from studio.models import Campaign
    from studio.models.campaigns import ItemStop

    with read_session(engine) as session:
        query = select(col(Campaign.name), func.count(col(ItemStop.item_id))).join(
            ItemStop, col(ItemStop.campaign_id) == col(Campaign.id)
        )
        counted = {str(name): int(count) for name, count in session.execute(query.group_by(col(Campaign.name)))}
    return {name: int(counted.get(f"{name}-{tag}", 0)) for name in SETTINGS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", help="A PostgreSQL URL (default: a SQLite file in a temporary folder).")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--people", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.db or f"sqlite:///{Path(folder) / 'stopping.sqlite'}"
        engine, tag, users = prepare(url, Path(folder), items=args.items, people=args.people)
        rng, times = random.Random(7), {name: [] for name in SETTINGS}  # type: dict[str, list[float]]
        for index in range(args.rounds):
            for name in list(SETTINGS) if index % 2 == 0 else list(reversed(SETTINGS)):
                times[name].append(cycles(engine, f"{name}-{tag}", users, count=args.cycles, rng=rng))
        stopped = stops_per_campaign(engine, tag)
        engine.dispose()
    base = statistics.median(times["off"])
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{url.split(':')[0]:<10} {name:<10} ms/cycle {', '.join(f'{value:.2f}' for value in values)}; "
            f"median {median:.2f} ({median / base:.2f}× off); items stopped {stopped[name]}"
        )


if __name__ == "__main__":
    main()
