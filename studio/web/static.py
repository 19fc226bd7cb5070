"""Static files the studio serves to everyone, signed in or not: the favicon browsers ask for at ``/favicon.ico``
(on the login page too). The file is package data (``studio/web/static/``), read with ``importlib.resources`` once."""

from __future__ import annotations

from functools import cache
from importlib import resources

from fastapi import APIRouter, Response

router = APIRouter(include_in_schema=False)

FAVICON = "favicon.ico"
#: A day: the icon changes with a release, not between requests.
CACHE_CONTROL = "public, max-age=86400"


@cache
def static_bytes(name: str) -> bytes:
    """The bytes of the packaged static file ``name`` (read once)."""
    return resources.files("studio.web").joinpath("static", name).read_bytes()


@router.get("/favicon.ico")
def favicon() -> Response:
    """The studio's icon (two speech bubbles), as ``image/x-icon``."""
    return Response(static_bytes(FAVICON), media_type="image/x-icon", headers={"Cache-Control": CACHE_CONTROL})
