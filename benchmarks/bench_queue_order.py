"""The queue's two orders side by side: ``fill`` (items closest to their quota first, the default) against ``spread``
(least-answered first), as next + submit cycles through the real services at the paper's size.

One store (SQLite file, or ``--db`` a PostgreSQL URL), ``--items`` scenarios (default 4,650, the paper's), two
crowd_vote campaigns over them (one per order) and ``--people`` annotators. Rounds alternate between the orders (so
a machine that slows down during the run slows both); each round is ``--cycles`` next+submit cycles, every
annotator in turn. Prints ms per cycle per round and the fill/spread ratio of the medians. PostgreSQL is ANALYZEd
after the store is built (as autovacuum would), so both orders are planned from real statistics.

    python benchmarks/bench_queue_order.py [--db postgresql+psycopg://postgres@127.0.0.1:5432/DB] [--rounds 6]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.load_store import _ensure_scenarios  # noqa: E402

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def prepare(url: str, work: Path, *, items: int, people: int) -> tuple[object, str, list[object]]:
    """Migrate, ingest ``items`` scenarios, add ``people`` annotators and one campaign per order (tagged names)."""
    from studio.db import create_db_engine, upgrade_db, write_session
    from studio.models import UserPublic
    from studio.services.auth import create_user
    from studio.services.campaigns import create_campaign
    from studio.workflows import load_schemas

    engine = create_db_engine(url)
    upgrade_db(engine)
    _ensure_scenarios(engine, work, items)
    tag = uuid.uuid4().hex[:8]
    with write_session(engine) as session:
        users = [
            UserPublic.model_validate(create_user(session, username=f"q{tag}-{n}", password="x" * 12, role="annotator"))
            for n in range(people)
        ]
        for order in ("fill", "spread"):
            create_campaign(session, name=f"{order}-{tag}", schema=load_schemas()["crowd_vote"], assignment=order)
    if url.startswith("postgresql"):
        with engine.connect() as connection:  # type: ignore[attr-defined]
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
    return engine, tag, users


def cycles(engine: object, campaign: str, users: list[object], count: int) -> float:
    """``count`` next+submit cycles (annotators in turn); ms per cycle."""
    from studio.db import write_session
    from studio.services.answers import submit_answer
    from studio.services.queue import next_item

    started = time.perf_counter()
    for number in range(count):
        user = users[number % len(users)]
        with write_session(engine) as session:  # type: ignore[arg-type]
            view = next_item(session, campaign=campaign, user=user)  # type: ignore[arg-type]
            assert view is not None, "the campaign ran out of items: fewer --cycles or --rounds"
            submit_answer(
                session,
                campaign=campaign,
                user=user,  # type: ignore[arg-type]
                item_id=view.item_id,
                lease_id=view.lease_id,
                submission_id=uuid.uuid4().hex,
                answers=VOTE,
            )
    return 1000 * (time.perf_counter() - started) / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default=None, help="store URL (default: a new SQLite file)")
    parser.add_argument("--items", type=int, default=4650)
    parser.add_argument("--people", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6, help="rounds per order (alternating)")
    parser.add_argument("--cycles", type=int, default=300, help="next+submit cycles per round")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        url = args.db or f"sqlite:///{Path(folder) / 'queue.sqlite'}"
        engine, tag, users = prepare(url, Path(folder), items=args.items, people=args.people)
        times: dict[str, list[float]] = {"fill": [], "spread": []}
        for round_number in range(args.rounds):
            for order in ("fill", "spread") if round_number % 2 == 0 else ("spread", "fill"):
                times[order].append(cycles(engine, f"{order}-{tag}", users, args.cycles))
        engine.dispose()  # type: ignore[attr-defined]
    store = url.split(":", 1)[0]
    for order, values in times.items():
        rounds = ", ".join(f"{value:.2f}" for value in values)
        print(f"{store} {order:6s} ms per next+submit (rounds): {rounds}; median {statistics.median(values):.2f}")
    ratio = statistics.median(times["fill"]) / statistics.median(times["spread"])
    print(f"{store} fill/spread (median): {ratio:.3f}  ({args.items} items, {args.people} people)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
