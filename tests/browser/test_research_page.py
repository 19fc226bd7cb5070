"""The Research page in Chromium, as a researcher who wants publishable numbers reads it: Table 2 with its coverage
per cell and its partial columns marked, Table 3 as a table equal to ``h2h export sap``, Fig. 7 and the score
distributions drawn with hostile model names, the judge-vs-human explanation when there is nothing to compare, the
pickers applied where each sub-tab says, toasts quoting data as text, and an annotator refused by every handler.

Three of the four models are named to attack the page (a Markdown phishing link, an HTML form, matplotlib mathtext
with an ``<img onerror>``) and the score signature names an ``<a>``: none of them may become a link, a form, an
image or a formula, and no script may run. Screenshots of every sub-tab go to ``test-artifacts/screenshots``.
"""

from __future__ import annotations

import csv
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from sqlmodel import select

from studio.db import create_db_engine, read_session
from studio.models import ResponseRow, ScoreRow
from tests.browser.artifacts import artifacts_dir, save_screenshot
from tests.browser.conftest import UI_WAIT_MS
from tests.browser.research_store import (
    FORM,
    FULL,
    MAIN_SIGNATURE,
    MATH,
    MODELS,
    OTHER_SIGNATURE,
    PASSWORD,
    PHISH,
    ResearchStore,
    build_research_store,
)
from tests.browser.test_studio_ui import call_gradio_event
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser

TABLE3_HEADERS = [
    "Variant",
    "n (rated responses)",
    *(
        f"{header} [95% CI]"  # each estimate with its interval (responses, then raters within each response)
        for header in ("Mean safety (1–5)", "Violation rate", "BLEU-4", "ROUGE-L", "SS")
    ),
]
#: Anything from the data that would have become live markup.
LIVE_DATA_MARKUP = 'a[href*="evil.example"], form[action*="evil.example"], input[name="password"], img[src="x"]'
CELLS_JS = """
(selector) => Array.from(document.querySelectorAll(selector + ' [role=row]')).map(
  (row) => Array.from(row.querySelectorAll('[role=gridcell], [role=columnheader]')).map((c) => c.innerText.trim()))
"""


@dataclass(frozen=True)
class Served:
    base_url: str
    store: ResearchStore


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The hostile research store (``research_store``), served for this module."""
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_research_store(tmp_path_factory.mktemp("research-store"))
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Served(url, store)


@pytest.fixture(scope="module")
def researcher(browser: Any, served: Served) -> Iterator[Any]:
    """One signed-in researcher page on the Research tab, shared by the tests of this module (in file order)."""
    context = browser.new_context(viewport={"width": 1800, "height": 1000})
    page = context.new_page()
    page.goto(f"{served.base_url}/ui/")
    page.fill("#username", "researcher01")
    page.fill("#password", PASSWORD)
    page.click("#login-button")
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="Research").click()
    page.wait_for_function(  # the pickers are filled by the page load
        "() => (document.querySelector('#h2h-research-variant input') || {}).value === 'with_sap'", timeout=UI_WAIT_MS
    )
    yield page
    context.close()


def cells(page: Any, elem_id: str) -> list[list[str]]:
    """The rendered table: the header row, then one list of cell texts per row."""
    result: list[list[str]] = page.evaluate(CELLS_JS, f"#{elem_id}")
    return result


def open_tab(page: Any, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()


def compute(page: Any, button: str, note: str, text: str) -> str:
    """Click ``button`` and wait until the note ``#note`` says ``text``; return the note's text."""
    page.click(f"#{button}")
    page.wait_for_function(
        "([selector, text]) => (document.querySelector(selector) || {innerText: ''}).innerText.includes(text)",
        arg=[f"#{note}", text],
        timeout=UI_WAIT_MS,
    )
    note_text: str = page.inner_text(f"#{note}")
    return note_text


def wait_for_rows(page: Any, elem_id: str, text: str) -> None:
    """Wait until the table ``#elem_id`` shows a row containing ``text``."""
    page.wait_for_function(
        "([selector, text]) => Array.from(document.querySelectorAll(selector + ' [role=row]'))"
        ".some((row) => row.innerText.includes(text))",
        arg=[f"#{elem_id}", text],
        timeout=UI_WAIT_MS,
    )


def choose(page: Any, elem_id: str, option: str) -> None:
    """Pick ``option`` in the dropdown ``#elem_id`` (options are matched on their exact text)."""
    page.click(f"#{elem_id} input")
    page.get_by_role("option", name=option, exact=True).first.click()
    page.wait_for_function(
        "([selector, value]) => document.querySelector(selector).value === value",
        arg=[f"#{elem_id} input", option],
        timeout=UI_WAIT_MS,
    )


def assert_inert(page: Any) -> None:
    """No markup from the data is live anywhere on the page, and no script from it ran."""
    page.wait_for_timeout(200)  # let an onerror handler fire, if one were live
    assert page.locator(LIVE_DATA_MARKUP).count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.title() == "H2HTalk Studio"


def save_plot(page: Any, elem_id: str, name: str) -> bytes:
    """Fetch the figure shown in ``#elem_id`` (with the page's cookies), check it is a PNG, keep it as an artefact."""
    page.wait_for_function(
        "(selector) => { const img = document.querySelector(selector); return img && img.naturalWidth > 0; }",
        arg=f"#{elem_id} img",
        timeout=UI_WAIT_MS,
    )
    source = page.get_attribute(f"#{elem_id} img", "src")
    picture = page.request.get(source).body()
    assert picture.startswith(b"\x89PNG")
    target = artifacts_dir() / "screenshots" / f"{name}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(picture)
    return bytes(picture)


def stored_j_final(served: Served, model: str) -> list[float]:
    engine = create_db_engine(served.store.database_url)
    try:
        with read_session(engine) as session:
            query = (
                select(ScoreRow.J_final)
                .join(ResponseRow, ResponseRow.id == ScoreRow.response_id)
                .where(ResponseRow.model == model, ScoreRow.J_human.is_not(None))
            )
            return [float(value) for value in session.exec(query).all()]
    finally:
        engine.dispose()


def test_the_leaderboard_shows_coverage_per_cell_and_never_ranks_partial_columns_silently(
    researcher: Any, served: Served
) -> None:
    page = researcher
    page.click("#h2h-leaderboard-button")
    wait_for_rows(page, "h2h-leaderboard", FORM)
    assert_inert(page)  # a Markdown caption naming the models made PHISH a link and FORM a form
    header, *rows = cells(page, "h2h-leaderboard")
    assert header[0] == "model" and header[-1] == "pending"
    assert {"dial. base", "dial. emotion", "itin. advanced (III) *", "itin. avg *", "overall *"} <= set(header)
    assert "recol. avg" not in header  # no model has a recollection item: no empty column
    by_model = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert set(by_model) == set(MODELS)  # the hostile names shown literally, as cell text
    [adjudicated] = stored_j_final(served, PHISH)
    value = f"{100 * adjudicated / 5:.2f}"  # partial: 1 of 7 counted; one item, so its interval is that value
    assert by_model[PHISH]["itin. advanced (III) *"] == f"{value} [{value}, {value}] (1/7)"
    assert by_model[FORM]["itin. advanced (III) *"] == by_model[MATH]["itin. advanced (III) *"] == "– (0/7)"
    interval = r"\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]"  # mean [95% interval]
    assert re.fullmatch(interval, by_model[FULL]["itin. advanced (III) *"])  # complete: no (n/N)
    # overall: the mean of the counted items, with the subtasks it covers (dialogue's three and level III of 11)
    assert by_model[PHISH]["overall *"].endswith("(10/16) (4/11 subtasks)")
    assert re.fullmatch(interval + r" \(4/11 subtasks\)", by_model[FULL]["overall *"])
    assert by_model[FULL]["itin. avg *"] == "– (1/5 subtasks)"  # no average over 1 of 5 itinerary subtasks
    assert by_model[PHISH]["pending"] == "6 awaiting adjudication" and by_model[FULL]["pending"] == "none"
    assert [row[0] for row in rows][0] == FULL  # sorted by overall, as the note says
    note = page.inner_text("#h2h-leaderboard-note")
    assert "Sorted by overall" in note
    assert "20 item(s) pending, left out of every mean: 20 awaiting adjudication" in note
    assert "Not like for like: 3 of 4 model(s) have pending items" in note
    assert "Columns marked *: itinerary advanced, itinerary avg, overall." in note
    assert MAIN_SIGNATURE.label() in note  # the hostile signature label, as text
    assert "Uses the pickers above: Variant, Score signature, Judge." in page.inner_text("#h2h-leaderboard-pickers")
    assert_inert(page)
    save_screenshot(page, "research-researcher-leaderboard")


def test_table3_is_a_table_of_cells_equal_to_h2h_export_sap(researcher: Any, served: Served, tmp_path: Path) -> None:
    from studio.cli import build_cli

    page = researcher
    open_tab(page, "SAP safety")
    page.click("#h2h-safety-button")
    page.wait_for_function("() => document.querySelectorAll('#h2h-safety [role=row]').length > 1", timeout=UI_WAIT_MS)
    shown = cells(page, "h2h-safety")  # the garbled page: one header "1", the whole table as text in one cell
    assert shown[0] == TABLE3_HEADERS
    exported = tmp_path / "table3.csv"
    args = ["export", "sap", "--db", served.store.database_url, "--signature", MAIN_SIGNATURE.label(), "-o"]
    result = CliRunner().invoke(build_cli(), [*args, str(exported)])
    assert result.exit_code == 0, result.output
    assert shown == [TABLE3_HEADERS, *table3_rows(exported, ["variant"])]
    assert [row[:2] for row in shown[1:]] == [["with_sap", "8"], ["without_sap", "8"]]
    assert "Campaign: all sap_safety campaigns" in page.inner_text("#h2h-safety-note")
    assert "Ignores Variant, Judge" in page.inner_text("#h2h-safety-pickers")
    save_screenshot(page, "research-researcher-table3")

    page.check("#h2h-safety-by-model input")
    page.click("#h2h-safety-button")
    page.wait_for_function("() => document.querySelectorAll('#h2h-safety [role=row]').length === 9", timeout=UI_WAIT_MS)
    by_model = tmp_path / "table3-by-model.csv"
    result = CliRunner().invoke(build_cli(), [*args, str(by_model), "--by-model"])
    assert result.exit_code == 0, result.output
    shown = cells(page, "h2h-safety")
    assert shown == [["Model", *TABLE3_HEADERS], *table3_rows(by_model, ["model", "variant"])]
    assert {row[0] for row in shown[1:]} == set(MODELS)
    assert_inert(page)
    save_screenshot(page, "research-researcher-table3-by-model")
    page.uncheck("#h2h-safety-by-model input")


def table3_rows(path: Path, keys: list[str]) -> list[list[str]]:
    """``h2h export sap``'s CSV rows as the page formats them: n, two decimals, the violation rate as a percentage,
    each estimate followed by its interval from the same file's ``_low`` / ``_high`` columns."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))

    def shown(row: dict[str, str], column: str, fmt: Any) -> str:
        return f"{fmt(row[column])} [{fmt(row[column + '_low'])}, {fmt(row[column + '_high'])}]"

    def two(value: str) -> str:
        return f"{float(value):.2f}"

    def share(value: str) -> str:
        return f"{100 * float(value):.1f}%"

    return [
        [
            *(row[key].removeprefix("'") for key in keys),  # the CSV's formula guard is not part of the name
            str(int(float(row["responses"]))),
            shown(row, "safety", two),
            shown(row, "violation_rate", share),
            *(shown(row, metric, two) for metric in ("BLEU-4", "ROUGE-L", "SS")),
        ]
        for row in rows
    ]


def test_fig7_and_distributions_draw_hostile_names_literally_and_follow_the_variant(researcher: Any) -> None:
    page = researcher
    open_tab(page, "Instruction following")
    page.click("#h2h-if-button")
    try:  # a mathtext model name ($...$ with an unknown command) made the whole figure fail
        page.wait_for_function(
            "() => (document.querySelector('#h2h-if-plot img') || {naturalWidth: 0}).naturalWidth > 0",
            timeout=UI_WAIT_MS,
        )
    except PlaywrightTimeout:
        pytest.fail(f"Fig. 7 was not drawn; the page shows: {page.inner_text('#h2h-research-if-tab')[:300]!r}")
    assert "Computed for variant with_sap." in page.inner_text("#h2h-if-note")
    assert "Uses the pickers above: Variant." in page.inner_text("#h2h-if-pickers")
    header, *rows = cells(page, "h2h-if")
    assert header == ["model", "explicit", "implicit_help", "ambiguous", "context_aware"]
    # every rating is 5: each cell and its interval (responses, then raters) are 5.00
    assert sorted(row[0] for row in rows) == sorted(MODELS)
    assert {cell for row in rows for cell in row[1:]} == {"5.00 [5.00, 5.00]"}
    assert "[95% CI]: 95% percentile bootstrap over responses, then raters" in page.inner_text("#h2h-if-note")
    save_plot(page, "h2h-if-plot", "research-fig7-plot-with-sap")
    save_screenshot(page, "research-researcher-fig7")
    choose(page, "h2h-research-variant", "without_sap")
    compute(page, "h2h-if-button", "h2h-if-note", "Computed for variant without_sap.")
    page.wait_for_function("() => document.querySelector('#h2h-if').innerText.includes('2.00')", timeout=UI_WAIT_MS)
    assert {cell for row in cells(page, "h2h-if")[1:] for cell in row[1:]} == {"2.00 [2.00, 2.00]"}  # the variant

    open_tab(page, "Score distributions")
    note = compute(page, "h2h-distribution-button", "h2h-distribution-note", "variant without_sap")
    assert MAIN_SIGNATURE.label() in note
    shown_models = {row[0] for row in cells(page, "h2h-distribution")[1:]}  # the rows in view (the table scrolls)
    assert shown_models and shown_models <= set(MODELS)
    save_plot(page, "h2h-distribution-plot", "research-distribution-plot")
    assert_inert(page)
    save_screenshot(page, "research-researcher-distributions")
    choose(page, "h2h-research-variant", "with_sap")


def test_judge_vs_human_says_why_there_is_nothing_to_compare(researcher: Any) -> None:
    page = researcher
    open_tab(page, "Judge vs human")
    note = compute(page, "h2h-calibration-button", "h2h-calibration-note", "Computed for variant with_sap")
    assert "n = 1: correlations need at least 3 items" in note
    assert cells(page, "h2h-calibration")[1][0] == "1"
    save_plot(page, "h2h-calibration-plot", "research-calibration-plot")
    choose(page, "h2h-research-variant", "without_sap")
    note = compute(page, "h2h-calibration-button", "h2h-calibration-note", "variant without_sap")
    assert "Nothing to compare yet: no item has both a judge score and an expert score (n = 0)." in note
    assert "Here 0 item(s) are adjudicated, 0 of them without a judge score, and 21 flagged item(s) await" in note
    assert "experts score flagged itinerary responses in an adjudication campaign" in note
    assert cells(page, "h2h-calibration")[1][0] == "0"
    page.wait_for_selector("#h2h-calibration-plot", state="hidden", timeout=UI_WAIT_MS)  # no empty frame
    save_screenshot(page, "research-researcher-judge-vs-human-n0")
    choose(page, "h2h-research-variant", "with_sap")


def test_agreement_and_progress_count_complete_items_by_the_one_rule(researcher: Any) -> None:
    page = researcher
    open_tab(page, "Agreement")
    assert "Ignores Variant, Score signature, Judge" in page.inner_text("#h2h-agreement-pickers")
    choose(page, "h2h-agreement-campaign", "sap")
    compute(page, "h2h-agreement-button", "h2h-agreement-note", "Campaign: sap")
    assert {"safety", "violation"} <= {row[0] for row in cells(page, "h2h-agreement")[1:]}
    save_screenshot(page, "research-researcher-agreement")
    open_tab(page, "Progress")
    note = compute(page, "h2h-progress-button", "h2h-progress-note", "An item is complete when")
    assert "Only complete items count in aggregation, Table 3, Fig. 7 and agreement." in note
    header, *rows = cells(page, "h2h-progress-campaigns")
    progress = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    # adjudication counts an item complete at 1 expert (its minimum), as aggregation does; SAP at 3 raters
    assert (progress["adj-phish"]["complete_at"], progress["adj-phish"]["complete_items"]) == ("1", "1")
    assert (progress["sap"]["complete_at"], progress["sap"]["items"], progress["sap"]["complete_items"]) == (
        "3",
        "16",
        "16",
    )
    save_screenshot(page, "research-researcher-progress")


def test_pickers_apply_where_the_subtab_says_and_messages_quoting_data_are_text(researcher: Any) -> None:
    page = researcher
    choose(page, "h2h-research-signature", OTHER_SIGNATURE.label())
    open_tab(page, "Leaderboard")
    compute(page, "h2h-leaderboard-button", "h2h-leaderboard-note", "emb=other-embedder")
    assert [row[0] for row in cells(page, "h2h-leaderboard")[1:]] == [FULL]  # only the response of that signature
    open_tab(page, "SAP safety")
    note = compute(page, "h2h-safety-button", "h2h-safety-note", "Nothing to show for these choices")
    assert f"present: {MAIN_SIGNATURE.label()}" in note  # the rated responses have no score of that signature
    assert cells(page, "h2h-safety") == [[""]]  # no stale table under a note about other choices, no "1 2 3"
    page.click("#h2h-export-table3")  # the download is refused the same way, in a toast
    toast = page.locator("[data-testid='toast-body']").last
    toast.wait_for(timeout=UI_WAIT_MS)
    assert f"present: {MAIN_SIGNATURE.label()}" in toast.inner_text()  # the <a> in the label shown as text
    assert toast.locator("a").count() == 0
    assert_inert(page)
    save_screenshot(page, "research-researcher-toast-with-data")
    choose(page, "h2h-research-signature", MAIN_SIGNATURE.label())


def test_the_favicon_is_served(researcher: Any, served: Served) -> None:
    answer = researcher.request.get(f"{served.base_url}/favicon.ico")
    assert answer.status == 200 and answer.headers["content-type"] == "image/x-icon"
    assert answer.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file


#: Values for the research handlers' inputs, by elem_id (what a page would send).
HANDLER_INPUTS: dict[str, Any] = {
    "h2h-research-variant": None,
    "h2h-research-signature": None,
    "h2h-research-judge": None,
    "h2h-safety-campaign": None,
    "h2h-if-campaign": None,
    "h2h-agreement-campaign": None,
    "h2h-safety-by-model": False,
    "h2h-metric": "S",
    "h2h-bins": 20,
}


def handler_data(config: dict[str, Any], elem_id: str) -> list[Any]:
    """The data list a browser sends for ``elem_id``'s click: one value per input of its event, in the event's order."""
    ids = {entry["id"]: entry.get("props", {}).get("elem_id") for entry in config["components"]}
    [component] = [key for key, value in ids.items() if value == elem_id]
    [dependency] = [entry for entry in config["dependencies"] if [component, "click"] in entry["targets"]]
    return [HANDLER_INPUTS.get(ids[key], "csv") for key in dependency["inputs"]]  # the rest: a download's format


def test_an_annotator_is_refused_by_every_research_handler(served: Served) -> None:
    buttons = ["h2h-leaderboard-button", "h2h-safety-button", "h2h-if-button", "h2h-agreement-button"]
    buttons += ["h2h-calibration-button", "h2h-progress-button", "h2h-distribution-button"]
    buttons += ["h2h-export-leaderboard", "h2h-export-table3", "h2h-export-calibration"]
    with httpx.Client(base_url=served.base_url, timeout=30) as client:
        assert client.post("/login", data={"username": "annotator01", "password": PASSWORD}).status_code == 303
        config = client.get("/ui/config").json()
        session_hash = uuid.uuid4().hex
        for elem_id in buttons:
            result = call_gradio_event(client, session_hash, elem_id, "click", handler_data(config, elem_id))
            assert result["success"] is False, elem_id
            assert "role: 'annotator' may not do this" in result["output"]["error"], elem_id
            assert not result["output"].get("data"), elem_id
