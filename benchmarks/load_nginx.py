"""Debian's nginx in front of several studio processes, configured by the shipped ``deploy/nginx.conf``.

:func:`render_config` writes the shipped file with this run's ports (the listening port and one ``server`` line per
studio process in the upstream); :func:`run_nginx` starts ``/usr/sbin/nginx`` as the current user in a prefix folder
(its pid, logs and temporary files all live there), waits until it accepts connections, and stops it afterwards.
Used by ``bench_load.py --behind-nginx`` and by the tests (``tests/nginx_proxy.py``).
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

NGINX = Path("/usr/sbin/nginx")
SHIPPED_CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "nginx.conf"
START_TIMEOUT_S = 20.0

_LISTEN = re.compile(r"^(\s*)listen 127\.0\.0\.1:\d+;$", re.MULTILINE)
_UPSTREAM_SERVERS = re.compile(r"^(\s*)server 127\.0\.0\.1:\d+;\n(?:\s*server 127\.0\.0\.1:\d+;\n)*", re.MULTILINE)
_UPSTREAM_ADDR = re.compile(r"upstream=(.*) time=")


@dataclass(frozen=True)
class Nginx:
    """A running nginx: its URL, prefix folder and access log (``upstream=ADDR`` on each line)."""

    url: str
    prefix: Path
    process: subprocess.Popen[bytes]

    @property
    def access_log(self) -> Path:
        return self.prefix / "logs" / "access.log"

    def upstreams(self, path_prefix: str = "") -> Counter[str]:
        """How many requests each studio process answered (from the access log; the last address of a request nginx
        retried on another process), counting only requests whose path starts with ``path_prefix``."""
        counts: Counter[str] = Counter()
        if not self.access_log.exists():
            return counts
        for line in self.access_log.read_text(encoding="utf-8").splitlines():
            request = line.split('"')[1] if line.count('"') >= 2 else ""
            found = _UPSTREAM_ADDR.search(line)
            if found and request.split(" ")[1:2] and request.split(" ")[1].startswith(path_prefix):
                counts[found.group(1).split(", ")[-1]] += 1
        return counts


def render_config(*, listen_port: int, upstream_ports: list[int], template: Path = SHIPPED_CONFIG) -> str:
    """The shipped config with nginx listening on ``listen_port`` and one upstream ``server`` per port."""
    text = template.read_text(encoding="utf-8")
    text, listens = _LISTEN.subn(lambda match: f"{match.group(1)}listen 127.0.0.1:{listen_port};", text)
    servers = _UPSTREAM_SERVERS.search(text)
    if listens != 1 or servers is None:
        raise ValueError(f"{template}: expected one 'listen 127.0.0.1:PORT;' and the upstream's 'server' lines")
    indent = servers.group(1)
    lines = "".join(f"{indent}server 127.0.0.1:{port};\n" for port in upstream_ports)
    return text[: servers.start()] + lines + text[servers.end() :]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], error_log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            detail = error_log.read_text(encoding="utf-8") if error_log.exists() else ""
            raise RuntimeError(f"nginx exited with {process.returncode}: {detail.strip()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"nginx did not listen on 127.0.0.1:{port} within {START_TIMEOUT_S:.0f} s")


@contextmanager
def run_nginx(*, upstream_ports: list[int], prefix: Path, listen_port: int | None = None) -> Iterator[Nginx]:
    """Start nginx (foreground, as the current user) in ``prefix`` with the shipped config routing to
    ``upstream_ports``; yield it; stop it (SIGQUIT: open requests finish first, then SIGKILL after 10 s)."""
    port = listen_port or free_port()
    for folder in ("logs", "temp"):
        (prefix / folder).mkdir(parents=True, exist_ok=True)
    config = prefix / "nginx.conf"
    config.write_text(render_config(listen_port=port, upstream_ports=upstream_ports), encoding="utf-8")
    command = [str(NGINX), "-p", f"{prefix}/", "-c", str(config), "-e", "logs/error.log", "-g", "daemon off;"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process, prefix / "logs" / "error.log")
        yield Nginx(url=f"http://127.0.0.1:{port}", prefix=prefix, process=process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
