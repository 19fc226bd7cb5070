"""``h2h studio --workers N``: N studio processes on one PostgreSQL store, on ports P … P+N−1, supervised.

Each worker is a whole studio (``sys.executable`` running :func:`studio.commands.serve.serve`, its start-up heap
frozen) on its own port; what they must share lives in the store — sign-in tokens, leases, the login throttle's
failures, page-session and file grants (``studio.models.grants``). Gradio keeps a page's event queue and its files in
the process that served it, so a reverse proxy in front must route each person to one process (sticky on the
``h2h_session`` cookie and the ``Authorization`` header; ``deploy/nginx.conf``).

The supervisor migrates the store once, starts the workers (each in a process group of its own, so a Ctrl+C reaches
the supervisor only and it stops every worker with one SIGTERM: each finishes its open requests first), and restarts a
worker that dies, saying so. A worker that dies within :data:`EARLY_DEATH_SECONDS` of its start
:data:`MAX_EARLY_DEATHS` times in a row (its port taken, the store unreachable) stops them all: a restart would not
help. Ctrl+C or SIGTERM stops every worker and waits for them; none outlives the supervisor (on Linux a worker is sent
SIGTERM if the supervisor itself is killed).

SQLite is refused for N > 1: several processes can write one SQLite file (each takes the file's write lock), but the
studio orders its writers with an in-process queue (``studio.db``) that sees one process's writers only; other
processes' writers would wait on SQLite's busy timeout instead, unordered, and fail as "store busy" under load.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import click

#: A worker that dies this soon after it started counts as an early death.
EARLY_DEATH_SECONDS = 30.0
#: Early deaths in a row of one worker after which the supervisor stops every worker.
MAX_EARLY_DEATHS = 3
#: How long a stop waits for the workers to finish (their own graceful stop is 5 s) before killing them.
STOP_WAIT_SECONDS = 15.0
POLL_SECONDS = 0.5

WORKER_CODE = (
    "import os, sys; from studio.commands.serve import serve; "
    "serve(os.environ['H2H_DATABASE_URL'], sys.argv[1], int(sys.argv[2]), migrate=False)"
)


def refuse_sqlite(database_url: str, workers: int) -> None:
    """A click error for ``workers`` > 1 on a SQLite store (see the module docstring for why)."""
    if workers > 1 and database_url.startswith("sqlite"):
        raise click.UsageError(
            f"--workers {workers} needs a PostgreSQL store: the studio orders its SQLite writers in one process only "
            "(several processes would contend for the file's write lock unordered); serve SQLite with --workers 1"
        )


def _die_with_parent() -> None:
    """In the worker, before it runs: SIGTERM it when the supervisor dies (Linux), and keep it out of the
    supervisor's process group (a terminal's Ctrl+C reaches the supervisor, which stops the workers one by one)."""
    os.setpgid(0, 0)
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def start_worker(
    *, database_url: str, host: str, port: int, forwarded_allow_ips: str | None
) -> subprocess.Popen[bytes]:
    """One studio process serving ``database_url`` on ``host:port`` (the URL passed in its environment, not argv)."""
    env = {**os.environ, "H2H_DATABASE_URL": database_url}
    if forwarded_allow_ips is not None:
        env["H2H_FORWARDED_ALLOW_IPS"] = forwarded_allow_ips
    command = [sys.executable, "-c", WORKER_CODE, host, str(port)]
    return subprocess.Popen(command, env=env, preexec_fn=_die_with_parent)  # noqa: PLW1509 - setpgid/prctl only


@dataclass
class Worker:
    """One supervised studio process: its port, the process, when it started, its early deaths in a row."""

    port: int
    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    early_deaths: int = 0


def stop_workers(workers: list[Worker], *, wait_seconds: float = STOP_WAIT_SECONDS) -> None:
    """SIGTERM every live worker, wait for them all (``wait_seconds`` at most), then kill what is left."""
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + wait_seconds
    for worker in workers:
        try:
            worker.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            click.echo(f"worker on port {worker.port} (pid {worker.process.pid}) did not stop: killed", err=True)
            worker.process.kill()
            worker.process.wait()


def _restart_dead(workers: list[Worker], start: Callable[[int], subprocess.Popen[bytes]]) -> None:
    """Restart each worker that exited; a click error once one keeps dying early (see the module docstring)."""
    for worker in workers:
        code = worker.process.poll()
        if code is None:
            continue
        early = time.monotonic() - worker.started < EARLY_DEATH_SECONDS
        worker.early_deaths = worker.early_deaths + 1 if early else 0
        if worker.early_deaths >= MAX_EARLY_DEATHS:
            raise click.ClickException(
                f"the worker on port {worker.port} exited (code {code}) {MAX_EARLY_DEATHS} times within "
                f"{EARLY_DEATH_SECONDS:.0f} s of its start: stopping every worker"
            )
        worker.process = start(worker.port)
        worker.started = time.monotonic()
        click.echo(
            f"worker on port {worker.port} exited (code {code}): restarted as pid {worker.process.pid}", err=True
        )


def _exit_on_sigterm(_signal: int, _frame: object) -> None:
    raise SystemExit(0)


def supervise(*, database_url: str, host: str, port: int, workers: int, forwarded_allow_ips: str | None) -> None:
    """Serve ``workers`` studio processes on ``port`` … ``port + workers - 1`` until Ctrl+C or SIGTERM stops them all.

    The store must be migrated already (``h2h studio`` does it once, before calling this)."""

    def start(worker_port: int) -> subprocess.Popen[bytes]:
        return start_worker(
            database_url=database_url, host=host, port=worker_port, forwarded_allow_ips=forwarded_allow_ips
        )

    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    running: list[Worker] = []
    try:
        for worker_port in range(port, port + workers):
            running.append(Worker(port=worker_port, process=start(worker_port)))
        last = port + workers - 1
        click.echo(
            f"H2HTalk Studio: {workers} processes on ports {port}-{last} of {host}, pids "
            f"{', '.join(str(worker.process.pid) for worker in running)} (Ctrl+C stops them all)",
            err=True,
        )
        while True:
            time.sleep(POLL_SECONDS)
            _restart_dead(running, start)
    except KeyboardInterrupt:
        pass
    finally:
        stop_workers(running)
