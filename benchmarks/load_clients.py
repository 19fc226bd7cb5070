"""Simulated annotators for the load benchmark: asyncio + one :class:`load_http.LeanClient` (one keep-alive
connection) each — httpx's client cost the shared machine several times the CPU per request (see :mod:`load_http`).

An annotating client loops next → submit → the same submit again (a retry, which must answer 200
with the stored answer) until the phase's deadline; a no-op client sends three authenticated
``GET /api/v1/_noop`` per cycle, the same number of requests as an annotating cycle, so both phases
are driven the same way: same clients, same auth header, same concurrency.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from load_http import LeanClient
from tqdm import tqdm

VERDICTS = ("keep", "revise", "discard")
SUBTASKS = ("dialogue_base", "dialogue_emotion", "dialogue_schedule")
REQUEST_TIMEOUT_S = 120.0


@dataclass
class PhaseResult:
    """Everything one phase measured; latencies in milliseconds."""

    name: str
    clients: int
    seconds: float = 0.0
    cycles: int = 0
    requests: int = 0
    cycle_ms: list[float] = field(default_factory=list)  # next + submit (annotating) or 3 no-ops
    retry_ms: list[float] = field(default_factory=list)
    acknowledged: dict[str, dict[str, Any]] = field(default_factory=dict)  # submission_id -> 201 body
    unacknowledged: set[str] = field(default_factory=set)  # submits whose reply never came (may be stored)
    retry_mismatches: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    exhausted_clients: int = 0
    generator_cpu_s: float = 0.0
    server_cpu_s: float | None = None
    machine_busy_s: float | None = None  # CPU seconds spent by every process on the machine (/proc/stat)
    slices: list[PhaseResult] = field(default_factory=list)  # the parts a merged phase was pooled from

    @property
    def cycles_per_s(self) -> float:
        return self.cycles / self.seconds if self.seconds else 0.0


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` from /proc (None where /proc is not there)."""
    import os

    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return None
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> float | None:
    """CPU seconds all processes have spent so far (every core, idle and iowait excluded), from /proc/stat."""
    import os

    stat = Path("/proc/stat")
    if not stat.exists():
        return None
    ticks = [int(value) for value in stat.read_text().splitlines()[0].split()[1:9]]
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def open_clients(base_url: str, tokens: list[str]) -> list[LeanClient]:
    """One client per annotator, each with one keep-alive connection (opened on its first request) and its token."""
    return [
        LeanClient(base_url, headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_TIMEOUT_S)
        for token in tokens
    ]


async def login_all(base_url: str, usernames: list[str], password: str) -> list[str]:
    """Log every annotator in through ``POST /api/v1/login`` (four at a time: argon2 is slow on purpose)."""
    gate = asyncio.Semaphore(4)

    async def one(client: httpx.AsyncClient, username: str) -> str:
        async with gate:
            reply = await client.post("/login", json={"username": username, "password": password})
        reply.raise_for_status()
        return reply.json()["token"]

    async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_TIMEOUT_S) as client:
        return list(await asyncio.gather(*(one(client, username) for username in usernames)))


def _vote(rng: random.Random) -> dict[str, str]:
    return {"verdict": rng.choice(VERDICTS), "subtask_label": rng.choice(SUBTASKS)}


async def _annotate_once(client: LeanClient, campaign: str, rng: random.Random, result: PhaseResult) -> bool:
    """One next → submit → retry cycle; False when the queue has nothing left for this client."""
    started = time.perf_counter()
    offered = await client.get(f"/campaigns/{campaign}/next")
    result.requests += 1
    if offered.status_code == 204:
        return False
    if offered.status_code != 200:
        result.errors[f"next {offered.status_code}"] += 1
        return True
    item = offered.json()
    body = {
        "item_id": item["item_id"],
        "lease_id": item["lease_id"],
        "submission_id": uuid.uuid4().hex,
        "answers": _vote(rng),
        "seconds_spent": round(rng.uniform(2, 30), 2),
    }
    try:
        stored = await client.post(f"/campaigns/{campaign}/answers", json=body)
    except httpx.TransportError:
        result.unacknowledged.add(body["submission_id"])
        raise
    acknowledged = time.perf_counter()
    result.requests += 1
    if stored.status_code != 201:
        result.errors[f"submit {stored.status_code}"] += 1
        return True
    result.acknowledged[body["submission_id"]] = stored.json()
    result.cycle_ms.append((acknowledged - started) * 1e3)
    retried = await client.post(f"/campaigns/{campaign}/answers", json=body)
    result.retry_ms.append((time.perf_counter() - acknowledged) * 1e3)
    result.requests += 1
    if retried.status_code != 200 or retried.json() != stored.json():
        result.retry_mismatches += 1
    result.cycles += 1
    return True


async def _noop_once(client: LeanClient, _campaign: str, _rng: random.Random, result: PhaseResult) -> bool:
    started = time.perf_counter()
    for _ in range(3):
        reply = await client.get("/_noop")
        result.requests += 1
        if reply.status_code != 200:
            result.errors[f"noop {reply.status_code}"] += 1
    result.cycle_ms.append((time.perf_counter() - started) * 1e3)
    result.cycles += 1
    return True


CycleFn = Callable[[LeanClient, str, random.Random, PhaseResult], Awaitable[bool]]


async def _client_loop(
    client: LeanClient,
    cycle: CycleFn,
    campaign: str,
    deadline: float,
    pause: tuple[float, float] | None,
    rng: random.Random,
    result: PhaseResult,
    bar: tqdm,
) -> None:
    # Start paced clients at random offsets, as people arrive, instead of all in the same millisecond.
    if pause:
        await asyncio.sleep(rng.uniform(0, pause[1]))
    while time.monotonic() < deadline:
        try:
            more = await cycle(client, campaign, rng, result)
        except httpx.TransportError as error:
            result.errors[f"transport {type(error).__name__}"] += 1
            continue
        bar.update(1)
        if not more:
            result.exhausted_clients += 1
            return
        if pause:
            await asyncio.sleep(rng.uniform(*pause))


async def run_phase(
    name: str,
    clients: list[LeanClient],
    *,
    campaign: str,
    seconds: float,
    pause: tuple[float, float] | None,
    noop: bool,
    seed: int,
    server_pid: int | None,
) -> PhaseResult:
    """Drive every client until ``seconds`` have passed (cycles in flight then finish) and return the figures."""
    result = PhaseResult(name=name, clients=len(clients))
    cycle: CycleFn = _noop_once if noop else _annotate_once
    server_cpu = process_cpu_seconds(server_pid) if server_pid else None
    machine = machine_cpu_seconds()
    cpu, wall = time.process_time(), time.perf_counter()
    deadline = time.monotonic() + seconds
    with tqdm(desc=name, unit="cycle", leave=False) as bar:
        await asyncio.gather(
            *(
                _client_loop(client, cycle, campaign, deadline, pause, random.Random(seed * 1000 + number), result, bar)
                for number, client in enumerate(clients)
            )
        )
    result.seconds = time.perf_counter() - wall
    result.generator_cpu_s = time.process_time() - cpu
    machine_after = machine_cpu_seconds()
    result.machine_busy_s = None if machine is None or machine_after is None else machine_after - machine
    if server_cpu is not None and server_pid:
        after = process_cpu_seconds(server_pid)
        result.server_cpu_s = None if after is None else after - server_cpu
    return result


async def warm_up(clients: list[LeanClient]) -> None:
    """Open every client's connection (one authenticated request each) before anything is timed."""
    replies = await asyncio.gather(*(client.get("/me") for client in clients))
    failed = [reply.status_code for reply in replies if reply.status_code != 200]
    if failed:
        raise RuntimeError(f"warm-up: {len(failed)} clients could not call /me (status {failed[0]})")
