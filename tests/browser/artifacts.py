"""Screenshots as test artefacts: every browser test that shows a page to a person saves what it saw, so a reviewer
can open the pictures (``test-artifacts/screenshots/<name>.png`` by default; ``H2H_TEST_ARTIFACTS`` moves the
folder). Names say page, role and step, e.g. ``annotate-annotator-context-panel``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tests.repo import REPO_ROOT

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,120}$")


def artifacts_dir() -> Path:
    """The folder test artefacts go to (created on first use); ignored by git."""
    folder = Path(os.environ.get("H2H_TEST_ARTIFACTS", REPO_ROOT / "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def save_screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a PNG of ``page`` (a Playwright page) as ``screenshots/<name>.png`` and return its path.

    ``name`` is lower-case letters, digits, ``.``, ``_`` and ``-`` (it becomes a file name)."""
    if not _NAME.match(name):
        raise ValueError(f"screenshot name {name!r}: use lower-case letters, digits, '.', '_' and '-'")
    target = artifacts_dir() / "screenshots" / f"{name}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target), full_page=full_page)
    return target
