"""The checkout the tests run from (subprocess tests start children there with it on ``PYTHONPATH``)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
