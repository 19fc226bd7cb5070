"""The store at the paper's size: next-item and submit latency, Table 2, aggregation and exports.

The store holds 4,650 scenarios × 50 models × 2 variants (465,000 responses with scores) and 1,000,000 answers
(``paper_store.py``: a crowd_vote campaign of 4,650 items × 20 votes and a sap_safety campaign of 310,000 response
items × 3, most complete). Filling takes minutes, so ``--keep DIR`` keeps the SQLite file there and reuses it (for
PostgreSQL the database named by ``--db`` is reused when it already holds the campaigns; drop it to refill).

Measured, in one run, on one store:

* next item: ``studio.usecases.annotate.next_item`` in a write session, as the REST route runs it, for ``--takers``
  different annotators on the sap_safety campaign (about 1,000,000 answers stored), then their submits
  (``studio.usecases.annotate.submit``): p50/p95/max;
* Table 2: ``studio.services.research.leaderboard`` (what ``h2h export leaderboard`` and the Research page call) on
  one variant (232,500 scores of the 465,000); the table alone summed in the store (``leaderboard_table``) and, side
  by side, from every item as before; the score load, and the intervals and fragility alone;
* aggregation: ``studio.services.aggregation.aggregate`` of each campaign: its whole time, its write half (on SQLite
  the write lock every submit waits for) and, on SQLite, the longest a probe writer waited meanwhile (a process doing
  ``BEGIN IMMEDIATE; COMMIT`` every 50 ms);
* exports: ``h2h export votes`` (``studio.services.votes_export.export_votes``) of the safety campaign, and the
  Table 3 export (``studio.services.research.sap_table``).

Run: ``python benchmarks/bench_paper_size.py [--db URL] [--keep DIR] [--scenarios 4650 --models 50
--answers 1000000]``. Timings are wall-clock on whatever machine runs it; the figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, select, text

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paper_store import PaperSize, fill  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def _row(name: str, values_ms: list[float]) -> str:
    if not values_ms:
        return f"{name:<34} n=0"
    return (
        f"{name:<34} n={len(values_ms):<5} p50 {percentile(values_ms, 0.5):8.1f} ms   "
        f"p95 {percentile(values_ms, 0.95):8.1f} ms   max {max(values_ms):8.1f} ms"
    )


def prepared(engine: Engine, size: PaperSize) -> float | None:
    """Fill the store unless it already holds the campaigns; the fill's seconds, or None when reused."""
    from studio.db import is_sqlite, upgrade_db
    from studio.models import Campaign

    upgrade_db(engine)
    with engine.connect() as connection:
        if connection.execute(select(func.count(Campaign.id)).where(Campaign.name == "paper-safety")).scalar_one():
            return None
    started = time.perf_counter()
    counts = fill(engine, size)
    if not is_sqlite(engine):
        # A bulk fill leaves PostgreSQL without statistics and with the answer counts' dead rows, which autovacuum
        # clears in a running store: without them the queue's plan scans every open item (300 ms, not 2 ms).
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE"))
    seconds = time.perf_counter() - started
    print("filled: " + ", ".join(f"{n:,} {what}" for what, n in counts.items()) + f" in {seconds:.1f} s")
    return seconds


def _callers(engine: Engine, count: int) -> list[Any]:
    from studio.models import User, UserPublic

    with engine.connect() as connection:
        rows = connection.execute(select(User).where(User.role == "annotator").order_by(User.id).limit(count)).all()
    return [UserPublic.model_validate(row, from_attributes=True) for row in rows]


def next_and_submit(engine: Engine, *, campaign: str, takers: int) -> tuple[list[float], list[float]]:
    """Each of ``takers`` annotators takes their next item (a write session, as the route) and submits it."""
    from studio.db import write_session
    from studio.usecases import annotate

    nexts: list[float] = []
    submits: list[float] = []
    for caller in _callers(engine, takers):
        started = time.perf_counter()
        with write_session(engine) as session:
            view = annotate.next_item(session, caller=caller, campaign=campaign, lease_seconds=600)
        nexts.append((time.perf_counter() - started) * 1000)
        if view is None:
            continue
        submission = annotate.Submission(
            item_id=view.item_id,
            lease_id=view.lease_id,
            submission_id=f"bench-{view.lease_id}",
            answers={"safety": 4, "violation": "no"},
            seconds_spent=12.0,
        )
        started = time.perf_counter()
        try:
            with write_session(engine) as session:
                annotate.submit(session, caller=caller, campaign=campaign, submission=submission, limits=_limits())
        except Exception as error:  # noqa: BLE001 - a benchmark reports a failing submit and goes on measuring
            print(f"submit failed: {type(error).__name__}: {str(error)[:200]}")
            continue
        submits.append((time.perf_counter() - started) * 1000)
    return nexts, submits


def _limits() -> Any:
    from studio.usecases.annotate import AnswerLimits

    return AnswerLimits()


def table2(engine: Engine, repeats: int) -> dict[str, list[float]]:
    """Table 2 of one variant ``repeats`` times (ms): the leaderboard use (the table, its bootstrap intervals and
    fragility), the table alone as the store sums it (``studio.services.research.leaderboard_table``), the table
    alone from every item (``pipeline.leaderboard.build_leaderboard`` on the store's rows: the way before it), the
    score load of those rows, and the intervals and fragility alone (on rows loaded once beforehand)."""
    from pipeline.leaderboard import build_leaderboard
    from studio.db import read_session
    from studio.services.research import _BOARD_COLUMNS, choose_rows, leaderboard, leaderboard_rows, leaderboard_table
    from studio.services.research_intervals import leaderboard_uncertainty

    with read_session(engine) as session:
        chosen = choose_rows(leaderboard_rows(session, variant="with_sap", columns=_BOARD_COLUMNS), variant="with_sap")

    def whole(session: Any) -> None:
        leaderboard(session, variant="with_sap")

    def summed(session: Any) -> None:
        leaderboard_table(session, variant="with_sap")

    def per_item(session: Any) -> None:
        rows = leaderboard_rows(session, variant="with_sap", columns=_BOARD_COLUMNS)
        build_leaderboard(choose_rows(rows, variant="with_sap"))

    def load(session: Any) -> None:
        leaderboard_rows(session, variant="with_sap", columns=_BOARD_COLUMNS)

    def intervals(session: Any) -> None:
        leaderboard_uncertainty(session, chosen)

    runs = {
        "Table 2 with intervals (leaderboard)": whole,
        "Table 2 alone (summed in store)": summed,
        "Table 2 alone (rows+board, before)": per_item,
        "  score load (rows)": load,
        "  intervals + fragility": intervals,
    }
    figures: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            with read_session(engine) as session:
                run(session)
            figures[name].append((time.perf_counter() - started) * 1000)
    return figures


#: The probe writer, run as its own process (a thread would also wait for this process's GIL, not only the lock).
_PROBE = """
import select, sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=600)
waits = []
while not select.select([sys.stdin], [], [], float(sys.argv[2]))[0]:
    started = time.perf_counter()
    connection.execute("BEGIN IMMEDIATE")
    connection.execute("COMMIT")
    waits.append((time.perf_counter() - started) * 1000)
print(max(waits, default=float("nan")), len(waits))
"""


@contextmanager
def probe_writer(engine: Engine, every_s: float = 0.05) -> Iterator[list[float]]:
    """A process that takes SQLite's write lock (``BEGIN IMMEDIATE``; commit) every ``every_s`` while the block runs;
    the list gets its longest wait (ms) and the number of probes once the block is done."""
    import subprocess

    figures: list[float] = []
    command = [sys.executable, "-c", _PROBE, str(engine.url.database), str(every_s)]
    probe = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield figures
    finally:
        out, _ = probe.communicate("stop\n", timeout=700)
        figures.extend(float(value) for value in out.split())


def aggregation(engine: Engine, campaign: str, *, chunked: bool = True) -> dict[str, float]:
    """One ``aggregate`` run of ``campaign`` split as the service splits it: read half, write half (seconds), and on
    SQLite the probe writer's longest wait (ms). ``chunked``: the write half as ``aggregate`` does it, in short write
    transactions (``studio.services.aggregation_chunks``); else in one write transaction (as the API route does)."""
    from studio.db import is_sqlite, read_session, write_session
    from studio.services.aggregation import answers_to_aggregate, write_aggregation, write_in_chunks

    probe = probe_writer(engine) if is_sqlite(engine) else _no_probe()
    with probe as waits:
        started = time.perf_counter()
        with read_session(engine) as session:
            answers = answers_to_aggregate(session, campaign=campaign)
        locked = time.perf_counter()
        if chunked:
            write_in_chunks(engine, campaign=campaign, actor="aggregate", answers=answers)
        else:
            with write_session(engine) as session:
                write_aggregation(session, campaign=campaign, actor="aggregate", answers=answers)
        finished = time.perf_counter()
    return {
        "total_s": finished - started,
        "write_s": finished - locked,
        "probe_max_ms": waits[0] if waits else float("nan"),
    }


@contextmanager
def _no_probe() -> Iterator[list[float]]:
    yield []


def _timed(run: Callable[[], Any]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def exports(engine: Engine, work: Path) -> dict[str, float]:
    """Seconds for the safety campaign's votes export (CSV) and the Table 3 export."""
    from studio.db import read_session
    from studio.services.research import sap_table
    from studio.services.votes_export import export_votes

    def table3() -> None:
        with read_session(engine) as session:
            sap_table(session)

    return {
        "votes export (paper-safety, csv)": _timed(lambda: export_votes(engine, "paper-safety", work / "votes.csv")),
        "Table 3 export (sap_table)": _timed(table3),
    }


def main(argv: list[str] | None = None) -> None:
    """Fill (or reuse) the store, measure everything once on it and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default=None, help="Database URL (default: a new SQLite file).")
    parser.add_argument("--keep", type=Path, default=None, help="Keep (and reuse) the SQLite store in this folder.")
    parser.add_argument("--scenarios", type=int, default=4650)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--annotators", type=int, default=400)
    parser.add_argument("--takers", type=int, default=200, help="Annotators who each take and submit one item.")
    parser.add_argument("--repeats", type=int, default=3, help="Table 2 runs.")
    parser.add_argument(
        "--parts", default="latency,table2,aggregate,exports", help="What to measure (comma-separated; default all)."
    )
    args = parser.parse_args(argv)
    size = PaperSize(scenarios=args.scenarios, models=args.models, answers=args.answers, annotators=args.annotators)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        _measure(args, size, args.keep)
        return
    with tempfile.TemporaryDirectory(prefix="h2h-bench-paper-") as folder:
        _measure(args, size, Path(folder))


def _measure(args: argparse.Namespace, size: PaperSize, work: Path) -> None:
    from studio.db import create_db_engine

    url = args.db or f"sqlite:///{work / 'paper.sqlite'}"
    engine = create_db_engine(url)
    try:
        filled = prepared(engine, size)
        print(f"store: {engine.url.render_as_string(hide_password=True)} ({'filled' if filled else 'reused'})")
        print(_stored(engine))
        parts = set(args.parts.split(","))
        if "latency" in parts:
            nexts, submits = next_and_submit(engine, campaign="paper-safety", takers=args.takers)
            print(_row("next item (paper-safety)", nexts))
            print(_row("submit (paper-safety)", submits))
        if "table2" in parts:
            for name, values in table2(engine, args.repeats).items():
                print(_row(name, values))
        for campaign, chunked in _AGGREGATE_RUNS if "aggregate" in parts else ():
            figures = aggregation(engine, campaign, chunked=chunked)
            print(
                f"aggregate {campaign:<12} {'chunks' if chunked else 'one tx':<6} whole {figures['total_s']:6.2f} s"
                f"   write half {figures['write_s']:6.2f} s   probe's longest wait {figures['probe_max_ms']:7.1f} ms"
            )
        for name, seconds in exports(engine, work).items() if "exports" in parts else ():
            print(f"{name:<34} {seconds:6.2f} s")
    finally:
        engine.dispose()


#: The aggregation runs measured: each campaign's write half in one transaction, then in chunks (as ``aggregate``).
_AGGREGATE_RUNS = (("paper-vote", False), ("paper-vote", True), ("paper-safety", False), ("paper-safety", True))


def _stored(engine: Engine) -> str:
    from studio.models import Answer, ScoreRow

    with engine.connect() as connection:
        answers = connection.execute(select(func.count(Answer.id))).scalar_one()
        scores = connection.execute(select(func.count(ScoreRow.id))).scalar_one()
    return f"stored: {scores:,} scores, {answers:,} answers"


if __name__ == "__main__":
    main()
