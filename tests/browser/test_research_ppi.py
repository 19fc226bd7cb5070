"""The Research page's prediction-powered section in Chromium: under Table 2, the button "Prediction-powered itinerary
scores" fills a table of ``ppi [low, high]`` per model and itinerary subtask with Table 2's classic value beside it,
the audit's own mean, the effective n and the rule in the note. The store: the hostile research run (three model
names attack the page), judge scores varied per item, an adjudication campaign with a seeded random audit (half of
the judged with_sap responses) beside the flagged items, every item scored by an expert and aggregated. The cells
shown must equal ``studio.services.research_ppi`` (itself checked against ``ppi_py``); nothing becomes markup."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlmodel import col

from studio.db import create_db_engine, read_session, upgrade_db, write_session
from studio.models import ScoreRow
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS
from tests.browser.research_store import MODELS, PASSWORD, _answer_all, write_run
from tests.browser.test_research_page import LIVE_DATA_MARKUP, cells, choose, compute, wait_for_rows
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser


def rubric(response_id: int) -> float:
    """The expert's score: close to the judge's 1 + 0.5·(id mod 7), so the judge carries information (ρ > 0)."""
    return min(5.0, 1.0 + 0.5 * (response_id % 7) + 0.5 * (response_id % 2))


def build_audited_store(folder: Path) -> tuple[str, str]:
    """The store described above; returns its URL and the itinerary signature's label."""
    from studio.services.aggregation import aggregate_all
    from studio.services.auth import create_user
    from studio.services.campaigns import TargetSelection, create_campaign
    from studio.services.ingest import ingest_run
    from studio.workflows import WorkflowSchema, load_schemas

    run_dir = folder / "run"
    write_run(run_dir)
    url = f"sqlite:///{folder / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    ingest_run(engine, run_dir)
    judged = col(ScoreRow.J_judge).is_not(None)
    varied = 0.5 * (col(ScoreRow.response_id) % 7)  # the judge's score varies from item to item
    schema = load_schemas()["adjudication"]
    audited = WorkflowSchema.model_validate({**schema.model_dump(mode="json"), "audit": {"share": 0.5, "seed": 0}})
    with write_session(engine) as session:
        session.execute(update(ScoreRow).where(judged).values(J=1.0 + varied, J_final=1.0 + varied))
        create_user(session, username="researcher01", password=PASSWORD, role="researcher")
        expert = create_user(session, username="expert01", password=PASSWORD, role="expert")
        only_with = TargetSelection(variants=["with_sap"])
        create_campaign(session, name="adj-audit", schema=audited, selection=only_with, people_per_item=1)
        label = session.execute(
            select(col(ScoreRow.signature_label)).where(col(ScoreRow.subtask) == "itinerary_advanced").limit(1)
        ).scalar_one()
    _answer_all(engine, "adj-audit", [expert], lambda r, _p: {"rubric_score": rubric(r.id), "note": "ok"})
    with write_session(engine) as session:
        aggregate_all(session)
    engine.dispose()
    return url, label


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    from studio.settings import get_settings
    from studio.web.app import create_app

    url, label = build_audited_store(tmp_path_factory.mktemp("ppi-store"))
    with serve_in_thread(create_app(get_settings(database_url=url))) as base_url:
        yield base_url, url, label


def expected_rows(database_url: str, signature: str) -> list[list[str]]:
    from studio.services.research_ppi import ppi_table
    from studio.ui.research_ppi import ppi_display

    engine = create_db_engine(database_url)
    try:
        with read_session(engine) as session:
            view = ppi_table(session, variant="with_sap", signature=signature, judge="judge=judge-x|prompt=v1")
    finally:
        engine.dispose()
    frame = ppi_display(view.table)
    return [list(frame.columns), *[[str(value) for value in row] for row in frame.itertuples(index=False)]]


def test_the_ppi_section_shows_ppi_beside_classic_with_the_rule(browser: Any, served: tuple[str, str, str]) -> None:
    base_url, database_url, signature = served
    context = browser.new_context(viewport={"width": 1800, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{base_url}/ui/")
        page.fill("#username", "researcher01")
        page.fill("#password", PASSWORD)
        page.click("#login-button")
        page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
        page.get_by_role("tab", name="Research").click()
        page.wait_for_function(
            "() => (document.querySelector('#h2h-research-variant input') || {}).value === 'with_sap'",
            timeout=UI_WAIT_MS,
        )
        choose(page, "h2h-research-signature", signature)
        note = compute(page, "h2h-ppi-button", "h2h-ppi-note", "AUDITED")
        wait_for_rows(page, "h2h-ppi", "itinerary_advanced")
        shown = cells(page, "h2h-ppi")
        expected = expected_rows(database_url, signature)
        assert shown == expected
        assert {row[0] for row in shown[1:]} == set(MODELS)  # hostile names as plain cell text
        with_ppi = [row for row in shown[1:] if row[2]]
        assert with_ppi and all("[" in row[2] and row[3] for row in with_ppi)  # ppi [low, high] and classic
        assert "audited item(s)" in note and "effective n" in note and "never correct the judge" in note
        page.wait_for_timeout(200)
        assert page.locator(LIVE_DATA_MARKUP).count() == 0
        assert page.evaluate("window.__pwned") is None
        page.locator("#h2h-ppi").scroll_into_view_if_needed()
        save_screenshot(page, "research-ppi")
    finally:
        context.close()
