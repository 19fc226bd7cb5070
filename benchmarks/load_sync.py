"""What ``H2H_SQLITE_SYNCHRONOUS=FULL`` costs per commit against ``NORMAL`` (SQLite, WAL, the studio's own engine).

Each level commits ``--commits`` small write transactions (``BEGIN IMMEDIATE``, one INSERT of an answer-sized row,
COMMIT) through :func:`studio.db.write_session`, on a file in ``--dir`` (default: the system's temporary directory;
point it at the disk the store lives on). The levels alternate in ``--rounds`` slices so that a shared machine's
drift weighs on both; the report gives the median time per commit of each. Run:
``python benchmarks/load_sync.py [--commits 500] [--rounds 4] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import text

from studio.db import create_db_engine, write_session

LEVELS = ("NORMAL", "FULL")
ROW = "x" * 300  # about an answer's JSON


def commit_times(url: str, level: str, commits: int) -> list[float]:
    """Seconds per commit of ``commits`` one-row write transactions at ``level``."""
    engine = create_db_engine(url, sqlite_synchronous=level)
    times = []
    try:
        for _ in range(commits):
            started = time.perf_counter()
            with write_session(engine) as session:
                session.connection().execute(text("INSERT INTO answers_like (body) VALUES (:body)"), {"body": ROW})
            times.append(time.perf_counter() - started)
    finally:
        engine.dispose()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(dir=args.dir, prefix="h2h-sync-"))
    url = f"sqlite:///{folder / 'sync.sqlite'}"
    engine = create_db_engine(url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE answers_like (id INTEGER PRIMARY KEY, body TEXT)"))
    engine.dispose()
    times: dict[str, list[float]] = {level: [] for level in LEVELS}
    for round_number in range(args.rounds):
        order = LEVELS if round_number % 2 == 0 else LEVELS[::-1]
        for level in order:
            times[level] += commit_times(url, level, args.commits)
    for level in LEVELS:
        median = statistics.median(times[level]) * 1000
        p95 = statistics.quantiles(times[level], n=20)[-1] * 1000
        print(
            f"synchronous={level}: {median:.3f} ms per commit (median), p95 {p95:.3f} ms, {len(times[level])} commits"
        )
    print(f"FULL / NORMAL: {statistics.median(times['FULL']) / statistics.median(times['NORMAL']):.2f}x  (on {folder})")


if __name__ == "__main__":
    main()
