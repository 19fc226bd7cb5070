"""A real HTTP server for tests: an ASGI app under uvicorn on 127.0.0.1, in a thread, on a free port."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def serve_in_thread(app: Any, *, startup_seconds: float = 60) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (a port the OS picks); yield ``http://127.0.0.1:PORT``; stop it afterwards."""
    import uvicorn

    with serve_config_in_thread(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")) as url:
        yield url


@contextmanager
def serve_config_in_thread(config: Any, *, startup_seconds: float = 60) -> Iterator[str]:
    """Serve a uvicorn ``config`` (host 127.0.0.1, port 0: one the OS picks) in a thread; yield its URL; stop it."""
    import uvicorn

    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_seconds
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def neighbouring_free_ports(count: int) -> int:
    """A port P such that P … P+count−1 are free on 127.0.0.1 now (``h2h studio --workers N`` listens on all of them).

    Chosen below the kernel's ephemeral range (``ip_local_port_range``), from which the OS hands out the ports of
    outgoing connections and of servers bound to port 0: a port probed free there could be handed to another test
    between the probe and the studio's bind (seen in CI: the second worker's port taken, the supervisor gave up).
    Below it, only a process that names the port could take it.
    """
    low = _ephemeral_low()
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(max(1024, low - 12_000), low - count)
        if all(_bindable(first + offset) for offset in range(count)):
            return first
    raise RuntimeError(f"no {count} neighbouring free ports on 127.0.0.1 below {low}")


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
