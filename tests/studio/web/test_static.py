"""The favicon: a packaged static file served at ``/favicon.ico`` to everyone (browsers ask for it on the login
page, before anyone signs in), so no page load logs a 404."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi.testclient import TestClient

from studio.db import upgrade_db
from studio.settings import get_settings
from studio.web.app import create_app


def test_the_favicon_is_package_data_served_without_signing_in(tmp_path: Path) -> None:
    packaged = resources.files("studio.web").joinpath("static", "favicon.ico").read_bytes()
    assert packaged[:4] == b"\x00\x00\x01\x00" and len(packaged) < 16_000  # a small ICO file
    url = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    upgrade_db(url)
    with TestClient(create_app(get_settings(database_url=url)), follow_redirects=False) as client:
        answer = client.get("/favicon.ico")
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "image/x-icon" and answer.content == packaged
        assert "max-age" in answer.headers["cache-control"]
        assert client.get("/ui/", headers={"accept": "text/html"}).status_code in (302, 303, 307)  # the rest: sign in
