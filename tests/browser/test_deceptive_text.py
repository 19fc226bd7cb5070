"""Text that deceives the eye, in a real browser (issue 18 item 9): the Curate list and its audit log draw a right-to-
left override and an invisible separator stored before the rule as ``⟨U+202E⟩`` / ``⟨U+2062⟩``, never the raw
characters (on the old code the list's cell held the raw U+202E, and ``abc\\u202eexe`` read "abcexe" reversed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update

from studio.db import create_db_engine, write_session
from studio.models import AuditLog, ScenarioRow
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import Studio, sign_in
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_curate_research_ui import wait_for_text
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser
CURATOR = "curator-text"
OVERRIDE, SEPARATOR = "\u202e", "\u2062"


@pytest.fixture(scope="module")
def deceiving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """A studio of its own whose first dialogue scenario and one audit entry hold invisible characters."""
    from studio.services.auth import create_user
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("deceiving")))
    engine = create_db_engine(store.database_url)
    with write_session(engine) as session:
        create_user(session, username=CURATOR, password=PASSWORD, role="curator")
        text = f"abc{OVERRIDE}exe.txt"
        session.execute(update(ScenarioRow).where(ScenarioRow.id == "b-dialogue-1").values(user_input=text))
        detail = {"reason": f"see{SEPARATOR}{OVERRIDE}here"}
        session.add(
            AuditLog(actor="x", action="scenario.decide", entity="scenario", entity_id="b-dialogue-1", detail=detail)
        )
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


def test_the_curate_list_and_audit_log_draw_invisible_characters_visibly(deceiving: Studio, page: object) -> None:
    sign_in(page, deceiving, CURATOR)
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    page.click("#h2h-search")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-scenarios", "abc⟨U+202E⟩exe.txt")
    assert OVERRIDE not in page.inner_text("#h2h-scenarios")  # type: ignore[attr-defined]
    page.click("#h2h-curate-audit-button")  # type: ignore[attr-defined]
    page.click("#h2h-audit-refresh")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-audit", "see⟨U+2062⟩⟨U+202E⟩here")
    shown = page.inner_text("#h2h-audit")  # type: ignore[attr-defined]
    assert OVERRIDE not in shown and SEPARATOR not in shown
    save_screenshot(page, "curate-curator-invisible-characters-written-out")
