"""Request bodies on every route of ``h2h studio`` (a real server process on 127.0.0.1, spoken to over raw sockets).

A body is bounded on every route, not only the API's (``H2H_MAX_REQUEST_BYTES``; Gradio's upload route by
``H2H_MAX_UPLOAD_BYTES``), and a request without a live session is refused — 401 — before its body is read: a
client sending 100 MB to Gradio's queue without a cookie gets its answer after at most a few MB (what the sockets
buffer) and the server's memory does not grow by the body. Checked on the old code: there Gradio read each of these
bodies whole before its login check (100 MB sent; the server grew by about the body's size).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.studio.studio_process import (
    StudioProcess,
    chunked_pieces,
    make_store,
    plain_pieces,
    send_body,
    studio_process,
)

MB = 1024 * 1024
HUNDRED_MB = 100 * MB
REQUEST_LIMIT = 1 * MB
UPLOAD_LIMIT = 4 * MB
#: What the kernel's loopback buffers may take before the server has said a word (and a little more).
BUFFERED = 16 * MB
#: Resident memory a refused request may leave behind (allocator noise), far below the 100 MB body.
RSS_SLACK = 24 * MB
ROUTES = ["/ui/gradio_api/queue/join", "/ui/gradio_api/run/predict", "/api/v1/campaigns/vote/answers"]

pytestmark = pytest.mark.xdist_group("studio-process")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StudioProcess]:
    folder: Path = tmp_path_factory.mktemp("bodies")
    url = make_store(f"sqlite:///{folder / 'studio.sqlite'}", {"olga": "admin", "frank": "annotator"})
    settings = {"H2H_MAX_REQUEST_BYTES": str(REQUEST_LIMIT), "H2H_MAX_UPLOAD_BYTES": str(UPLOAD_LIMIT)}
    with studio_process(url, env=settings) as process:
        httpx.get(f"{process.base}/login", timeout=30)  # warm: the first request's allocations are not the body's
        yield process


def head(path: str, *, length: int | None, headers: dict[str, str] | None = None) -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return "\r\n".join(lines)


def hostile_body(framing: str) -> tuple[int | None, Iterator[bytes]]:
    if framing == "declared":
        return HUNDRED_MB, plain_pieces(HUNDRED_MB)
    return None, chunked_pieces(HUNDRED_MB)


@pytest.mark.parametrize("framing", ["declared", "chunked"])
@pytest.mark.parametrize("path", ROUTES)
def test_100_mb_without_a_session_is_refused_before_it_is_read(server: StudioProcess, path: str, framing: str) -> None:
    before = server.rss_bytes()
    length, body = hostile_body(framing)
    reply = send_body(server.port, head(path, length=length), body)
    assert reply.status == (413 if framing == "declared" else 401), reply.head  # an oversize length: 413 at once
    assert httpx.get(server.base + "/login").status_code == 200  # and it still serves
    assert reply.sent < BUFFERED, f"{reply.sent / MB:.0f} MB sent before the answer"
    assert reply.seconds < 10
    assert server.rss_bytes() - before < RSS_SLACK


@pytest.mark.parametrize("framing", ["declared", "chunked"])
def test_a_dead_token_with_a_large_body_is_refused_before_it_is_read(server: StudioProcess, framing: str) -> None:
    before = server.rss_bytes()
    length, body = hostile_body(framing)
    forged = {"Cookie": "h2h_session=not-a-live-token", "Authorization": "Bearer not-a-live-token"}
    for path in ROUTES:
        reply = send_body(server.port, head(path, length=length, headers=forged), body)
        assert reply.status == (413 if framing == "declared" else 401), (path, reply.head)
        assert reply.sent < BUFFERED, (path, reply.sent)
    assert server.rss_bytes() - before < RSS_SLACK


@pytest.mark.parametrize("path", ROUTES)
def test_a_body_under_the_limit_without_a_session_is_answered_before_a_byte_of_it_is_sent(
    server: StudioProcess, path: str
) -> None:
    """The headers alone (a body of half the limit declared, none sent): the 401 comes without waiting for it."""
    reply = send_body(server.port, head(path, length=REQUEST_LIMIT // 2), iter(()), timeout=5)
    assert reply.status == 401, reply.head


def test_a_signed_in_caller_s_oversize_body_answers_413_declared_at_once_streamed_at_the_limit(
    server: StudioProcess,
) -> None:
    cookie = {"Cookie": f"h2h_session={server.cookie('frank')}"}
    bearer = {"Authorization": f"Bearer {server.token('frank')}"}
    before = server.rss_bytes()
    for path, credentials in [(ROUTES[0], cookie), (ROUTES[1], cookie), (ROUTES[2], bearer)]:
        declared = send_body(server.port, head(path, length=HUNDRED_MB, headers=credentials), plain_pieces(HUNDRED_MB))
        assert declared.status == 413 and declared.sent < BUFFERED, (path, declared.head)
        streamed = send_body(server.port, head(path, length=None, headers=credentials), chunked_pieces(HUNDRED_MB))
        assert streamed.status == 413 and streamed.sent < REQUEST_LIMIT + BUFFERED, (path, streamed.head)
    assert server.rss_bytes() - before < RSS_SLACK
    refused = httpx.post(
        f"{server.base}/api/v1/campaigns/vote/answers", content=b"[" + b"1," * MB + b"1]", headers=bearer
    )
    assert refused.status_code == 413 and refused.json()["detail"].startswith("body: the request body is larger")


def test_the_admin_page_s_import_still_uploads_files_up_to_its_own_limit(server: StudioProcess) -> None:
    cookies = {"h2h_session": server.cookie("olga")}
    two_mb = b'{"id": "x"}\n' * (2 * MB // 12)  # over the request limit, under the upload limit
    taken = httpx.post(
        f"{server.base}/ui/gradio_api/upload", files=[("files", ("s.jsonl", two_mb))], cookies=cookies, timeout=60
    )
    assert taken.status_code == 200, taken.text
    assert taken.json()[0].endswith("s.jsonl")
    five_mb = b"x" * (5 * MB)
    refused = httpx.post(
        f"{server.base}/ui/gradio_api/upload", files=[("files", ("s.jsonl", five_mb))], cookies=cookies, timeout=60
    )
    assert refused.status_code == 413
    annotator = {"h2h_session": server.cookie("frank")}
    small = httpx.post(
        f"{server.base}/ui/gradio_api/upload", files=[("files", ("s.jsonl", b"{}"))], cookies=annotator, timeout=60
    )
    assert small.status_code == 403


def test_sign_in_takes_a_body_without_a_session_and_bounds_it(server: StudioProcess) -> None:
    assert httpx.post(f"{server.base}/api/v1/login", json={"username": "frank", "password": "wrong"}).status_code == 401
    reply = send_body(server.port, head("/api/v1/login", length=HUNDRED_MB), plain_pieces(HUNDRED_MB))
    assert reply.status == 413 and reply.sent < BUFFERED
