"""Accounts at the front doors (issue 9 item 9): the login throttle believes a proxy header only from the addresses
``forwarded_allow_ips`` names (none by default — not loopback either, as uvicorn's default would), Gradio's own
``GET /ui/logout`` ends the studio session, a login with an invisible character says what is wrong with the name,
and Gradio's upload routes take files only from those who may import scenarios, within the size limit, refused
before the body is read."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from studio.settings import get_settings
from tests.serving import serve_config_in_thread, serve_in_thread
from tests.studio.conftest import PASSWORD
from tests.studio.studio_process import make_store as make_store_at


def make_store(folder: Path, people: dict[str, str]) -> str:
    """A migrated SQLite store in ``folder`` with ``people`` (name → role), password :data:`PASSWORD`."""
    return make_store_at(f"sqlite:///{folder / 'studio.sqlite'}", people)


@contextmanager
def served_like_h2h_studio(app: Any) -> Iterator[str]:
    """``app`` under uvicorn configured exactly as ``h2h studio`` runs it (``server_config``), on a free port."""
    from studio.commands.serve import server_config

    with serve_config_in_thread(server_config(app, host="127.0.0.1", port=0)) as url:
        yield url


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def form_login(base: str, username: str, password: str = PASSWORD, **headers: str) -> httpx.Response:
    return httpx.post(f"{base}/login", data={"username": username, "password": password}, headers=headers)


def guess_from_many_addresses(base: str, username: str) -> list[int]:
    """Five wrong passwords, each claiming another client address, then the right password from a sixth."""
    codes = [form_login(base, username, "wrong", **{"X-Forwarded-For": f"203.0.113.{n}"}).status_code for n in range(5)]
    return [*codes, form_login(base, username, **{"X-Forwarded-For": "203.0.113.99"}).status_code]


@pytest.fixture(scope="module")
def h2h_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real ``h2h studio`` command, in its own process, on a store with one annotator."""
    folder = tmp_path_factory.mktemp("h2h-studio-command")
    url = make_store(folder, {"mallory": "annotator"})
    port = free_port()
    command = [str(Path(sys.executable).with_name("h2h")), "studio", "--db", url, "--port", str(port)]
    env = {key: value for key, value in os.environ.items() if key != "H2H_FORWARDED_ALLOW_IPS"}
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else "exited"
            try:
                if httpx.get(f"{base}/login", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "h2h studio did not start"
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_h2h_studio_believes_no_forwarded_for_so_a_new_address_per_guess_is_still_throttled(h2h_studio: str) -> None:
    assert guess_from_many_addresses(h2h_studio, "mallory") == [401, 401, 401, 401, 401, 429]
    api = httpx.post(
        f"{h2h_studio}/api/v1/login",
        json={"username": "mallory", "password": PASSWORD},
        headers={"X-Forwarded-For": "198.51.100.7"},
    )
    assert api.status_code == 429


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The studio behind a reverse proxy at 127.0.0.1 (``forwarded_allow_ips``), served like ``h2h studio``."""
    from studio.web.app import create_app

    url = make_store(tmp_path_factory.mktemp("proxied"), {"peggy": "annotator", "victor": "annotator"})
    with served_like_h2h_studio(create_app(get_settings(database_url=url, forwarded_allow_ips="127.0.0.1"))) as base:
        yield base


def test_with_forwarded_allow_ips_each_client_the_proxy_names_is_counted_on_its_own(proxied: str) -> None:
    # Five guesses from one client behind the proxy block that client; another client behind it signs in.
    codes = [form_login(proxied, "peggy", "wrong", **{"X-Forwarded-For": "203.0.113.5"}).status_code for _ in range(5)]
    assert codes == [401] * 5
    assert form_login(proxied, "peggy", **{"X-Forwarded-For": "203.0.113.5"}).status_code == 429
    assert form_login(proxied, "peggy", **{"X-Forwarded-For": "203.0.113.6"}).status_code == 303


def test_with_forwarded_allow_ips_the_proxy_s_scheme_marks_the_cookie_secure(proxied: str) -> None:
    behind_tls = form_login(proxied, "victor", **{"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.8"})
    plain = form_login(proxied, "victor", **{"X-Forwarded-For": "203.0.113.9"})
    assert behind_tls.status_code == plain.status_code == 303
    assert "secure" in behind_tls.headers["set-cookie"].lower() and "secure" not in plain.headers["set-cookie"].lower()


@pytest.fixture(scope="module")
def studio_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``create_app`` over a store with an admin, a curator and three annotators, on 127.0.0.1."""
    from studio.web.app import create_app

    people = {"olga": "admin", "carl": "curator", "frank": "annotator", "grace": "annotator", "heidi": "annotator"}
    url = make_store(tmp_path_factory.mktemp("accounts-app"), people)
    with serve_in_thread(create_app(get_settings(database_url=url, max_upload_bytes=4096))) as base:
        yield base


def me(base: str, token: str) -> int:
    return httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code


def test_gradio_s_own_logout_link_ends_the_studio_session(studio_app: str) -> None:
    with httpx.Client(base_url=studio_app, follow_redirects=False, timeout=60) as client:
        assert client.post("/login", data={"username": "frank", "password": PASSWORD}).status_code == 303
        token = client.cookies["h2h_session"]
        signed_out = client.get("/ui/logout")
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/login"
        assert 'h2h_session=""' in signed_out.headers["set-cookie"] and "Max-Age=0" in signed_out.headers["set-cookie"]
    assert me(studio_app, token) == 401


def test_a_logout_link_on_another_site_signs_nobody_out(studio_app: str) -> None:
    with httpx.Client(base_url=studio_app, follow_redirects=False, timeout=60) as client:
        assert client.post("/login", data={"username": "heidi", "password": PASSWORD}).status_code == 303
        token = client.cookies["h2h_session"]
        for site in ("cross-site", "same-site"):
            assert client.get("/ui/logout", headers={"Sec-Fetch-Site": site}).status_code == 403
        assert me(studio_app, token) == 200
        assert client.get("/ui/logout", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 303
    assert me(studio_app, token) == 401


def test_a_login_with_an_invisible_character_says_what_is_wrong_with_the_name(studio_app: str) -> None:
    form = form_login(studio_app, "frank\u200b")
    assert form.status_code == 422 and "username: contains an invisible or control character (U+200B" in form.text
    assert "h2h_session" not in form.cookies
    api = httpx.post(f"{studio_app}/api/v1/login", json={"username": "frank\u200b", "password": PASSWORD})
    assert api.status_code == 422 and api.json()["detail"].startswith("username: contains an invisible")


def upload(base: str, cookie: str | None, body: bytes, name: str = "scenarios.jsonl") -> httpx.Response:
    cookies = {"h2h_session": cookie} if cookie else None
    return httpx.post(f"{base}/ui/gradio_api/upload", files=[("files", (name, body))], cookies=cookies, timeout=60)


def session_cookie(base: str, username: str) -> str:
    response = form_login(base, username)
    assert response.status_code == 303, response.text
    return str(response.cookies["h2h_session"])


def test_gradio_s_upload_route_takes_files_only_from_those_who_may_import(studio_app: str) -> None:
    body = b'{"id": "x"}\n'
    assert upload(studio_app, None, body).status_code == 401
    refused = upload(studio_app, session_cookie(studio_app, "grace"), body)
    assert refused.status_code == 403 and "only scenario imports take files" in refused.text
    for allowed in ("olga", "carl"):
        taken = upload(studio_app, session_cookie(studio_app, allowed), body)
        assert taken.status_code == 200, taken.text
        [stored] = taken.json()
        Path(stored).unlink()  # the test's own upload: nothing of it is left behind


def test_an_upload_over_the_limit_is_refused_before_its_body_is_read(studio_app: str) -> None:
    cookie = session_cookie(studio_app, "olga")
    assert upload(studio_app, cookie, b"x" * (4096 + 65 * 1024)).status_code == 413  # its declared length

    def chunks() -> Iterator[bytes]:  # no declared length (chunked): counted as it arrives
        yield b"--b\r\nContent-Disposition: form-data; name=files; filename=a.jsonl\r\n\r\n"
        for _ in range(100):
            yield b"x" * 4096

    streamed = httpx.post(
        f"{studio_app}/ui/gradio_api/upload",
        content=chunks(),
        headers={"Content-Type": "multipart/form-data; boundary=b"},
        cookies={"h2h_session": cookie},
        timeout=60,
    )
    assert streamed.status_code == 413 and "H2H_MAX_UPLOAD_BYTES" in streamed.text
    host, port = studio_app.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        raw.sendall(
            b"POST /ui/gradio_api/upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
            b"Content-Length: 100000000\r\nCookie: h2h_session=" + cookie.encode() + b"\r\n\r\n"
        )  # declares 100 MB and sends none of it: the answer comes at once
        assert raw.recv(4096).startswith(b"HTTP/1.1 413")
