"""``h2h studio`` as a separate process on 127.0.0.1 (its memory measured apart from the test's), and raw HTTP.

Used where a test must watch the server from outside: its resident memory while a hostile client sends a body, or
its answers while the store under it fails.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from studio.db import create_db_engine, upgrade_db, write_session
from studio.services.auth import create_user
from tests.studio.helpers import PASSWORD

SERVE = "import sys; from studio.commands.serve import serve; serve(sys.argv[1], '127.0.0.1', int(sys.argv[2]))"


def make_store(url: str, people: dict[str, str]) -> str:
    """Migrate the store at ``url`` and add ``people`` (name → role), password :data:`PASSWORD`; return ``url``."""
    engine = create_db_engine(url)
    upgrade_db(engine)
    with write_session(engine) as session:
        for name, role in people.items():
            create_user(session, username=name, password=PASSWORD, role=role)
    engine.dispose()
    return url


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class StudioProcess:
    """A running ``h2h studio``: its base URL, port and process id."""

    base: str
    port: int
    pid: int

    def rss_bytes(self) -> int:
        """The server process's resident memory now (``VmRSS``)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for process {self.pid}")

    def cookie(self, username: str) -> str:
        """A session cookie for ``username`` (the login form, as a browser signs in)."""
        reply = httpx.post(f"{self.base}/login", data={"username": username, "password": PASSWORD}, timeout=60)
        assert reply.status_code == 303, reply.text
        return str(reply.cookies["h2h_session"])

    def token(self, username: str) -> str:
        reply = httpx.post(f"{self.base}/api/v1/login", json={"username": username, "password": PASSWORD}, timeout=60)
        assert reply.status_code == 200, reply.text
        return str(reply.json()["token"])


@contextmanager
def studio_process(
    url: str, *, env: dict[str, str] | None = None, startup_seconds: float = 90
) -> Iterator[StudioProcess]:
    """``h2h studio --db url`` on a free port (extra ``H2H_*`` settings in ``env``); stopped afterwards."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, url, str(port)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_seconds
    try:
        while True:
            assert process.poll() is None, f"h2h studio exited: {process.stderr.read() if process.stderr else ''}"
            assert time.monotonic() < deadline, "h2h studio did not start"
            try:
                if httpx.get(f"{base}/login", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield StudioProcess(base=base, port=port, pid=process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass(frozen=True)
class RawReply:
    """What a raw client saw: the status (0: the server closed without a word), the bytes of body it got to send,
    and how long until the answer."""

    status: int
    sent: int
    seconds: float
    head: str


def send_body(port: int, head: str, body: Iterator[bytes], *, timeout: float = 60) -> RawReply:
    """Send ``head`` (request line and headers, no blank line) and then ``body`` piece by piece, stopping as soon as
    the server answers or closes; return its status line's code."""
    started = time.monotonic()
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(head.encode("latin-1") + b"\r\n\r\n")
        for piece in body:
            if select.select([connection], [], [], 0)[0]:
                break
            try:
                connection.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)
        answer = _read_head(connection, started + timeout)
    return RawReply(status=_status(answer), sent=sent, seconds=time.monotonic() - started, head=answer)


def _read_head(connection: socket.socket, deadline: float) -> str:
    received = b""
    while b"\r\n\r\n" not in received and time.monotonic() < deadline:
        try:
            chunk = connection.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        received += chunk
    return received.decode("latin-1", "replace")


def _status(head: str) -> int:
    parts = head.split(" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def plain_pieces(total: int, size: int = 1 << 20) -> Iterator[bytes]:
    """``total`` bytes of body in pieces of ``size``."""
    piece = b"x" * size
    for _ in range(total // size):
        yield piece


def chunked_pieces(total: int, size: int = 1 << 20) -> Iterator[bytes]:
    """``total`` bytes as HTTP/1.1 chunks of ``size``, then the last chunk."""
    piece = f"{size:x}\r\n".encode() + b"x" * size + b"\r\n"
    for _ in range(total // size):
        yield piece
    yield b"0\r\n\r\n"
