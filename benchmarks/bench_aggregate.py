"""How long aggregation holds the store's write lock: the read-then-write run against one write session.

A crowd_vote campaign of ``--items`` scenarios × ``--raters`` answers (random verdicts and labels, inserted in
bulk) is aggregated twice from the same starting state, in one run, alternating ``--repeats`` times:

* ``one session``: ``aggregate_campaign`` inside a single write session, as every caller did before: on SQLite
  the write lock (which every submit waits for) is held for the whole run;
* ``read, then write``: ``answers_to_aggregate`` in a read session (which also fits the crowd models a workflow
  asks for), then ``write_aggregation`` with those answers in one write session: the lock is held for the second
  part only. ``h2h aggregate``, the Curate page and the API now go one step further and write that second part in
  transactions of 500 scenarios (``studio.services.aggregation.aggregate``; measured at the paper's size by
  ``benchmarks/bench_paper_size.py --parts aggregate``).

Between runs the aggregation's writes are undone (statuses, review campaign and items, audit rows), so each run
starts from the same state. Run: ``python benchmarks/bench_aggregate.py [--items 2000] [--raters 20]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import delete, insert, select, update

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_store import prepare_store  # noqa: E402

VERDICTS = ("keep", "keep", "keep", "revise", "discard")
LABELS = ("dialogue_base", "dialogue_base", "dialogue_emotion")


def fill_answers(engine: object, campaign: str, raters: int, seed: int) -> int:
    """Every item of ``campaign`` answered by ``raters`` annotators (bulk insert); returns the answer count."""
    from studio.db import write_session
    from studio.models import Answer, Campaign, Item, User, utc_now

    rng = random.Random(seed)
    with write_session(engine) as session:  # type: ignore[arg-type]
        found = session.execute(select(Campaign).where(Campaign.name == campaign)).scalars().one()
        items = session.execute(select(Item.id).where(Item.campaign_id == found.id)).scalars().all()
        people = session.execute(select(User.id).where(User.role == "annotator").order_by(User.id)).scalars().all()
        now = utc_now()
        rows = [
            {
                "item_id": item,
                "campaign_id": found.id,
                "user_id": person,
                "submission_id": f"{item}-{person}",
                "values": {"verdict": rng.choice(VERDICTS), "subtask_label": rng.choice(LABELS)},
                "seconds_spent": 3.0,
                "server_seconds": 3.0,
                "created_at": now,
                "updated_at": now,
                "revision": 0,
            }
            for item in items
            for person in people[:raters]
        ]
        session.execute(insert(Answer), rows)
        session.execute(update(Item).where(Item.campaign_id == found.id).values(answer_count=raters))
    return len(rows)


def undo_aggregation(engine: object, campaign: str) -> None:
    """Remove what an aggregation run wrote, so the next run starts from the same state."""
    from studio.db import write_session
    from studio.models import AuditLog, Campaign, Item
    from studio.models.curation import ScenarioStatus

    with write_session(engine) as session:  # type: ignore[arg-type]
        session.execute(delete(ScenarioStatus))
        session.execute(delete(AuditLog).where(AuditLog.actor == "aggregate"))
        reviews = session.execute(select(Campaign.id).where(Campaign.name != campaign)).scalars().all()
        session.execute(delete(Item).where(Item.campaign_id.in_(reviews)))
        session.execute(delete(Campaign).where(Campaign.id.in_(reviews)))


def one_session(engine: object, campaign: str) -> tuple[float, float]:
    from studio.db import write_session
    from studio.services.aggregation import aggregate_campaign

    started = time.perf_counter()
    with write_session(engine) as session:  # type: ignore[arg-type]
        aggregate_campaign(session, campaign=campaign)
    held = time.perf_counter() - started
    return held, held


def read_then_write(engine: object, campaign: str) -> tuple[float, float]:
    from studio.db import read_session, write_session
    from studio.services.aggregation import answers_to_aggregate, write_aggregation

    started = time.perf_counter()
    with read_session(engine) as session:  # type: ignore[arg-type]
        answers = answers_to_aggregate(session, campaign=campaign)
    locked = time.perf_counter()
    with write_session(engine) as session:  # type: ignore[arg-type]
        write_aggregation(session, campaign=campaign, actor="aggregate", answers=answers)
    finished = time.perf_counter()
    return finished - started, finished - locked


def main(argv: list[str] | None = None) -> None:
    """Build the store, time both ways ``--repeats`` times each (alternating) and print the medians."""

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if min(args.items, args.raters, args.repeats) < 1:
        parser.error("--items, --raters and --repeats must be at least 1")
    with tempfile.TemporaryDirectory(prefix="h2h-bench-aggregate-") as folder:
        _measure(Path(folder), args)


def _measure(work: Path, args: argparse.Namespace) -> None:
    from studio.db import create_db_engine

    url = f"sqlite:///{work / 'bench.sqlite'}"
    store = prepare_store(
        url, work, tag="agg", scenarios=args.items, people_per_item=args.raters, annotators=args.raters
    )
    engine = create_db_engine(url)
    answers = fill_answers(engine, store.campaign, args.raters, args.seed)
    ways = {"one session": one_session, "read, then write": read_then_write}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for repeat in range(args.repeats):
        order = list(ways.items()) if repeat % 2 == 0 else list(ways.items())[::-1]  # neither way always goes first
        for name, run in order:
            figures[name].append(run(engine, store.campaign))
            undo_aggregation(engine, store.campaign)
    engine.dispose()
    print(f"{store.items} items x {args.raters} answers = {answers} answers (SQLite), {args.repeats} runs each")
    for name, runs in figures.items():
        total = statistics.median(run[0] for run in runs)
        held = statistics.median(run[1] for run in runs)
        print(f"{name:<18} whole run {total:6.2f} s   write lock held {held:6.2f} s   (medians)")
    ratio = statistics.median(r[1] for r in figures["read, then write"]) / statistics.median(
        r[1] for r in figures["one session"]
    )
    print(f"write lock held by read-then-write / one session: {ratio:.2f}")


if __name__ == "__main__":
    main()
