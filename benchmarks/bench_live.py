"""What the studio adds to a live turn: the whole ``send_message`` cycle (guards, the tripwire, the message stored,
the reply streamed and stored, two short transactions) against the same companion call made directly with
``stream_reply`` on the same messages, side by side and alternating, on a SQLite store and the stand-in companion
(``token_delay_s`` 0: the model's own time left out, so the difference is the studio's).

    python benchmarks/bench_live.py [--turns 40] [--db sqlite:///path.sqlite]

Prints the median and p95 milliseconds per turn of each path and their difference.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.live.companion import stream_reply  # noqa: E402
from pipeline.live.standin import StandinCompanion  # noqa: E402
from studio.db import create_db_engine, upgrade_db, write_session  # noqa: E402
from studio.services import live_turns  # noqa: E402
from studio.services.auth import hash_password  # noqa: E402
from studio.usecases import live  # noqa: E402
from tests.studio.live_helpers import context_of, live_campaign  # noqa: E402

logger = logging.getLogger("bench_live")


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=40, help="turns measured per path")
    parser.add_argument("--db", default=None, help="a store URL (default: a new SQLite file)")
    args = parser.parse_args()
    url = args.db or f"sqlite:///{Path(tempfile.mkdtemp()) / 'bench-live.sqlite'}"
    upgrade_db(url)
    engine = create_db_engine(url)
    studio_ms: list[float] = []
    direct_ms: list[float] = []
    with StandinCompanion(token_delay_s=0.0) as companion:
        raters = live_campaign(
            engine, hash_password("bench"), base_url=companion.base_url, raters=args.turns, min_turns=1, max_turns=2,
            messages_per_minute=1000,
        )  # fmt: skip
        for number, rater in enumerate(raters):
            context = context_of(engine, rater)
            with write_session(engine) as session:
                opened = live.start_session(session, caller=rater, campaign="live", lease_seconds=600)
            assert opened is not None
            session_id = opened[0].session_id
            text = opened[0].content["opening_line"]
            for path in ("studio", "direct") if number % 2 else ("direct", "studio"):
                started = time.perf_counter()
                if path == "studio":
                    list(live.send_message(context, session_id=session_id, text=text, lease_seconds=600))
                    studio_ms.append((time.perf_counter() - started) * 1000)
                else:
                    with write_session(engine) as session:
                        # The same messages the studio sends (built, not stored: nothing is committed here).
                        pending = live_turns.begin_turn(session, session_id=session_id, user=rater, text=text)
                        session.rollback()
                    started = time.perf_counter()
                    stream = stream_reply(endpoint=pending.endpoint, messages=pending.messages)
                    "".join(stream)
                    direct_ms.append((time.perf_counter() - started) * 1000)
    engine.dispose()
    for name, values in (("studio send_message", studio_ms), ("direct stream_reply", direct_ms)):
        print(f"{name:22s} median {statistics.median(values):7.2f} ms   p95 {_percentile(values, 0.95):7.2f} ms")
    print(f"the studio's share per turn: median {statistics.median(studio_ms) - statistics.median(direct_ms):.2f} ms")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main()
