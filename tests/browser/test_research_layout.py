"""The Research page on a 1400 × 1000 screen (issue 16 item 9): Table 2 with every column the paper has — eleven
subtasks, three dimension averages, Overall — and long model names fits the page, Overall in view without scrolling
sideways; a download is a button no taller than its link, not an empty drop area.

The module has its own studio and store: two scenarios per subtask, answered by three models (two with long names,
one of them a Markdown link), scored; on itinerary levels I–III the judge passes one model and flags the others, so
their cells are partial (``– (0/2)``) — the widest cells Table 2 has.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.jsonl import write_records
from pipeline.records import JUDGED_SUBTASKS, SUBTASKS, Judgment, Response, Scenario, Score
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, settled
from tests.browser.research_store import MAIN_SIGNATURE, PASSWORD, PHISH
from tests.browser.test_curate_layout import DOWNLOAD_MAX_PX, SIDEWAYS_JS, VIEWPORT, record
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser

LONG_NAME = "Qwen2.5-72B-Instruct-GPTQ-Int4-companion-finetune-v3"
MODELS: tuple[str, ...] = ("model-full", PHISH, LONG_NAME)


def _write_run(run_dir: Path) -> None:
    scenarios = [
        Scenario(id=f"fit-{subtask}-{n}", subtask=subtask, persona="p", user_input=f"{subtask} {n}", reference="r")
        for subtask in SUBTASKS
        for n in (1, 2)
    ]
    keys = [(scenario, model) for scenario in scenarios for model in MODELS]
    responses = [
        Response(scenario_id=s.id, model=m, variant="with_sap", text="t", backend="fixture", prompt_version="p")
        for s, m in keys
    ]
    scores = [
        Score(
            scenario_id=s.id,
            model=m,
            variant="with_sap",
            subtask=s.subtask,
            **dict.fromkeys(("bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rougeL", "ss", "S"), 0.5 + 0.1 * i),
            signature=MAIN_SIGNATURE,
        )
        for s, m in keys
        for i in [MODELS.index(m)]
    ]
    judgments = [
        Judgment(
            scenario_id=s.id,
            model=m,
            variant="with_sap",
            judge_model="judge-x",
            prompt_version="v1",
            prompt_hash="h",
            raw="{}",
            J_judge=5.0 if m == "model-full" else 1.0,
        )
        for s, m in keys
        if s.subtask in JUDGED_SUBTASKS
    ]
    run_dir.mkdir(parents=True)
    for name, records in (("scenarios", scenarios), ("responses", responses), ("scores", scores)):
        write_records(run_dir / f"{name}.jsonl", records)
    write_records(run_dir / "judgments.jsonl", judgments)


@pytest.fixture(scope="module")
def full_table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store with every subtask of the paper, served; its URL."""
    from studio.db import create_db_engine, upgrade_db, write_session
    from studio.services.auth import create_user
    from studio.services.ingest import ingest_run
    from studio.settings import get_settings
    from studio.web.app import create_app

    folder = Path(tmp_path_factory.mktemp("research-layout"))
    _write_run(folder / "run")
    url = f"sqlite:///{folder / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    ingest_run(engine, folder / "run")
    with write_session(engine) as session:
        create_user(session, username="researcher01", password=PASSWORD, role="researcher")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=url))) as served:
        yield served


@pytest.fixture(scope="module")
def researcher(browser: Any, full_table: str) -> Iterator[Any]:
    """A researcher on the Research tab of a 1400 × 1000 screen."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(f"{full_table}/ui/")
    page.fill("#username", "researcher01")
    page.fill("#password", PASSWORD)
    page.click("#login-button")
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="Research").click()
    page.wait_for_function(
        "() => (document.querySelector('#h2h-research-variant input') || {}).value === 'with_sap'", timeout=UI_WAIT_MS
    )
    yield page
    context.close()


def test_table2_with_every_column_fits_1400_px_with_overall_in_view(researcher: Any) -> None:
    page = researcher
    page.click("#h2h-leaderboard-button")
    page.wait_for_function(
        "() => document.querySelectorAll('#h2h-leaderboard [role=row]').length === 4", timeout=UI_WAIT_MS
    )
    settled(page)
    headers = page.locator("#h2h-leaderboard [role=columnheader]")
    names = [text.strip() for text in headers.all_inner_texts()]
    assert len(names) == 1 + 1 + 11 + 3 + 1 + 1, names  # model, rank range, the subtasks, averages, overall, pending
    overall = headers.nth(next(i for i, name in enumerate(names) if name.lower().startswith("overall")))
    box = overall.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"], box
    assert page.evaluate(SIDEWAYS_JS, "#h2h-leaderboard") == []  # the table does not scroll sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    rows = page.locator("#h2h-leaderboard [role=row]").all_inner_texts()
    assert any(LONG_NAME in row.replace("\n", "") for row in rows)  # the long names wrap, whole
    save_screenshot(page, "research-researcher-table2-1400px")


def test_an_export_is_a_button_no_taller_than_a_link(researcher: Any) -> None:
    """Before an export, no download takes room; after it, a button naming the file, which downloads it."""
    page = researcher
    page.get_by_role("tab", name="Leaderboard", exact=True).click()
    settled(page)
    areas = page.locator("[id^=h2h-file-]")  # none, or each with its height
    before = {area.get_attribute("id"): (area.bounding_box() or {"height": 0.0})["height"] for area in areas.all()}
    tallest = max(before.values(), default=0.0)
    page.click("#h2h-export-leaderboard")
    page.wait_for_function(
        "() => /h2h-leaderboard\\s*\\.csv/.test((document.querySelector('#h2h-file-leaderboard') || {}).innerText)",
        timeout=UI_WAIT_MS,
    )
    settled(page)
    ready = page.locator("#h2h-file-leaderboard").first
    height = ready.bounding_box()["height"]
    record(f"Research leaderboard download area at 1400x1000: {tallest:.0f} px before, {height:.0f} px ready")
    assert tallest <= DOWNLOAD_MAX_PX, before
    assert 0 < height <= DOWNLOAD_MAX_PX, height
    with page.expect_download(timeout=UI_WAIT_MS) as info:
        ready.click()
    assert info.value.suggested_filename == "h2h-leaderboard.csv"
    assert LONG_NAME in Path(info.value.path()).read_text(encoding="utf-8-sig")
    save_screenshot(page, "research-researcher-export-ready")
