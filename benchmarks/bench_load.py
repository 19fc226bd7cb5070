"""Load benchmark of the studio over HTTP: N simulated annotators against a served studio on loopback.

The studio runs in its own process the way ``h2h studio`` serves it (the real ``create_app`` under
uvicorn, one worker) with an authenticated no-op route added (``benchmarks/load_server.py``). The
store is prepared with the real services: 2,000 scenarios, a crowd_vote campaign with 20 people per
item, N annotator accounts logged in beforehand. Three bounded phases, same clients throughout:

1. ``paced``: each annotator pauses 0.5-1.5 s (uniform) between items: p50/p95/p99 of next + submit;
2. ``flat-out``: no pauses: answers/s;
3. ``noop``: three authenticated ``GET /api/v1/_noop`` per cycle (an annotating cycle is three
   requests too), no pauses: the ceiling of HTTP + auth on this machine, for the ratio.

Phases 2 and 3 alternate in ``--rounds`` short slices (A B B A A B ...) rather than running one after
the other, so a shared machine that speeds up or slows down during the run weighs on both alike; the
report pools the slices and prints each round's ratio too.

Every submit is retried once; the retry must answer 200 with the same stored answer. At the end the
answers are read from the database and compared with the acknowledged ones: exit status 1 if any was
lost, doubled or altered, or a retry did not return the stored answer.

Run: ``python benchmarks/bench_load.py [--clients 50] [--seconds 20] [--db postgresql://...]``.

``--faults`` runs the fault run instead (``load_faults.py``): the same clients answer for ``--seconds`` while the
server is killed and restarted twice and the store is cut twice for ``--outage`` seconds; the report gives the errors
clients saw by kind and the integrity figures (acknowledged vs stored, lost, doubled).

``--processes N --behind-nginx`` serves the studio as N processes behind nginx (``deploy/nginx.conf``, sticky on the
bearer token; ``load_team.py``) for the three phases. ``--compare-processes`` (with ``--processes N``, N >= 2) runs
instead 1 process vs N, both behind nginx, flat out in alternating slices, and prints the answers/s ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_clients import PhaseResult, login_all, open_clients, run_phase, warm_up  # noqa: E402
from load_faults import drive_faults, fault_report, store_outage  # noqa: E402
from load_proxy import TcpProxy  # noqa: E402
from load_store import BenchStore, prepare_store, read_stored_answers  # noqa: E402
from load_team import compare, compare_report, serve_team  # noqa: E402

SERVER_SCRIPT = Path(__file__).resolve().parent / "load_server.py"
SERVER_START_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(
    database_url: str, port: int, log_path: Path, script: Path = SERVER_SCRIPT, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``script`` (``load_server.py``) and wait until the login page answers; its output goes to ``log_path``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", **(env or {})}
    with log_path.open("ab") as log:
        server = subprocess.Popen(
            [sys.executable, str(script), "--db", database_url, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the studio server exited with {server.returncode}; see {log_path}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/login", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    server.terminate()
    raise RuntimeError(f"the studio server did not answer within {SERVER_START_TIMEOUT_S:.0f} s; see {log_path}")


def stop_server(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def percentiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (float("nan"),) * 3
    p50, p95, p99 = np.percentile(np.asarray(values), [50, 95, 99])
    return float(p50), float(p95), float(p99)


@dataclass(frozen=True)
class Integrity:
    acknowledged: int
    stored: int
    lost: int
    altered: int
    doubled: int
    over_quota_items: int
    count_mismatch_items: int
    stored_unacknowledged: int
    retry_mismatches: int

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.altered
            or self.doubled
            or self.over_quota_items
            or self.count_mismatch_items
            or self.retry_mismatches
        )


def check_integrity(store: BenchStore, phases: list[PhaseResult]) -> Integrity:
    """Compare what the server acknowledged with what the database holds."""
    acknowledged = {sid: body for phase in phases for sid, body in phase.acknowledged.items()}
    stored = read_stored_answers(store.database_url, store.campaign)
    lost = [sid for sid in acknowledged if sid not in stored.by_submission]
    altered = [
        sid
        for sid, body in acknowledged.items()
        if sid in stored.by_submission
        and (
            stored.by_submission[sid]["answer_id"] != body["answer_id"]
            or stored.by_submission[sid]["item_id"] != body["item_id"]
            or stored.by_submission[sid]["values"] != body["values"]
        )
    ]
    return Integrity(
        acknowledged=len(acknowledged),
        stored=len(stored.by_submission),
        lost=len(lost),
        altered=len(altered),
        doubled=sum(count - 1 for count in stored.per_item_user.values() if count > 1),
        over_quota_items=stored.over_quota_items,
        count_mismatch_items=stored.count_mismatch_items,
        stored_unacknowledged=len(set(stored.by_submission) - set(acknowledged)),
        retry_mismatches=sum(phase.retry_mismatches for phase in phases),
    )


def _others(phase: PhaseResult) -> str:
    """Cores kept busy by processes other than the server and this generator (other people's work)."""
    if phase.machine_busy_s is None or phase.server_cpu_s is None:
        return "     -"
    return f"{(phase.machine_busy_s - phase.server_cpu_s - phase.generator_cpu_s) / phase.seconds:6.2f}"


def _server_ms_per_cycle(phase: PhaseResult) -> str:
    if phase.server_cpu_s is None or not phase.cycles:
        return "         -"
    return f"{phase.server_cpu_s / phase.cycles * 1e3:10.2f}"


def _cpu_ratio(flat: PhaseResult, noop: PhaseResult) -> str:
    """The ratio the server would reach with a core to itself: no-op CPU per cycle over answering CPU per cycle."""
    if not (flat.server_cpu_s and noop.server_cpu_s and flat.cycles and noop.cycles):
        return "-"
    return f"{(noop.server_cpu_s / noop.cycles) / (flat.server_cpu_s / flat.cycles):.2f}"


def _round_ratios(flat: PhaseResult, noop: PhaseResult) -> str:
    pairs = zip(flat.slices, noop.slices, strict=True)
    return " ".join(f"{a.cycles_per_s / b.cycles_per_s:.2f}" if b.cycles_per_s else "-" for a, b in pairs)


def report(phases: list[PhaseResult], integrity: Integrity, store: BenchStore) -> str:
    """The figures as a plain-text table."""
    lines = [
        f"store {store.database_url}: campaign {store.campaign}, {store.items} items x "
        f"{store.people_per_item} people, {len(store.usernames)} annotators logged in",
        "load average (1, 5, 15 min) at the end: " + ", ".join(f"{value:.2f}" for value in os.getloadavg()),
        "",
        f"{'phase':<9} {'clients':>7} {'s':>6} {'cycles':>7} {'cyc/s':>7} {'req/s':>7} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'retry p95':>9} {'gen CPU':>7} {'srv CPU':>7} {'others':>6} "
        f"{'srv ms/cyc':>10} errors",
    ]
    for phase in phases:
        p50, p95, p99 = percentiles(phase.cycle_ms)
        retry95 = percentiles(phase.retry_ms)[1]
        server = f"{phase.server_cpu_s / phase.seconds:7.0%}" if phase.server_cpu_s is not None else "      -"
        lines.append(
            f"{phase.name:<9} {phase.clients:>7} {phase.seconds:6.1f} {phase.cycles:>7} "
            f"{phase.cycles_per_s:7.1f} {phase.requests / phase.seconds:7.1f} {p50:7.1f} {p95:7.1f} "
            f"{p99:7.1f} {retry95:9.1f} {phase.generator_cpu_s / phase.seconds:7.0%} {server} "
            f"{_others(phase)} {_server_ms_per_cycle(phase)} {dict(phase.errors) or '-'}"
        )
    by_name = {phase.name: phase for phase in phases}
    paced, flat, noop = by_name["paced"], by_name["flat-out"], by_name["noop"]
    ratio = flat.cycles_per_s / noop.cycles_per_s if noop.cycles_per_s else float("nan")
    lines += [
        "",
        "cycle = next + submit (+ its retry, not in the latency) | noop: 3 x GET /api/v1/_noop (auth'd) per cycle",
        f"(1) paced p95 next+submit: {percentiles(paced.cycle_ms)[1]:.1f} ms (goal < 50 ms, issue 23)",
        f"(2) flat-out: {flat.cycles_per_s:.1f} answers/s vs noop {noop.cycles_per_s:.1f} cycles/s "
        f"({noop.requests / noop.seconds:.1f} req/s): ratio {ratio:.2f} (goal >= 0.6 on PostgreSQL, issue 23)",
        "    per round (flat-out / no-op, slices side by side): " + _round_ratios(flat, noop),
        f"    server CPU per cycle: answering {_server_ms_per_cycle(flat).strip()} ms, no-op "
        f"{_server_ms_per_cycle(noop).strip()} ms (goals <= 6 and <= 4 ms): CPU-bound ratio {_cpu_ratio(flat, noop)}",
        "    (srv CPU: share of one core the server used; others: cores busy with other processes meanwhile)",
        "",
        f"integrity: acknowledged {integrity.acknowledged}, stored {integrity.stored}, lost {integrity.lost}, "
        f"altered {integrity.altered}, doubled {integrity.doubled}, items over quota {integrity.over_quota_items}, "
        f"answer_count mismatches {integrity.count_mismatch_items}, retry mismatches {integrity.retry_mismatches}, "
        f"stored without acknowledgement {integrity.stored_unacknowledged}",
        "RESULT: " + ("OK (0 lost, 0 doubled)" if integrity.ok else "FAILED"),
    ]
    return "\n".join(lines)


async def drive(store: BenchStore, base_url: str, args: argparse.Namespace, server_pid: int) -> list[PhaseResult]:
    """Log everyone in, then run the three phases with the same clients."""
    tokens = await login_all(base_url, store.usernames, store.password)
    clients = open_clients(base_url, tokens)
    try:
        await warm_up(clients)
        common = {"campaign": store.campaign, "seconds": args.seconds, "seed": args.seed, "server_pid": server_pid}
        paced = await run_phase("paced", clients, pause=(args.pause_min, args.pause_max), noop=False, **common)
        common["seconds"] = args.seconds / args.rounds
        slices: dict[str, list[PhaseResult]] = {"flat-out": [], "noop": []}
        for number in range(args.rounds):
            # A B, then B A: alternating short slices cancel a machine whose speed drifts during the run.
            for name in ("flat-out", "noop") if number % 2 == 0 else ("noop", "flat-out"):
                slices[name].append(await run_phase(name, clients, pause=None, noop=name == "noop", **common))
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    return [paced, merge_phases("flat-out", slices["flat-out"]), merge_phases("noop", slices["noop"])]


def merge_phases(name: str, parts: list[PhaseResult]) -> PhaseResult:
    """One phase's figures from its slices: counts, times and CPU summed, samples pooled; ``slices`` kept."""
    merged = PhaseResult(name=name, clients=parts[0].clients, slices=parts)
    for part in parts:
        merged.seconds += part.seconds
        merged.cycles += part.cycles
        merged.requests += part.requests
        merged.cycle_ms += part.cycle_ms
        merged.retry_ms += part.retry_ms
        merged.acknowledged.update(part.acknowledged)
        merged.unacknowledged |= part.unacknowledged
        merged.retry_mismatches += part.retry_mismatches
        merged.errors.update(part.errors)
        merged.exhausted_clients = max(merged.exhausted_clients, part.exhausted_clients)
        merged.generator_cpu_s += part.generator_cpu_s
    for field in ("server_cpu_s", "machine_busy_s"):
        values = [getattr(part, field) for part in parts]
        setattr(merged, field, None if None in values else sum(values))
    return merged


def run_faults(store: BenchStore, database_url: str, work_dir: Path, args: argparse.Namespace) -> int:
    """The fault run (see the module docstring); 0 when nothing acknowledged was lost, doubled or altered."""
    url = make_url(database_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432) if url.get_backend_name() == "postgresql" else None
    served_url = url.set(port=proxy.port).render_as_string(hide_password=False) if proxy else database_url
    env = {"H2H_SQLITE_BUSY_TIMEOUT_MS": "1000"}
    port = free_port()
    servers = [start_server(served_url, port, work_dir / "server.log", args.server_script, env)]

    async def kill_and_restart() -> None:
        servers[-1].kill()  # SIGKILL: no shutdown, requests in flight die with it
        await asyncio.to_thread(servers[-1].wait)
        servers.append(
            await asyncio.to_thread(start_server, served_url, port, work_dir / "server.log", args.server_script, env)
        )

    log: list[str] = []
    try:
        outage = store_outage(database_url, proxy)
        result = asyncio.run(
            drive_faults(store, f"http://127.0.0.1:{port}/api/v1", args, kill_and_restart, outage, log)
        )
    finally:
        stop_server(servers[-1])
        if proxy is not None:
            proxy.close()
    integrity = check_integrity(store, [result])
    print(fault_report(result, integrity, store, log))
    return 0 if integrity.ok else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50, help="simulated annotators (default 50)")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase (default 20)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="flat-out and no-op alternate in this many rounds of seconds/rounds each (default 4)",
    )
    parser.add_argument("--db", default=None, help="store URL (default: a new SQLite file in a temporary folder)")
    parser.add_argument("--items", type=int, default=2000, help="scenarios = campaign items (default 2000)")
    parser.add_argument("--people-per-item", type=int, default=20, help="campaign quota per item (default 20)")
    parser.add_argument(
        "--assignment",
        choices=("fill", "spread"),
        default="fill",
        help="the campaign's queue order (default fill, as a new campaign's; spread: least-answered first)",
    )
    parser.add_argument("--pause-min", type=float, default=0.5)
    parser.add_argument("--pause-max", type=float, default=1.5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the store and server log here")
    parser.add_argument(
        "--server-script",
        type=Path,
        default=SERVER_SCRIPT,
        help="server to start (default load_server.py; another script to try a patched server)",
    )
    parser.add_argument("--processes", type=int, default=1, help="studio processes (default 1; >1 needs nginx)")
    parser.add_argument("--behind-nginx", action="store_true", help="serve through nginx (deploy/nginx.conf)")
    parser.add_argument(
        "--compare-processes", action="store_true", help="1 vs --processes behind nginx, side by side (see above)"
    )
    parser.add_argument("--faults", action="store_true", help="the fault run instead (see above)")
    parser.add_argument("--outage", type=float, default=3.0, help="seconds each store cut lasts (--faults)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.clients < 1 or args.seconds <= 0:
        parser.error("--rounds and --clients must be at least 1, --seconds above 0")
    if args.processes < 1 or (args.compare_processes and args.processes < 2):
        parser.error("--processes must be at least 1 (at least 2 with --compare-processes)")
    return args


def run_teams(store: BenchStore, database_url: str, work_dir: Path, args: argparse.Namespace) -> int:
    """The three phases against --processes behind nginx, or (--compare-processes) 1 vs N; 0 when nothing was lost."""
    team = {"start": start_server, "stop": stop_server, "database_url": database_url, "work_dir": work_dir}
    if not args.compare_processes:
        with serve_team(processes=args.processes, name="team", **team) as served:
            pid = served.pids[0] if len(served.pids) == 1 else 0  # the server CPU columns: one process only
            phases = asyncio.run(drive(store, served.api_url, args, pid))
        integrity = check_integrity(store, phases)
        print(report(phases, integrity, store))
        return 0 if integrity.ok else 1
    with (
        serve_team(processes=1, name="1-process", **team) as one,
        serve_team(processes=args.processes, name=f"{args.processes}-processes", **team) as many,
    ):
        teams = {"1-process": one, f"{args.processes}-processes": many}
        timing = {"seconds": args.seconds, "rounds": args.rounds, "seed": args.seed, "merge": merge_phases}
        phases = asyncio.run(compare(store, teams, **timing))
        integrity = check_integrity(store, phases)
        print(compare_report(phases, teams, integrity, store))
    return 0 if integrity.ok else 1


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return 0 when nothing was lost or doubled, else 1."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="h2h-bench-") as scratch:
        work_dir = args.work_dir or Path(scratch)
        work_dir.mkdir(parents=True, exist_ok=True)
        database_url = args.db or f"sqlite:///{work_dir / 'bench.sqlite'}"
        tag = f"bench{secrets.token_hex(3)}"
        print(f"preparing {database_url} ({args.items} scenarios, {args.clients} annotators)...", file=sys.stderr)
        store = prepare_store(
            database_url,
            work_dir,
            tag=tag,
            scenarios=args.items,
            people_per_item=args.people_per_item,
            annotators=args.clients,
            assignment=args.assignment,
        )
        if args.faults:
            return run_faults(store, database_url, work_dir, args)
        if args.behind_nginx or args.compare_processes or args.processes > 1:
            return run_teams(store, database_url, work_dir, args)
        port = free_port()
        server = start_server(database_url, port, work_dir / "server.log", args.server_script)
        try:
            phases = asyncio.run(drive(store, f"http://127.0.0.1:{port}/api/v1", args, server.pid))
        finally:
            stop_server(server)
        integrity = check_integrity(store, phases)
        print(report(phases, integrity, store))
    return 0 if integrity.ok else 1


if __name__ == "__main__":
    sys.exit(main())
