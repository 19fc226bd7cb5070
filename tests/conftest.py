"""Shared test set-up: no test may reach a model hub; tests that share an expensive session fixture stay together
under pytest-xdist."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: Folders whose tests share one session-scoped fixture (the browser tests: one served studio and one Chromium):
#: under ``pytest -n N --dist loadgroup`` each runs on one worker instead of building the fixture on every worker.
XDIST_GROUPS: dict[str, str] = {"browser": "browser"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(str(item.path)).parent.name
        if folder in XDIST_GROUPS:
            item.add_marker(pytest.mark.xdist_group(XDIST_GROUPS[folder]))
