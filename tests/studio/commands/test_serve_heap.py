"""``h2h studio`` freezes its start-up heap before serving (the collector's full passes stop walking it)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from studio.commands import serve as serve_module
from studio.db import upgrade_db


def test_serve_freezes_the_heap_built_at_start_up_before_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, int] = {}

    class NotServing:
        def __init__(self, config: object) -> None:
            self.config = config

        def run(self) -> None:  # what uvicorn would serve with: record how much of the heap is frozen by then
            seen["frozen"] = gc.get_freeze_count()

    import uvicorn

    monkeypatch.setattr(uvicorn, "Server", NotServing)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    upgrade_db(url)
    gc.unfreeze()
    try:
        serve_module.serve(url, "127.0.0.1", 0)
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
    # The app (Gradio's blocks, the routes) alone is tens of thousands of objects; an unfrozen heap reads 0.
    assert seen["frozen"] > 10_000
