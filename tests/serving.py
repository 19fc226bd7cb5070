"""A real HTTP server for tests: an ASGI app under uvicorn on 127.0.0.1, in a thread, on a free port."""

from __future__ import annotations

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
