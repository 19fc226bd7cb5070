"""The load benchmark's lean HTTP client (``benchmarks/load_http.py``) against a real server on 127.0.0.1: what it
sends arrives as sent, what comes back (Content-Length, chunked, no body) is read whole, the connection is kept, and a
broken or refused connection is httpx's own transport error, after which the next request connects again."""

from __future__ import annotations

import asyncio
import importlib
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import StreamingResponse

from tests.serving import serve_in_thread

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def load_http(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    yield importlib.import_module("load_http")
    sys.modules.pop("load_http", None)


def _app() -> FastAPI:
    app = FastAPI()
    seen: list[Any] = []

    @app.post("/v1/echo", status_code=201)
    async def echo(request: Request) -> dict[str, Any]:
        return {
            "body": await request.json(),
            "auth": request.headers.get("authorization"),
            "peer": request.client.port if request.client else None,
        }

    @app.get("/v1/empty")
    async def empty() -> Response:
        return Response(status_code=204)

    @app.get("/v1/chunked")
    async def chunked() -> StreamingResponse:
        async def parts() -> Any:
            for piece in (b'{"text": "', "你好".encode(), b'", "n": 3}'):
                yield piece

        return StreamingResponse(parts(), media_type="application/json")

    @app.get("/v1/closing")
    async def closing() -> Response:
        seen.append("closing")
        return Response(b'{"bye": true}', media_type="application/json", headers={"Connection": "close"})

    return app


def test_requests_and_replies_arrive_whole_on_one_kept_connection(load_http: ModuleType) -> None:
    async def run(base: str) -> None:
        client = load_http.LeanClient(f"{base}/v1", headers={"Authorization": "Bearer t0k"})
        body = {"answers": {"verdict": "keep", "note": "很好"}, "n": 1}
        first = await client.post("/echo", json=body)
        second = await client.post("/echo", json=body)
        assert (first.status_code, first.json()["body"], first.json()["auth"]) == (201, body, "Bearer t0k")
        assert second.json()["peer"] == first.json()["peer"]  # the same connection, kept alive
        assert (await client.get("/empty")).status_code == 204
        streamed = await client.get("/chunked")
        assert (streamed.status_code, streamed.json()) == (200, {"text": "你好", "n": 3})
        assert (await client.get("/closing")).json() == {"bye": True}
        after = await client.post("/echo", json=body)  # the server closed: a new connection
        assert after.status_code == 201 and after.json()["peer"] != first.json()["peer"]
        await client.aclose()

    with serve_in_thread(_app()) as base:
        asyncio.run(run(base))


def test_a_refused_or_broken_connection_is_an_httpx_transport_error(load_http: ModuleType) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def refused() -> None:
        client = load_http.LeanClient(f"http://127.0.0.1:{port}/v1")
        with pytest.raises(httpx.ConnectError):
            await client.get("/empty")

    asyncio.run(refused())

    async def broken() -> None:
        async def answer_then_hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"cut')  # 5 of 50 bytes, then gone
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer_then_hang_up, "127.0.0.1", 0)
        client = load_http.LeanClient(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
        with pytest.raises(httpx.ReadError):
            await client.get("/anything")
        server.close()
        await server.wait_closed()

    asyncio.run(broken())
