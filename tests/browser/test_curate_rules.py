"""Issue 16 items 6 and 7 on the Curate page, in Chromium: where a curator decides, the page states the rule that
combined the crowd's vote and the experts' review ("crowd: revise 3/3 · experts: … → waits for a curator
(agree_or_curator: …)"), and the crowd's subtask flagged by the classification rule is applied with one action —
what is stored is that subtask as the curator's edit, the status left as the rule set it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from studio.db import create_db_engine, write_session
from studio.models.curation import ScenarioStatus
from studio.workflows import WorkflowSchema, load_schemas
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import Studio, sign_in
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_curate_decisions import open_by_id
from tests.browser.test_curate_research_ui import fill, read_store, wait_for_text
from tests.serving import serve_in_thread
from tests.studio.helpers import answer_all

pytestmark = pytest.mark.browser
CURATOR = "curator-rules"
PASSED = {"accuracy": "pass", "consistency": "pass", "domain_compliance": "pass"}


def _flagging_crowd_vote() -> WorkflowSchema:
    data = load_schemas()["crowd_vote"].model_dump(mode="json")
    data["aggregation"]["classification"] = {"question": "subtask_label", "action": "flag"}
    return WorkflowSchema.model_validate(data)


@pytest.fixture(scope="module")
def ruled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """The browser store after three annotators voted "revise" on every dialogue scenario (two of them labelling it
    dialogue_emotion, a flagging classification rule) and three experts passed every criterion; both aggregated."""
    from studio.models import UserPublic
    from studio.services.aggregation import aggregate_campaign
    from studio.services.auth import create_user
    from studio.services.campaigns import TargetSelection, create_campaign
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("rules")))
    engine = create_db_engine(store.database_url)
    dialogue = TargetSelection(subtasks=["dialogue_base"])
    with write_session(engine) as session:
        create_user(session, username=CURATOR, password=PASSWORD, role="curator")
        crowd = [create_user(session, username=f"voter{n}", password=PASSWORD, role="annotator") for n in range(3)]
        experts = [create_user(session, username=f"judge{n}", password=PASSWORD, role="expert") for n in range(3)]
        create_campaign(session, name="crowd", schema=_flagging_crowd_vote(), people_per_item=3, selection=dialogue)
        create_campaign(session, name="experts", schema=load_schemas()["expert_review"], selection=dialogue)
    crowd_people = [UserPublic.model_validate(person) for person in crowd]

    def vote(_item: Any, _response: Any, person: Any) -> dict[str, str]:
        label = "dialogue_emotion" if crowd_people.index(person) < 2 else "dialogue_base"
        return {"verdict": "revise", "subtask_label": label}

    answer_all(engine, "crowd", crowd_people, vote)
    answer_all(engine, "experts", [UserPublic.model_validate(p) for p in experts], lambda _i, _r, _p: PASSED)
    with write_session(engine) as session:
        aggregate_campaign(session, campaign="crowd")
        aggregate_campaign(session, campaign="experts")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


def test_the_curate_page_states_the_rule_and_applies_the_crowds_subtask_in_one_action(ruled: Studio, page: Any) -> None:
    sign_in(page, ruled, CURATOR)
    page.get_by_role("tab", name="Curate").click()
    open_by_id(page, "b-dialogue-2", "Work was long today (2).")
    status = "#h2h-detail-status, .h2h-curate-status"
    wait_for_text(page, status, "Status: needs_curator")
    wait_for_text(page, status, "By the rules: crowd: revise 3/3 · experts: accuracy pass, consistency pass,")
    wait_for_text(page, status, "→ waits for a curator (agree_or_curator:")
    wait_for_text(page, status, "Crowd's subtask: dialogue_emotion (2 of 3 votes), ingested as dialogue_base")
    save_screenshot(page, "curate-rule-stated")
    page.locator("#h2h-action").get_by_text("Apply the crowd's subtask (the status stays)", exact=True).click()
    fill(page, "h2h-reason", "Two of three voters; it is emotional support.")
    page.click("#h2h-decide")
    wait_for_text(page, "#h2h-decision-message", "b-dialogue-2: relabel saved (status needs_curator)")
    [row] = read_store(ruled, select(ScenarioStatus).where(ScenarioStatus.scenario_id == "b-dialogue-2"))
    assert (row.status, row.edits, row.decided_by) == ("needs_curator", {"subtask": "dialogue_emotion"}, "")
    save_screenshot(page, "curate-crowd-subtask-applied")


def test_running_aggregation_states_each_campaigns_rule_beside_what_it_changed(ruled: Studio, page: Any) -> None:
    sign_in(page, ruled, CURATOR)
    page.get_by_role("tab", name="Curate").click()
    page.get_by_role("tab", name="Aggregation").click()
    page.click("#h2h-aggregate")
    rules = "#h2h-aggregation-rules"
    wait_for_text(page, rules, "An item is decided once it has its campaign's quota of answers (complete_at).")
    wait_for_text(
        page, rules, "crowd (crowd_vote): Crowd decision: the answer with the most votes, even under half of them"
    )
    wait_for_text(page, rules, "it is flagged for a curator, who applies it with one action")
    wait_for_text(page, rules, "experts (expert_review): Expert review: a criterion passes when more experts pass")
    wait_for_text(page, rules, "With a crowd vote (agree_or_curator): where the crowd decided the scenario")
    wait_for_text(page, "#h2h-aggregation", "below_quota")
    save_screenshot(page, "curate-aggregation-rules")
