"""Several studio processes behind nginx for the load benchmark, and the 1-vs-N comparison run.

:func:`serve_team` starts N ``load_server.py`` processes (each believing the proxy on 127.0.0.1, as ``h2h studio
--forwarded-allow-ips 127.0.0.1`` does) and nginx in front with the shipped ``deploy/nginx.conf`` (sticky on the
bearer token: each simulated annotator stays on one process). :func:`compare` drives the same annotators flat out
against a team of 1 and a team of N in alternating slices (A B, then B A, ...), so a shared machine that speeds up or
slows down during the run weighs on both alike; both teams go through nginx, so the ratio is the processes' alone.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from load_clients import PhaseResult, login_all, open_clients, run_phase, warm_up
from load_nginx import Nginx, free_port, run_nginx

#: What the studio processes are told, so the login throttle and connection cap see the client behind nginx.
PROXY_ENV = {"H2H_FORWARDED_ALLOW_IPS": "127.0.0.1"}


@dataclass(frozen=True)
class Team:
    """N studio processes behind one nginx: the API's URL through nginx, nginx, the processes' pids."""

    api_url: str
    nginx: Nginx
    pids: list[int]


@contextmanager
def serve_team(
    *,
    database_url: str,
    work_dir: Path,
    processes: int,
    name: str,
    start: Callable[..., Any],
    stop: Callable[[Any], None],
) -> Iterator[Team]:
    """Start ``processes`` servers with ``start(url, port, log_path, env=...)`` and nginx in front; stop them all."""
    servers: list[Any] = []
    try:
        for number in range(processes):
            port = free_port()
            servers.append((start(database_url, port, work_dir / f"{name}-server-{number}.log", env=PROXY_ENV), port))
        ports = [port for _, port in servers]
        with run_nginx(upstream_ports=ports, prefix=work_dir / f"{name}-nginx") as nginx:
            yield Team(api_url=f"{nginx.url}/api/v1", nginx=nginx, pids=[server.pid for server, _ in servers])
    finally:
        for server, _ in servers:
            stop(server)


async def compare(
    store: Any,
    teams: dict[str, Team],
    *,
    seconds: float,
    rounds: int,
    seed: int,
    merge: Callable[[str, list[PhaseResult]], PhaseResult],
) -> list[PhaseResult]:
    """Every annotator answers flat out against each team in turn, ``rounds`` slices of ``seconds / rounds`` each;
    returns one phase per team, named after it, pooled from its slices by ``merge`` (bench_load's merge_phases)."""
    first = next(iter(teams.values()))
    tokens = await login_all(first.api_url, store.usernames, store.password)  # sessions live in the store
    clients = {name: open_clients(team.api_url, tokens) for name, team in teams.items()}
    slices: dict[str, list[PhaseResult]] = {name: [] for name in teams}
    try:
        for group in clients.values():
            await warm_up(group)
        for number in range(rounds):
            order = list(teams) if number % 2 == 0 else list(reversed(teams))
            for name in order:
                slices[name].append(
                    await run_phase(
                        name,
                        clients[name],
                        campaign=store.campaign,
                        seconds=seconds / rounds,
                        pause=None,
                        noop=False,
                        seed=seed + number,
                        server_pid=None,
                    )
                )
    finally:
        await asyncio.gather(*(client.aclose() for group in clients.values() for client in group))
    return [merge(name, parts) for name, parts in slices.items()]


def _busy(phase: PhaseResult) -> str:
    return f"{phase.machine_busy_s / phase.seconds:5.2f}" if phase.machine_busy_s is not None else "    -"


def _machine_estimate(one: PhaseResult) -> str:
    """What any number of processes could reach on this machine if each answer cost what it cost ``one`` (studio,
    PostgreSQL, nginx and the load generator together): the machine's cores over that cost. An estimate, not a bound:
    a process with fewer clients contends less for its interpreter lock and may spend less per answer."""
    if not (one.machine_busy_s and one.cycles):
        return "machine estimate: - (no CPU figures)"
    per_answer_s = one.machine_busy_s / one.cycles
    estimate = (os.cpu_count() or 1) / per_answer_s
    return (
        f"machine estimate at {one.name}'s CPU per answer ({per_answer_s * 1e3:.1f} ms of all processes): "
        f"{estimate:.1f} answers/s = {estimate / one.cycles_per_s:.2f}x"
    )


def compare_report(phases: list[PhaseResult], teams: dict[str, Team], integrity: Any, store: Any) -> str:
    """The comparison as plain text: answers/s of each team, the ratio (pooled and per round), integrity."""
    one, many = phases
    ratio = many.cycles_per_s / one.cycles_per_s if one.cycles_per_s else float("nan")
    per_round = " ".join(
        f"{b.cycles_per_s / a.cycles_per_s:.2f}" if a.cycles_per_s else "-"
        for a, b in zip(one.slices, many.slices, strict=True)
    )
    lines = [
        f"store {store.database_url}: campaign {store.campaign}, {store.items} items x {store.people_per_item} people, "
        f"{len(store.usernames)} annotators; both teams behind nginx (deploy/nginx.conf), flat out, alternating slices",
        "",
        f"{'team':<14} {'clients':>7} {'s':>6} {'answers':>7} {'ans/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
        f"{'gen CPU':>7} {'busy':>5} errors  requests per process",
    ]
    for phase in phases:
        served = teams[phase.name].nginx.upstreams("/api/v1/campaigns/")
        cycle_ms = sorted(phase.cycle_ms) or [float("nan")]
        lines.append(
            f"{phase.name:<14} {phase.clients:>7} {phase.seconds:6.1f} {phase.cycles:>7} {phase.cycles_per_s:7.1f} "
            f"{cycle_ms[len(cycle_ms) // 2]:7.1f} {cycle_ms[int(len(cycle_ms) * 0.95)]:7.1f} "
            f"{phase.generator_cpu_s / phase.seconds:7.0%} {_busy(phase)} {dict(phase.errors) or '-'}  {dict(served)}"
        )
    lines += [
        "(gen CPU: share of one core the load generator used; busy: cores the whole machine kept busy, of "
        f"{os.cpu_count()}; load average at the end: {', '.join(f'{value:.2f}' for value in os.getloadavg())})",
        "",
        f"{many.name} vs {one.name}: {ratio:.2f}x the answers/s (goal >= 1.3); per round: {per_round}",
        _machine_estimate(one),
        f"integrity: acknowledged {integrity.acknowledged}, stored {integrity.stored}, lost {integrity.lost}, "
        f"altered {integrity.altered}, doubled {integrity.doubled}, items over quota {integrity.over_quota_items}, "
        f"answer_count mismatches {integrity.count_mismatch_items}, retry mismatches {integrity.retry_mismatches}",
        "RESULT: " + ("OK (0 lost, 0 doubled, 0 over quota)" if integrity.ok else "FAILED"),
    ]
    return "\n".join(lines)
