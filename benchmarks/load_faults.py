"""The fault run of ``bench_load.py --faults``: annotators keep answering while the server is killed and the store
goes away, and afterwards every acknowledged answer must be stored exactly once.

Faults, on a schedule over ``--seconds``: the server process is killed (SIGKILL, no clean shutdown) and started again
on the same port; the store is cut — PostgreSQL's connections through a TCP proxy (:mod:`load_proxy`) closed and
refused for ``--outage`` seconds (what a restart looks like to the studio), SQLite's write lock held by another
process for as long (the server waits ``H2H_SQLITE_BUSY_TIMEOUT_MS`` = 1 s, then answers 503).

Each client behaves as the annotate page and a careful script do: a submit that failed without an answer (connection
refused or reset, 503) is sent again — the same ``submission_id`` — until the server acknowledges it (201, or 200 for
one it had stored before the connection broke) or refuses it for good (409/403/404: the lease is gone). Errors are
counted by kind. Integrity is checked as in the load run: acknowledged vs stored, lost, doubled, altered.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import httpx
from load_clients import PhaseResult, _client_loop, _vote, login_all, open_clients, warm_up
from load_http import LeanClient, LeanResponse
from load_proxy import TcpProxy
from sqlalchemy.engine import make_url
from tqdm import tqdm

RETRY_PAUSE_S = 0.25
GIVE_UP_S = 60.0


async def submit_until_settled(
    client: LeanClient, campaign: str, body: dict[str, Any], result: PhaseResult
) -> LeanResponse | None:
    """POST ``body`` until the server settles it (any answer but 503); None when it never did within GIVE_UP_S."""
    deadline = time.monotonic() + GIVE_UP_S
    while time.monotonic() < deadline:
        try:
            reply = await client.post(f"/campaigns/{campaign}/answers", json=body)
        except httpx.TransportError as error:
            result.errors[f"submit transport {type(error).__name__}"] += 1
        else:
            result.requests += 1
            if reply.status_code != 503:
                return reply
            result.errors["submit 503"] += 1
        await asyncio.sleep(RETRY_PAUSE_S)
    return None


async def faulty_cycle(client: LeanClient, campaign: str, rng: random.Random, result: PhaseResult) -> bool:
    """next → submit (resent until settled) → the same submit again; False when nothing is left."""
    try:
        offered = await client.get(f"/campaigns/{campaign}/next")
    except httpx.TransportError as error:
        result.errors[f"next transport {type(error).__name__}"] += 1
        await asyncio.sleep(RETRY_PAUSE_S)
        return True
    result.requests += 1
    if offered.status_code == 204:
        return False
    if offered.status_code != 200:
        result.errors[f"next {offered.status_code}"] += 1
        await asyncio.sleep(RETRY_PAUSE_S)
        return True
    item = offered.json()
    body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": uuid.uuid4().hex}
    body |= {"answers": _vote(rng), "seconds_spent": round(rng.uniform(2, 30), 2)}
    result.unacknowledged.add(body["submission_id"])
    stored = await submit_until_settled(client, campaign, body, result)
    if stored is None or stored.status_code not in (200, 201):
        result.errors[f"submit {'never settled' if stored is None else stored.status_code}"] += 1
        return True
    result.unacknowledged.discard(body["submission_id"])
    result.acknowledged[body["submission_id"]] = stored.json()
    again = await submit_until_settled(client, campaign, body, result)
    if again is None or again.status_code != 200 or again.json() != stored.json():
        result.retry_mismatches += 1
    result.cycles += 1
    return True


def store_outage(database_url: str, proxy: TcpProxy | None) -> Callable[[], AbstractContextManager[Any]]:
    """What cutting the store means for ``database_url``: the proxy cut (PostgreSQL), the write lock held (SQLite)."""
    if proxy is not None:

        class Cut:
            def __enter__(self) -> None:
                proxy.cut()

            def __exit__(self, *_exc: object) -> None:
                proxy.restore()

        return Cut
    path = make_url(database_url).database

    class Locked:
        def __enter__(self) -> None:
            self.holder = sqlite3.connect(str(path), isolation_level=None)
            self.holder.execute("BEGIN IMMEDIATE")

        def __exit__(self, *_exc: object) -> None:
            self.holder.execute("ROLLBACK")
            self.holder.close()

    return Locked if path else nullcontext  # type: ignore[return-value]


async def fault_schedule(
    seconds: float,
    outage_s: float,
    kill_and_restart: Callable[[], Awaitable[None]],
    outage: Callable[[], AbstractContextManager[Any]],
    log: list[str],
) -> None:
    """Kill the server at 20% and 60% of the run, cut the store at 40% and 80% (for ``outage_s`` each)."""
    started = time.monotonic()
    for share, fault in ((0.2, "kill"), (0.4, "store"), (0.6, "kill"), (0.8, "store")):
        await asyncio.sleep(max(0.0, started + seconds * share - time.monotonic()))
        at = time.monotonic() - started
        if fault == "kill":
            restart_s = time.monotonic()
            await kill_and_restart()
            log.append(
                f"{at:5.1f} s: server killed (SIGKILL), serving again after {time.monotonic() - restart_s:.1f} s"
            )
        else:
            with outage():
                await asyncio.sleep(outage_s)
            log.append(f"{at:5.1f} s: store cut for {outage_s:.1f} s")


async def drive_faults(store: Any, base_url: str, args: Any, restart: Any, outage: Any, log: list[str]) -> PhaseResult:
    """Everyone answers (short pauses) for ``args.seconds`` while :func:`load_faults.fault_schedule` runs."""
    # One at a time: a sign-in holds SQLite's write lock through its deliberate argon2 check, and the fault run's
    # server waits only 1 s for that lock.
    tokens = [token for name in store.usernames for token in await login_all(base_url, [name], store.password)]
    clients = open_clients(base_url, tokens)
    result = PhaseResult(name="faults", clients=len(clients))
    wall = time.perf_counter()
    try:
        await warm_up(clients)
        deadline = time.monotonic() + args.seconds
        with tqdm(desc="faults", unit="cycle", leave=False) as bar:
            loops = [
                _client_loop(client, faulty_cycle, store.campaign, deadline, (0.05, 0.3), rng, result, bar)
                for rng, client in ((random.Random(args.seed * 1000 + n), c) for n, c in enumerate(clients))
            ]
            await asyncio.gather(fault_schedule(args.seconds, args.outage, restart, outage, log), *loops)
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    result.seconds = time.perf_counter() - wall
    return result


def fault_report(result: PhaseResult, integrity: Any, store: Any, log: list[str]) -> str:
    lines = [
        f"fault run on {store.database_url}: {result.clients} annotators, {result.seconds:.0f} s, {result.cycles} "
        f"answers acknowledged and retried ({result.requests} requests)",
        *log,
        "errors clients saw, by kind: "
        + (", ".join(f"{kind} {count}" for kind, count in sorted(result.errors.items())) or "none"),
        f"integrity: acknowledged {integrity.acknowledged}, stored {integrity.stored}, lost {integrity.lost}, "
        f"altered {integrity.altered}, doubled {integrity.doubled}, items over quota {integrity.over_quota_items}, "
        f"answer_count mismatches {integrity.count_mismatch_items}, retry mismatches {integrity.retry_mismatches}, "
        f"stored without acknowledgement {integrity.stored_unacknowledged} "
        f"(submits given up unacknowledged: {len(result.unacknowledged)})",
        "RESULT: " + ("OK (0 lost, 0 doubled)" if integrity.ok else "FAILED"),
    ]
    return "\n".join(lines)
