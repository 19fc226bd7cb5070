"""The curator page shows what the refine run found (issue 12 item 4), in a real browser over its own store: a
scenario's flags with each PII replacement's text before and after, the LLM pre-screen's verdict, votes, uncertainty
and reasons beside the crowd's tallies; a hostile reason shows as text; publishing records what was decided."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from studio.db import create_db_engine, write_session
from studio.models.curation import DatasetVersion
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import Studio, sign_in
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_curate_research_ui import assert_nothing_ran, fill, read_store, wait_for_text
from tests.serving import serve_in_thread
from tests.studio.curation_run import PHONE, REASON, vote_and_judge, write_refine_dir
from tests.studio.helpers import write_run

pytestmark = pytest.mark.browser
HOSTILE_REASON = "<img src=x onerror=\"window.__pwned='reason'\"><b>bold</b> the reply is cold"


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """A studio of its own: the browser store plus a refine folder ingested (one reason made hostile)."""
    from studio.services.auth import create_user
    from studio.services.campaigns import TargetSelection, create_campaign
    from studio.services.curation_ingest import ingest_curation
    from studio.services.ingest import ingest_run
    from studio.settings import get_settings
    from studio.web.app import create_app
    from studio.workflows import load_schemas

    root = Path(tmp_path_factory.mktemp("findings"))
    store = build_store(root / "store")
    folder = write_refine_dir(root / "curation").root
    lines = (folder / "prescreen.jsonl").read_text(encoding="utf-8").splitlines()
    verdicts = [json.loads(line) for line in lines]
    for verdict in verdicts:
        if verdict["id"] == "iti-1":
            verdict["reasons"] = [HOSTILE_REASON]
    (folder / "prescreen.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts), encoding="utf-8")
    engine = create_db_engine(store.database_url)
    ingest_run(engine, write_run(root / "run"))  # responses to dlg-1: pairs for a pairwise campaign
    ingest_curation(engine, folder)
    with write_session(engine) as session:
        create_user(session, username="curator-f", password=PASSWORD, role="curator")
        people = [create_user(session, username=f"rater-{n}", password=PASSWORD, role="annotator") for n in (1, 2, 3)]
        selection = TargetSelection(subtasks=["dialogue_base"])
        create_campaign(session, name="pairs-f", schema=load_schemas()["pairwise"], selection=selection)
    vote_and_judge(engine, "pairs-f", people, root / "pair_verdicts.jsonl")
    ingest_curation(engine, folder, pairs=root / "pair_verdicts.jsonl")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


def open_scenario(page: object, scenario_id: str) -> None:
    fill(page, "h2h-scenario-id", scenario_id)
    page.click("#h2h-open")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-decide-target", scenario_id)


def test_the_curator_sees_flags_pii_before_after_and_the_llm_beside_the_crowd(findings: Studio, page: object) -> None:
    sign_in(page, findings, "curator-f")
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    open_scenario(page, "dlg-1")
    wait_for_text(page, "#h2h-llm-verdict", "LLM pre-screen: revise")
    llm = page.inner_text("#h2h-llm-verdict")  # type: ignore[attr-defined]
    assert "keep 1, revise 2" in llm and "uncertainty 0.58" in llm and "needs a person" in llm
    assert REASON in llm and "judge judge-test" in llm and "queue rank 2" in llm
    assert "Preprocess flags: pii" in llm
    flags = page.inner_text("#h2h-flags")  # type: ignore[attr-defined]
    for text in ("pii", "user_input", "entity PHONE", PHONE, "[PHONE]", "replaced", "phone replaced by [PHONE]"):
        assert text in flags, text
    assert "[PHONE]" in page.inner_text("#h2h-detail-item") and PHONE not in page.inner_text("#h2h-detail-item")  # type: ignore[attr-defined]
    save_screenshot(page, "curate-findings-dlg-1")

    open_scenario(page, "iti-1")
    wait_for_text(page, "#h2h-llm-verdict", "LLM pre-screen: discard")
    assert HOSTILE_REASON in page.inner_text("#h2h-llm-verdict")  # type: ignore[attr-defined]
    assert page.locator("#h2h-llm-verdict img, #h2h-llm-verdict ul b").count() == 0  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-flags", "王小明")
    assert "[NAME_1]" in page.inner_text("#h2h-flags")  # type: ignore[attr-defined]
    assert_nothing_ran(page)
    save_screenshot(page, "curate-findings-iti-1")


def test_publishing_records_what_was_accepted_edited_and_rejected(findings: Studio, page: object) -> None:
    sign_in(page, findings, "curator-f")
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    for scenario_id, action, reason in (("dlg-2", "Accept", "fine"), ("iti-1", "Reject", "LLM and I agree")):
        open_scenario(page, scenario_id)
        page.locator("#h2h-action").get_by_text(action, exact=True).click()  # type: ignore[attr-defined]
        fill(page, "h2h-reason", reason)
        page.click("#h2h-decide")  # type: ignore[attr-defined]
        wait_for_text(page, "#h2h-decision-message", f"{scenario_id}: {action.lower()} saved")
    open_scenario(page, "dlg-1")
    page.locator("#h2h-action").get_by_text("Edit and accept", exact=True).click()  # type: ignore[attr-defined]
    page.locator("#h2h-edit-reference textarea").fill("辛苦了，先好好休息，我在。")  # type: ignore[attr-defined]
    fill(page, "h2h-reason", "warmer")
    page.click("#h2h-decide")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-decision-message", "dlg-1: edit saved (status accepted)")
    page.get_by_role("tab", name="Dataset versions").click()  # type: ignore[attr-defined]
    fill(page, "h2h-version-name", "curated-v1")
    page.click("#h2h-publish")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-publish-message", "Preview first")  # nothing is published unseen
    page.click("#h2h-publish-preview")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-publish-message", "2 scenario(s) would be published: 2 by a curator.")
    save_screenshot(page, "curate-publish-preview")
    page.click("#h2h-publish")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-publish-message", "Published curated-v1: 2 scenarios")
    wait_for_text(page, "#h2h-versions", "accepted 2 (1 of them edited), rejected 1, pending")
    save_screenshot(page, "curate-version-published")
    [version] = read_store(findings, select(DatasetVersion))
    assert version.summary["accepted"] == ["dlg-1", "dlg-2"]  # type: ignore[attr-defined]
    assert version.summary["edited"] == ["dlg-1"] and version.summary["rejected"] == ["iti-1"]  # type: ignore[attr-defined]
    assert [record["reference"] for record in version.records][0] == "辛苦了，先好好休息，我在。"  # type: ignore[attr-defined]


def test_the_aggregation_tab_compares_the_llm_rater_with_the_people(findings: Studio, page: object) -> None:
    """dlg-1's four pairs: (LLM a, people a a b), (a, b b b), (tie, a b tie: split), (no winner, a a a).
    Compared 2, agreeing 1: 0.5; kappa (0.5 - 0.5) / (1 - 0.5) = 0; votes matching 2 + 0 + 1 of 9."""
    sign_in(page, findings, "curator-f")
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    page.get_by_role("tab", name="Aggregation").click()  # type: ignore[attr-defined]
    page.click("#h2h-aggregate-campaign input")  # type: ignore[attr-defined]
    page.get_by_role("option", name="pairs-f", exact=True).first.click()  # type: ignore[attr-defined]
    page.click("#h2h-rater-agreement")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-rater-note", "on pairs-f")
    [row] = rater_rows(page).values()
    assert {measure: row[measure] for measure in row if measure != "campaign"} == {
        "items_with_llm": "4",
        "llm_without_winner": "1",
        "humans_split": "1",
        "items_compared": "2",
        "agreement": "0.5",
        "cohen_kappa": "0",
        "human_votes": "9",
        "vote_agreement": "0.3333",
    }
    save_screenshot(page, "curate-rater-agreement")


def rater_rows(page: object) -> dict[str, dict[str, str]]:
    """The rater table as shown: one row per campaign, by campaign, its cells by header."""
    rows = page.evaluate(  # type: ignore[attr-defined]
        """() => [...document.querySelectorAll('#h2h-rater-table [role=row]')].map((row) =>
             [...row.querySelectorAll('[role=columnheader], [role=gridcell]')].map((c) => c.innerText.trim()))"""
    )
    header, *body = rows
    return {row[0]: dict(zip(header, row, strict=True)) for row in body}


def test_comparing_the_llm_rater_on_all_campaigns_answers_for_each_pairwise_campaign(
    findings: Studio, page: object
) -> None:
    """ "all campaigns" (the picker's first choice) compares on every pairwise campaign and says so; a campaign that
    is not pairwise gets a sentence saying why there is nothing to compare — never a bare "Error"."""
    sign_in(page, findings, "curator-f")
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    page.get_by_role("tab", name="Aggregation").click()  # type: ignore[attr-defined]
    assert page.input_value("#h2h-aggregate-campaign input") == "all campaigns"  # type: ignore[attr-defined]
    page.click("#h2h-rater-agreement")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-rater-note", "pairwise campaign")
    note = page.inner_text("#h2h-rater-note")  # type: ignore[attr-defined]
    assert "every pairwise campaign (1): pairs-f" in note and "majority" in note
    rows = rater_rows(page)
    assert list(rows) == ["pairs-f"] and rows["pairs-f"]["items_compared"] == "2"
    assert rows["pairs-f"]["agreement"] == "0.5" and rows["pairs-f"]["cohen_kappa"] == "0"
    aggregation = page.inner_text("#h2h-curate-aggregation")  # type: ignore[attr-defined]
    assert "Error" not in aggregation
    save_screenshot(page, "curate-rater-all-campaigns")

    page.click("#h2h-aggregate-campaign input")  # type: ignore[attr-defined]
    page.get_by_role("option", name="test-crowd_vote", exact=True).first.click()  # type: ignore[attr-defined]
    page.click("#h2h-rater-agreement")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-rater-note", "not a pairwise campaign")
    assert "Error" not in page.inner_text("#h2h-curate-aggregation")  # type: ignore[attr-defined]
    assert rater_rows_or_none(page) is None
    save_screenshot(page, "curate-rater-not-pairwise")


def rater_rows_or_none(page: object) -> dict[str, dict[str, str]] | None:
    """The rater table's rows, or None when it shows none."""
    count = page.locator("#h2h-rater-table [role=gridcell]").count()  # type: ignore[attr-defined]
    texts = page.locator("#h2h-rater-table [role=gridcell]").all_inner_texts()  # type: ignore[attr-defined]
    return rater_rows(page) if count and any(text.strip() for text in texts) else None
