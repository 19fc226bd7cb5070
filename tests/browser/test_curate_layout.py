"""The Curate page as a curator works it on a 1400 × 1000 screen (issue 16 item 9): the responses' texts of the opened
scenario shown as inert text (a ``<script>`` or an ``<img onerror>`` in a model's answer runs nothing, a hostile model
name stays text), a long answer cut with its whole text one click away, the scenario list beside the opened scenario
and its decision form instead of one tall page (the page's height is measured and written to
``test-artifacts/curate-layout.txt``), and nothing on the page scrolls sideways.

The module has its own studio and store: a full page of scenarios to list (25 rows), and one scenario answered by
three models — one hostile answer, one hostile model name, one long answer with a 300-character unbroken run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.jsonl import write_records
from pipeline.records import Response, Scenario, Score, Turn
from tests.browser.artifacts import artifacts_dir, save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, settled, sign_in
from tests.browser.store_fixture import PASSWORD, SIGNATURE, build_store
from tests.browser.test_curate_research_ui import assert_nothing_ran, fill, wait_for_text
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser

CURATOR = "curator-layout"
OPENED = "l-open-1"
#: A model's answer that would run script if it were rendered as HTML.
HOSTILE_ANSWER = (
    "<script>window.__pwned='script'</script><img src=x onerror=\"window.__pwned='img'\">"
    "I am here with you. ${window.__pwned='template'}"
)
#: A model name that would be bold (and a mouse trap) if rendered as HTML.
HOSTILE_MODEL = "<b onmouseover=\"window.__pwned='model'\">bold-model</b>"
END_MARKER = "THE-END-OF-THE-LONG-ANSWER"
#: A long answer: CJK prose, a 300-character run with no break opportunity, and a marker at its very end.
LONG_ANSWER = "先说重点。" + "我一直在这里陪着你，慢慢说。" * 300 + " " + "x" * 300 + " " + END_MARKER
VIEWPORT = {"width": 1400, "height": 1000}
#: What inside ``selector`` is wider than its box, on the screen: the elements that scroll sideways or cut their
#: content, as [tag, class, scrollWidth, clientWidth] (Gradio's zero-height measuring copy of a table left out).
SIDEWAYS_JS = """(selector) => [...document.querySelectorAll(selector + ', ' + selector + ' *')]
  .filter((el) => el.clientWidth > 0 && el.getBoundingClientRect().height > 0
    && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible')
  .map((el) => [el.tagName, String(el.className).slice(0, 60), el.scrollWidth, el.clientWidth])"""


#: Scroll the opened whole text to its bottom and the page to it; whether ``marker`` is then inside the text's box.
END_IN_VIEW_JS = """(marker) => {
  const box = document.querySelector('#h2h-detail-responses .h2h-response-whole[open] .h2h-response-text');
  box.scrollTop = box.scrollHeight;
  box.scrollIntoView({block: 'end'});
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode()) && !node.data.includes(marker)) {}
  if (!node) return false;
  const range = document.createRange();
  range.setStart(node, node.data.indexOf(marker));
  range.setEnd(node, node.data.indexOf(marker) + marker.length);
  const seen = range.getBoundingClientRect(), frame = box.getBoundingClientRect();
  return seen.top >= frame.top && seen.bottom <= frame.bottom + 1 && seen.bottom <= window.innerHeight;
}"""


def _run_dir(folder: Path) -> Path:
    """A second run: 30 more scenarios to list, and the one to open with three answers and their scores."""
    listed = [
        Scenario(
            id=f"layout-dialogue_base-{number:03d}",  # ids as long as the demo's
            subtask="dialogue_base",
            persona="Mia, a warm illustrator.",
            user_input=f"今天加班到很晚，有点撑不住了 ({number})。" * 3,
            reference="辛苦了，先好好休息。",
        )
        for number in range(1, 31)
    ]
    opened = Scenario(
        id=OPENED,
        subtask="dialogue_emotion",
        persona="Mia, a warm illustrator.",
        history=[Turn(role="user", content="我今天好累。"), Turn(role="assistant", content="怎么啦？")],
        user_input="I failed my exam and I don't know what to tell my parents.",
        reference="That sounds so heavy. I'm here — do you want to talk through how to tell them?",
    )
    answers = [("demo-alpha", "with_sap", HOSTILE_ANSWER), (HOSTILE_MODEL, "without_sap", "Exams are hard.")]
    answers.append(("long-model", "with_sap", LONG_ANSWER))
    responses = [
        Response(scenario_id=OPENED, model=m, variant=v, text=t, backend="fixture", prompt_version="fixture")  # type: ignore[arg-type]
        for m, v, t in answers
    ]
    scores = [
        Score(
            scenario_id=OPENED,
            model=response.model,
            variant=response.variant,
            subtask="dialogue_emotion",
            **dict.fromkeys(("bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rougeL", "ss", "S"), 0.25),
            signature=SIGNATURE,
        )
        for response in responses
    ]
    run_dir = folder / "run-layout"
    run_dir.mkdir(parents=True)
    write_records(run_dir / "scenarios.jsonl", [*listed, opened])
    write_records(run_dir / "responses.jsonl", responses)
    write_records(run_dir / "scores.jsonl", scores)
    return run_dir


@pytest.fixture(scope="module")
def layout_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """A studio of its own: the browser store, the second run ingested, and a curator."""
    from studio.db import create_db_engine, write_session
    from studio.services.auth import create_user
    from studio.services.ingest import ingest_run
    from studio.settings import get_settings
    from studio.web.app import create_app

    root = Path(tmp_path_factory.mktemp("curate-layout"))
    store = build_store(root / "store")
    engine = create_db_engine(store.database_url)
    ingest_run(engine, _run_dir(root))
    with write_session(engine) as session:
        create_user(session, username=CURATOR, password=PASSWORD, role="curator")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


@pytest.fixture
def wide(browser: Any) -> Iterator[Any]:
    """A page on a 1400 × 1000 screen."""
    context = browser.new_context(viewport=VIEWPORT)
    yield context.new_page()
    context.close()


def open_curate(page: Any, studio: Studio) -> None:
    sign_in(page, studio, CURATOR)
    page.get_by_role("tab", name="Curate").click()
    wait_for_text(page, "#h2h-browse-summary", "match")
    settled(page)


def open_scenario(page: Any, scenario_id: str) -> None:
    fill(page, "h2h-scenario-id", scenario_id)
    page.click("#h2h-open")
    wait_for_text(page, "#h2h-decide-target", scenario_id)
    settled(page)


def show_responses(page: Any) -> Any:
    """Open the opened scenario's responses (their texts and scores); the element holding the texts."""
    page.get_by_role("tab", name="Responses: texts and scores", exact=True).click()
    texts = page.locator("#h2h-detail-responses")
    texts.wait_for(timeout=UI_WAIT_MS)
    wait_for_text(page, "#h2h-detail-responses", "long-model")
    return texts


def page_height(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollHeight"))


def record(line: str) -> None:
    """Keep a measured figure where a reviewer finds it (``test-artifacts/curate-layout.txt``, one line per figure:
    a new run of a test replaces its line)."""
    target = artifacts_dir() / "curate-layout.txt"
    kept = target.read_text(encoding="utf-8").splitlines() if target.exists() else []
    kept = [old for old in kept if old.split(":")[0] != line.split(":")[0]]
    target.write_text("\n".join([*kept, line]) + "\n", encoding="utf-8")


def test_the_responses_texts_show_as_inert_text_and_a_long_one_whole_on_demand(
    layout_studio: Studio, wide: Any
) -> None:
    page = wide
    open_curate(page, layout_studio)
    open_scenario(page, OPENED)
    texts = show_responses(page)
    shown = texts.inner_text()
    for text in ("demo-alpha", "with_sap", HOSTILE_ANSWER, HOSTILE_MODEL, "without_sap", "Exams are hard.", "先说重点"):
        assert text in shown, text
    assert texts.locator("script, img, b, a, iframe, [onerror], [onmouseover]").count() == 0
    # The long answer is cut (its end is not on the page) with a way to read the whole of it.
    assert END_MARKER not in shown
    whole = texts.get_by_text("Show the whole text", exact=False)
    assert whole.count() == 1 and "characters" in whole.inner_text()
    assert_nothing_ran(page)
    save_screenshot(page, "curate-curator-responses-texts")
    whole.click()
    marker = texts.get_by_text(END_MARKER, exact=False)
    marker.wait_for(timeout=UI_WAIT_MS)
    assert marker.is_visible() and END_MARKER in texts.inner_text()
    assert LONG_ANSWER.replace(" ", "")[:2000] in texts.inner_text().replace(" ", "").replace("\n", "")
    assert page.evaluate(SIDEWAYS_JS, "#h2h-detail-responses") == []  # the unbroken run wraps inside its box
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    assert_nothing_ran(page)
    # Read to the end: scrolled to its bottom, the opened text's box shows the marker inside it.
    assert page.evaluate(END_IN_VIEW_JS, END_MARKER), "the end of the whole text cannot be scrolled to"
    save_screenshot(page, "curate-curator-response-whole-text", full_page=False)


def test_the_list_and_the_decision_form_are_side_by_side_on_a_short_page(layout_studio: Studio, wide: Any) -> None:
    page = wide
    open_curate(page, layout_studio)
    assert "37 match · page 1 of 2" in page.inner_text("#h2h-browse-summary")  # a full page of 25 listed
    open_scenario(page, OPENED)
    height = page_height(page)
    record(f"Curate at 1400x1000, 25 rows listed, {OPENED} opened: page height {height} px")
    save_screenshot(page, "curate-curator-list-beside-decision")
    page.evaluate("window.scrollTo(0, 0)")
    listing = page.locator("#h2h-scenarios").bounding_box()
    form = page.locator("#h2h-decision").first.bounding_box()
    # Side by side: the form to the right of the list, their heights overlapping, both starting on the first screen.
    assert form["x"] >= listing["x"] + listing["width"] - 1, (listing, form)
    assert form["y"] < listing["y"] + listing["height"] and listing["y"] < form["y"] + form["height"], (listing, form)
    assert listing["y"] < VIEWPORT["height"] and form["y"] < VIEWPORT["height"], (listing, form)
    assert height <= 2 * VIEWPORT["height"], height
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    for area in ("#h2h-scenarios", "#h2h-detail-item", "#h2h-decision", "#h2h-llm-verdict"):
        assert page.evaluate(SIDEWAYS_JS, area) == [], area
    save_screenshot(page, "curate-curator-first-screen", full_page=False)


#: The most a download may take up: a button's height (a gr.File drew a 264 px drop area around a 20 px link).
DOWNLOAD_MAX_PX = 48


def area_height(page: Any, elem_id: str) -> float:
    """The height ``#elem_id`` takes on the page (0 when it is not there or not shown)."""
    found = page.locator(f"#{elem_id}")
    box = found.first.bounding_box() if found.count() else None
    return float(box["height"]) if box else 0.0


def test_a_versions_download_is_a_button_no_taller_than_a_link(layout_studio: Studio, wide: Any) -> None:
    page = wide
    open_curate(page, layout_studio)
    open_scenario(page, "layout-dialogue_base-001")
    page.locator("#h2h-action").get_by_text("Accept", exact=True).click()
    fill(page, "h2h-reason", "Checked.")
    page.click("#h2h-decide")
    wait_for_text(page, "#h2h-decision-message", "layout-dialogue_base-001: accept saved")
    page.get_by_role("tab", name="Dataset versions").click()
    fill(page, "h2h-version-name", "layout-v1")
    page.click("#h2h-publish-preview")
    wait_for_text(page, "#h2h-publish-rows", "layout-dialogue_base-001")
    page.click("#h2h-publish")
    wait_for_text(page, "#h2h-publish-message", "Published layout-v1")
    wait_for_text(page, "#h2h-versions", "layout-v1")
    settled(page)
    before = area_height(page, "h2h-version-file")
    page.click("#h2h-prepare-download")
    page.wait_for_function(  # the file is ready: the area names it
        "() => /h2h-scenarios-layout-v1\\s*\\.csv/.test((document.querySelector('#h2h-version-file') || {}).innerText)",
        timeout=UI_WAIT_MS,
    )
    settled(page)
    after = area_height(page, "h2h-version-file")
    button = page.locator("#h2h-version-file").first
    record(f"Curate dataset-version download area at 1400x1000: {before:.0f} px before, {after:.0f} px ready")
    assert before <= DOWNLOAD_MAX_PX and 0 < after <= DOWNLOAD_MAX_PX, (before, after)
    with page.expect_download(timeout=UI_WAIT_MS) as info:
        button.click()
    assert info.value.suggested_filename == "h2h-scenarios-layout-v1.csv"
    assert "layout-dialogue_base-001" in Path(info.value.path()).read_text(encoding="utf-8-sig")
    save_screenshot(page, "curate-curator-version-download")
