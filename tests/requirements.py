"""What a test tier needs from the machine (PostgreSQL, Chromium, an engine's environment), said one way.

Outside CI a missing requirement skips the tests that need it, with the reason and how to install it.
Under ``CI=true`` it fails them instead: CI must never go green by running less than it claims to.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """True when the ``CI`` environment variable says this is a CI run (``true``/``1``/``yes``)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require(available: bool, reason: str) -> None:
    """Skip the calling test (or fixture) when ``available`` is false; under CI, fail it with ``reason``."""
    if available:
        return
    if in_ci():
        pytest.fail(f"CI=true and a test requirement is missing: {reason}", pytrace=False)
    pytest.skip(reason)
