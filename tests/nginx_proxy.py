"""Several real studio processes behind Debian's nginx, configured by the shipped ``deploy/nginx.conf``, for tests.

Each process is ``h2h studio --db URL --port P --forwarded-allow-ips 127.0.0.1`` (as the README's "Serving a team"
starts them); nginx is started by ``benchmarks/load_nginx.py`` as the current user in a temporary prefix. Outside CI
a missing nginx skips the test; under ``CI=true`` it fails it (:func:`tests.requirements.require`).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from tests.repo import REPO_ROOT
from tests.requirements import require
from tests.serving import neighbouring_free_ports

NGINX = Path("/usr/sbin/nginx")
STUDIO_START_TIMEOUT_S = 180.0


def load_nginx_module() -> ModuleType:
    """``benchmarks/load_nginx.py`` (the benchmarks folder is not a package)."""
    path = REPO_ROOT / "benchmarks" / "load_nginx.py"
    spec = importlib.util.spec_from_file_location("h2h_bench_load_nginx", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def require_nginx() -> None:
    """Skip (fail under CI) when Debian's nginx is not installed."""
    require(NGINX.exists(), f"{NGINX} is missing: apt-get install nginx (tests/run.sh does)")


@dataclass
class StudioProcess:
    port: int
    log: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, *, kill: bool = False) -> None:
        """Stop the process (SIGTERM: a graceful stop; ``kill``: SIGKILL, as a crash)."""
        if self.process.poll() is not None:
            return
        self.process.kill() if kill else self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_studio(database_url: str, port: int, log: Path, *, workers: int = 1) -> StudioProcess:
    """Start ``h2h studio`` on ``port`` believing the proxy on 127.0.0.1 (``workers`` > 1: ``--workers``, ports
    ``port`` … ``port + workers - 1``, one supervisor); wait until every port's login page answers."""
    command = [sys.executable, "-m", "pipeline.cli", "studio", "--db", database_url, "--port", str(port)]
    if workers > 1:
        command += ["--workers", str(workers)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    with log.open("ab") as output:
        process = subprocess.Popen(
            [*command, "--forwarded-allow-ips", "127.0.0.1"], stdout=output, stderr=subprocess.STDOUT, env=env
        )
    studio = StudioProcess(port=port, log=log, process=process)
    deadline = time.monotonic() + STUDIO_START_TIMEOUT_S
    waiting = [f"http://127.0.0.1:{worker_port}" for worker_port in range(port, port + workers)]
    while waiting and time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"h2h studio exited with {process.returncode}: {log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{waiting[0]}/login", timeout=2).status_code == 200:
                waiting.pop(0)
                continue
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    if waiting:
        studio.stop(kill=True)
        raise RuntimeError(f"h2h studio did not answer on {waiting[0]} within {STUDIO_START_TIMEOUT_S:.0f} s")
    return studio


@dataclass
class Team:
    """The served studio: nginx's URL, nginx itself (``upstreams()`` reads its access log), the studio's ports and
    its processes (one per port, or the ``--workers`` supervisor alone)."""

    url: str
    nginx: Any
    ports: list[int]
    processes: list[StudioProcess]

    def process_on(self, upstream: str) -> StudioProcess:
        """The process listening at ``upstream`` (``127.0.0.1:PORT``, as nginx logs it)."""
        return next(process for process in self.processes if upstream.endswith(f":{process.port}"))


@contextmanager
def team_behind_nginx(database_url: str, folder: Path, *, processes: int = 2, workers: bool = False) -> Iterator[Team]:
    """``processes`` studio processes over ``database_url`` behind nginx (prefix and logs in ``folder``): each
    started on its own, or (``workers``) as one ``h2h studio --workers N``."""
    require_nginx()
    nginx_module = load_nginx_module()
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        started: list[StudioProcess] = []
        if workers:
            first = neighbouring_free_ports(processes)
            started.append(start_studio(database_url, first, folder / "studio.log", workers=processes))
            stack.callback(started[-1].stop)
            ports = list(range(first, first + processes))
        else:
            for number in range(processes):
                started.append(start_studio(database_url, nginx_module.free_port(), folder / f"studio-{number}.log"))
                stack.callback(started[-1].stop)
            ports = [studio.port for studio in started]
        nginx = stack.enter_context(nginx_module.run_nginx(upstream_ports=ports, prefix=folder / "nginx"))
        yield Team(url=nginx.url, nginx=nginx, ports=ports, processes=started)
