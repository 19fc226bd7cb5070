"""Server-side CPU per annotating cycle, in process: the real app (``load_server.build_app``) driven by raw ASGI calls.

No HTTP client, no uvicorn, one caller at a time: what remains is the app's own work (middleware,
routing, auth, services, SQL), so the figure moves little with other load on the machine, which makes
it the quick check between two versions of the server (run each a few times, alternating). It does
not replace ``bench_load.py``: concurrency, HTTP parsing and lock waits are not in it.

Run: ``python benchmarks/load_inprocess.py [--cycles 100] [--repeats 3]``; with ``PYTHONPATH`` pointing
at another checkout's ``studio`` it measures that one (``load_server`` imports ``studio.web.app``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_server import build_app  # noqa: E402
from load_store import prepare_store  # noqa: E402

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}
Call = Callable[..., Awaitable[tuple[int, Any]]]


def asgi_caller(app: Any, token: str) -> Call:
    """``call(method, path, body=None) -> (status, json)`` straight into the ASGI app, with the bearer token."""

    async def call(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        raw = b"" if body is None else json.dumps(body).encode()
        headers = [(b"host", b"bench"), (b"authorization", f"Bearer {token}".encode()), (b"accept", b"*/*")]
        if body is not None:
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": headers,
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 5000),
            "state": {},
        }
        messages = [{"type": "http.request", "body": raw, "more_body": False}]
        reply: dict[str, Any] = {"status": None, "body": b""}

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await asyncio.Event().wait()  # the client never disconnects mid-request
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                reply["status"] = message["status"]
            elif message["type"] == "http.response.body":
                reply["body"] += message.get("body", b"")

        await app(scope, receive, send)
        return reply["status"], json.loads(reply["body"]) if reply["body"] else None

    return call


async def annotate(call: Call, campaign: str) -> None:
    """next → submit → the same submit again; fails loudly on any unexpected status or a retry mismatch."""
    status, item = await call("GET", f"/api/v1/campaigns/{campaign}/next")
    if status != 200:
        raise RuntimeError(f"next answered {status}: {item}")
    body = {
        "item_id": item["item_id"],
        "lease_id": item["lease_id"],
        "submission_id": uuid.uuid4().hex,
        "answers": VOTE,
        "seconds_spent": 3.0,
    }
    first = await call("POST", f"/api/v1/campaigns/{campaign}/answers", body)
    retry = await call("POST", f"/api/v1/campaigns/{campaign}/answers", body)
    if first[0] != 201 or retry != (200, first[1]):
        raise RuntimeError(f"submit answered {first}, its retry {retry}")


async def noop(call: Call, _campaign: str) -> None:
    for _ in range(3):
        status, reply = await call("GET", "/api/v1/_noop")
        if status != 200:
            raise RuntimeError(f"_noop answered {status}: {reply}")


async def measure(cycles: int, repeats: int, database_url: str | None = None) -> dict[str, list[float]]:
    """CPU milliseconds per cycle (annotating and three no-ops), ``repeats`` times each, after a warm-up.

    ``database_url``: an empty store to prepare (default: a new SQLite file in a temporary folder).
    """
    from studio.db import create_db_engine, write_session
    from studio.services.auth import login

    work = Path(tempfile.mkdtemp(prefix="h2h-inprocess-"))
    url = database_url or f"sqlite:///{work / 'bench.sqlite'}"
    store = prepare_store(url, work, tag="inproc", scenarios=cycles * repeats + 100, people_per_item=20, annotators=1)
    engine = create_db_engine(url)
    with write_session(engine) as session:
        token = login(session, username=store.usernames[0], password=store.password)
    engine.dispose()
    call = asgi_caller(build_app(url), token)
    kinds = {"answering": annotate, "noop": noop}
    for cycle in kinds.values():
        for _ in range(20):
            await cycle(call, store.campaign)
    figures: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(repeats):
        for name, cycle in kinds.items():
            started = time.process_time()
            for _ in range(cycles):
                await cycle(call, store.campaign)
            figures[name].append((time.process_time() - started) / cycles * 1e3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--db", default=None, help="an empty store URL (default: a new SQLite file)")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.cycles, args.repeats, args.db))
    for name, values in figures.items():
        print(f"{name:<10} CPU ms/cycle: " + " ".join(f"{value:.2f}" for value in values) + f" (min {min(values):.2f})")
    print(f"CPU-bound ratio (min noop / min answering): {min(figures['noop']) / min(figures['answering']):.2f}")


if __name__ == "__main__":
    main()
