"""A lean HTTP/1.1 keep-alive client for the load benchmark's simulated annotators.

Why not ``httpx.AsyncClient``: on this 2-core machine the load generator shares the cores with what it measures, and
httpx spent ~1 ms of CPU per request (``gen CPU`` in ``bench_load.py``'s reports: a third to a half of a core at
100-180 cycles/s) — with one studio process behind nginx, the generator, PostgreSQL and nginx together already kept
the second core busy, so the 1-vs-N comparison measured the machine rather than the processes. This client sends the
same requests on one keep-alive connection per annotator at a fraction of that cost (``gen CPU`` in the same
reports): a request line, a Host, the bearer token, a JSON body with its Content-Length; the reply's status,
headers and a body of Content-Length bytes or chunked.

It offers the part of ``httpx.AsyncClient``'s interface the benchmark uses (``get``, ``post(json=...)``,
``aclose``; replies with ``status_code`` and ``json()``) and raises httpx's own transport errors (``ConnectError``,
``ReadError``, ``RemoteProtocolError``, ``ReadTimeout``), so callers catch ``httpx.TransportError`` as before; after
one the next request opens a new connection, as httpx's pool does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any
from urllib.parse import urlsplit

import httpx

_HEAD_END = b"\r\n\r\n"
_MAX_HEAD = 64 * 1024


class LeanResponse:
    """A reply: its status code, lower-cased headers and body bytes."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content

    def json(self) -> Any:
        return json.loads(self.content)


class LeanClient:
    """One keep-alive connection to ``base_url``'s host, every request carrying ``headers``."""

    def __init__(self, base_url: str, *, headers: dict[str, str] | None = None, timeout: float = 120.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"LeanClient speaks plain http to a host: {base_url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        fixed = {"Host": f"{self.host}:{self.port}", **(headers or {})}
        self._fixed_headers = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> LeanResponse:
        return await self.request("GET", path)

    async def post(self, path: str, *, json: Any = None) -> LeanResponse:  # noqa: A002 - httpx's keyword
        return await self.request("POST", path, body=None if json is None else _dumps(json))

    async def request(self, method: str, path: str, *, body: bytes | None = None) -> LeanResponse:
        """Send one request and read its whole reply; an httpx transport error if the connection fails."""
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self._fixed_headers}"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        message = (head + "\r\n").encode("latin-1") + (body or b"")
        try:
            async with asyncio.timeout(self.timeout):
                reader, writer = await self._connection()
                writer.write(message)
                reply = await _read_reply(reader, method)
        except TimeoutError as error:
            await self.aclose()
            raise httpx.ReadTimeout(f"no reply within {self.timeout} s") from error
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as error:
            await self.aclose()
            kind = httpx.RemoteProtocolError if isinstance(error, ValueError) else httpx.ReadError
            raise kind(f"{type(error).__name__}: {error}") from error
        if reply.headers.get("connection", "").lower() == "close":
            await self.aclose()
        return reply

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            try:
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port, limit=_MAX_HEAD)
            except OSError as error:
                raise httpx.ConnectError(f"{type(error).__name__}: {error}") from error
        return self._reader, self._writer

    async def aclose(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):  # already reset by the other side
                await writer.wait_closed()


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


async def _read_reply(reader: asyncio.StreamReader, method: str) -> LeanResponse:
    """Status line, headers, then the body: Content-Length bytes, chunked, or none (HEAD, 1xx, 204, 304)."""
    head = await reader.readuntil(_HEAD_END)
    lines = head[: -len(_HEAD_END)].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1.x status line: {lines[0]!r}")
    status = int(rest[:3])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if method == "HEAD" or status < 200 or status in (204, 304):
        return LeanResponse(status, headers, b"")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return LeanResponse(status, headers, await _read_chunked(reader))
    if "content-length" not in headers:
        raise ValueError("a reply with neither Content-Length nor chunked encoding")
    return LeanResponse(status, headers, await reader.readexactly(int(headers["content-length"])))


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
