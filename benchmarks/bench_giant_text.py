"""A 10 MB reply on the annotate page (issue 9 item 6): bytes ``GET /next`` sends, and how long Chromium takes from
choosing the campaign until the reply is drawn (and, where the page offers it, "Show the whole text").

The store is the annotate browser tests' (``tests/browser/annotate_store.py``: one 10,485,760-character reply of
Chinese and English without line breaks), served by the real ``create_app`` in a thread on loopback.

Run from the repository root: ``python benchmarks/bench_giant_text.py`` (needs /usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser.annotate_store import END_MARKER, serve_annotate_store  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.browser.store_fixture import PASSWORD  # noqa: E402


def next_payload_bytes(base_url: str) -> tuple[int, float]:
    """Bytes and seconds of one ``GET /api/v1/campaigns/page-safety/next`` for a fresh annotator."""
    token = httpx.post(f"{base_url}/api/v1/login", json={"username": "pa01", "password": PASSWORD}).json()["token"]
    started = time.perf_counter()
    shown = httpx.get(
        f"{base_url}/api/v1/campaigns/page-safety/next", headers={"Authorization": f"Bearer {token}"}, timeout=300
    )
    return len(shown.content), time.perf_counter() - started


def draw_seconds(base_url: str, limit_s: float) -> dict[str, float | None]:
    """Seconds from choosing the campaign to the reply drawn; then to the whole text drawn (None: no such button)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{base_url}/ui/")
        page.fill("#username", "pa02")
        page.fill("#password", PASSWORD)
        page.click("#login-button")
        page.wait_for_selector("#h2h-username")
        page.click("#h2h-campaign input")
        started = time.perf_counter()
        page.get_by_role("option", name="page-safety").first.click()
        page.wait_for_selector("#h2h-chat .h2h-judged", timeout=limit_s * 1000)
        page.evaluate("() => document.querySelector('#h2h-chat').getBoundingClientRect().height")
        figures: dict[str, float | None] = {"shown": time.perf_counter() - started, "whole": None}
        button = page.locator("#h2h-show-all")
        if button.count() and button.is_visible():
            started = time.perf_counter()
            button.click()
            page.wait_for_function(
                "(m) => document.querySelector('#h2h-chat .h2h-judged .h2h-text').textContent.endsWith(m)",
                arg=END_MARKER,
                timeout=limit_s * 1000,
                polling=250,
            )
            figures["whole"] = time.perf_counter() - started
        browser.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=300.0, help="seconds to wait for a draw before giving up")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        served = serve_annotate_store(Path(folder))
        base_url, _store = next(served)
        size, seconds = next_payload_bytes(base_url)
        print(f"GET /next: {size:,} bytes in {seconds:.2f} s")
        figures = draw_seconds(base_url, args.limit)
        print(f"page: item drawn {figures['shown']:.2f} s after choosing the campaign")
        if figures["whole"] is not None:
            print(f"page: whole text drawn {figures['whole']:.2f} s after 'Show the whole text'")
        next(served, None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
