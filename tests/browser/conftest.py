"""Browser tests: a real studio server (uvicorn, in a thread, on a free 127.0.0.1 port) over a real
SQLite store, driven by Debian's Chromium through Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser.store_fixture import PASSWORD, StoreFixture, build_store
from tests.requirements import require
from tests.serving import serve_in_thread

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Waits for the UI to react (a Gradio round trip on a 2-core machine); a limit, not an assertion on speed.
UI_WAIT_MS = 60_000


@dataclass(frozen=True)
class Studio:
    base_url: str
    store: StoreFixture


@pytest.fixture(scope="session")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """Serve the studio over a freshly built store for the whole browser session."""
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("browser-store")))
    app = create_app(get_settings(database_url=store.database_url))
    with serve_in_thread(app) as url:
        yield Studio(url, store)


# Package scope, not session: Playwright's sync API keeps an event loop running in this thread until it stops,
# and tests outside this package (asyncio.run in the pipeline's tests) must start after it has stopped.
@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    require(Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install chromium (tests/run.sh does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        opens_context = launched.new_context

        def new_context(*args: Any, **kwargs: Any) -> Any:
            # Every page's actions (click, fill, waits without their own timeout) get UI_WAIT_MS, not Playwright's
            # 30 s default: on a busy machine a Gradio round trip may take longer. A limit, not a speed assertion.
            context = opens_context(*args, **kwargs)
            context.set_default_timeout(UI_WAIT_MS)
            return context

        launched.new_context = new_context  # type: ignore[method-assign]
        yield launched
        launched.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})  # type: ignore[attr-defined]
    opened = context.new_page()
    yield opened
    context.close()


def sign_in(page: object, studio: Studio, username: str, password: str = PASSWORD) -> None:
    """Log in through the login page and wait for the studio to greet ``username``."""
    page.goto(f"{studio.base_url}/ui/")  # type: ignore[attr-defined]
    page.fill("#username", username)  # type: ignore[attr-defined]
    page.fill("#password", password)  # type: ignore[attr-defined]
    page.click("#login-button")  # type: ignore[attr-defined]
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)  # type: ignore[attr-defined]


#: True once no part of the page waits on the server: Gradio marks a waiting component ``pending``/``generating``
#: and writes its "processing | 0.1s" status text into the component until the answer is drawn.
SETTLED_JS = """() => {
  const waiting = '.gradio-container .pending, .gradio-container .generating';
  const status = '.gradio-container .progress-text, .gradio-container .meta-text, .gradio-container .meta-text-center';
  return !document.querySelector(waiting)
    && ![...document.querySelectorAll(status)].some((el) => el.offsetParent !== null);
}"""


def settled(page: object) -> None:
    """Wait until every component has drawn its last answer from the server."""
    page.wait_for_function(SETTLED_JS, timeout=UI_WAIT_MS)  # type: ignore[attr-defined]


def chat_text(page: object) -> str:
    """The item drawn in the chat (the rendered item only, never Gradio's status text over it)."""
    return str(page.inner_text("#h2h-chat .h2h-chat"))  # type: ignore[attr-defined]


def choose_campaign(page: object, name: str) -> None:
    """Pick a campaign from the dropdown by its name and wait for its first item."""
    page.click("#h2h-campaign input")  # type: ignore[attr-defined]
    page.get_by_role("option", name=name).first.click()  # type: ignore[attr-defined]
    page.wait_for_selector("#h2h-chat .h2h-input", timeout=UI_WAIT_MS)  # type: ignore[attr-defined]
    settled(page)
