"""``Settings.worker_threads``: a studio process runs at most that many handlers at once (``limit_worker_threads``).

Measured reason (benchmarks/README.md, "Worker threads"): anyio's default of 40 threads made every answering cycle
cost more CPU, the threads contending for the interpreter lock. What is checked here is the rule itself, on a real
server: handlers beyond the limit wait for a thread; the studio's app applies the setting as it starts.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import anyio.to_thread
import httpx
from fastapi import FastAPI

from studio.db import upgrade_db
from studio.settings import get_settings
from studio.web.app import create_app, limit_worker_threads
from tests.serving import serve_in_thread

HANDLER_SECONDS = 0.3


class Overlap:
    """How many handlers ran at the same time, at most."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self.most = 0

    def __enter__(self) -> None:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self.running -= 1


def _slow_app(overlap: Overlap) -> FastAPI:
    app = FastAPI()

    @app.get("/slow")
    def slow() -> dict[str, bool]:  # a sync route: FastAPI runs it on a worker thread
        with overlap:
            time.sleep(HANDLER_SECONDS)
        return {"ok": True}

    return app


def _at_once(base: str, requests: int) -> list[int]:
    async def send() -> list[int]:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            replies = await asyncio.gather(*(client.get("/slow") for _ in range(requests)))
        return [reply.status_code for reply in replies]

    return asyncio.run(send())


def test_handlers_beyond_the_limit_wait_for_a_thread_and_all_are_answered() -> None:
    overlap = Overlap()
    app = _slow_app(overlap)
    limit_worker_threads(app, threads=3)
    with serve_in_thread(app) as base:
        assert _at_once(base, 9) == [200] * 9
    assert overlap.most == 3


def test_without_the_limit_the_same_requests_run_together() -> None:
    """The control: the same app and requests with anyio's default (40 threads) overlap beyond 3 — so the test above
    measures the limit, not the client's concurrency."""
    overlap = Overlap()
    with serve_in_thread(_slow_app(overlap)) as base:
        assert _at_once(base, 9) == [200] * 9
    assert overlap.most > 3


def test_the_studio_app_takes_its_limit_from_the_settings(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    upgrade_db(url)
    app = create_app(get_settings(database_url=url, worker_threads=5))

    @app.get("/_threads")
    async def threads() -> dict[str, float]:  # async: runs in the event loop the lifespan configured
        return {"tokens": anyio.to_thread.current_default_thread_limiter().total_tokens}

    with serve_in_thread(app) as base:
        assert httpx.get(f"{base}/_threads").json() == {"tokens": 5}
    assert get_settings().worker_threads == 16  # the default
