"""Issue 21 on the Curate page, in Chromium: where the bundled crowd vote's reliability-weighted models (Dawid–Skene,
MACE) stand beside the majority, the opened scenario shows the majority, each model's decision and posterior, a
visible "models disagree" mark where they differ, and the rule in words; a scenario where they agree shows no mark.
Votes are untrusted text: a voter's hostile markup never becomes live HTML (the mark is the page's own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from studio.db import create_db_engine, write_session
from studio.models.curation import ScenarioStatus
from studio.results.decisions import crowd_side
from studio.workflows import load_schemas
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import Studio, sign_in
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_curate_decisions import open_by_id
from tests.browser.test_curate_research_ui import read_store, wait_for_text
from tests.serving import serve_in_thread
from tests.studio.helpers import answer_all

pytestmark = pytest.mark.browser
CURATOR = "curator-models"
#: Five voters per dialogue scenario: three careful ones and two who always say "discard". On b-dialogue-2 one
#: careful voter slips, so the majority ties (revise 2 · discard 2 · keep 1) and the models, which weigh the
#: always-"discard" voters down, name a label: they disagree with the majority there.
VOTES: dict[str, tuple[str, ...]] = {
    "b-dialogue-1": ("keep", "keep", "keep", "discard", "discard"),
    "b-dialogue-2": ("revise", "revise", "keep", "discard", "discard"),
    "b-dialogue-3": ("keep", "keep", "keep", "discard", "discard"),
    "b-dialogue-4": ("revise", "revise", "revise", "discard", "discard"),
}


@pytest.fixture(scope="module")
def modelled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """The browser store after five voters voted on the dialogue scenarios by :data:`VOTES` (bundled crowd vote:
    majority, also Dawid–Skene and MACE), aggregated."""
    from studio.models import UserPublic
    from studio.services.aggregation import aggregate_campaign
    from studio.services.auth import create_user
    from studio.services.campaigns import TargetSelection, create_campaign
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("models")))
    engine = create_db_engine(store.database_url)
    dialogue = TargetSelection(subtasks=["dialogue_base"])
    with write_session(engine) as session:
        create_user(session, username=CURATOR, password=PASSWORD, role="curator")
        crowd = [create_user(session, username=f"voter{n}", password=PASSWORD, role="annotator") for n in range(5)]
        create_campaign(
            session, name="crowd", schema=load_schemas()["crowd_vote"], people_per_item=5, selection=dialogue
        )
    people = [UserPublic.model_validate(person) for person in crowd]

    def vote(item: Any, _response: Any, person: Any) -> dict[str, str]:
        return {"verdict": VOTES[item.scenario_id][people.index(person)], "subtask_label": "dialogue_base"}

    answer_all(engine, "crowd", people, vote)
    with write_session(engine) as session:
        aggregate_campaign(session, campaign="crowd")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


def _stored_side(studio: Studio, scenario_id: str) -> Any:
    [row] = read_store(studio, select(ScenarioStatus).where(ScenarioStatus.scenario_id == scenario_id))
    return crowd_side(row.crowd)  # type: ignore[attr-defined]


def test_the_curate_page_shows_the_models_beside_the_majority_and_marks_their_disagreement(
    modelled: Studio, page: Any
) -> None:
    side = _stored_side(modelled, "b-dialogue-2")
    assert side.majority is None and side.models_disagree  # the store says so; the page must show it
    sign_in(page, modelled, CURATOR)
    page.get_by_role("tab", name="Curate").click()
    open_by_id(page, "b-dialogue-2", "Work was long today (2).")
    models = ".h2h-crowd-models"
    wait_for_text(page, models, "majority: a tie of 5 votes")
    for name, words in (("dawid_skene", "Dawid–Skene"), ("mace", "MACE")):
        model = side.models[name]
        wait_for_text(page, models, f"{words}: {model['decision']} (posterior {model['posterior']:.2f})")
    wait_for_text(page, models, "⚠ models disagree")
    assert page.locator(".h2h-crowd-models b.h2h-models-disagree").count() == 1
    wait_for_text(page, models, "Beside the majority (which stays the decision): Dawid–Skene")
    wait_for_text(page, "#h2h-detail-status", "models disagree")  # the rule's note says it too
    save_screenshot(page, "curate-crowd-models-disagree")

    agreed = _stored_side(modelled, "b-dialogue-1")
    assert not agreed.models_disagree
    open_by_id(page, "b-dialogue-1", "Work was long today (1).")
    wait_for_text(page, models, "majority: keep 3/5")
    wait_for_text(page, models, f"Dawid–Skene: keep (posterior {agreed.models['dawid_skene']['posterior']:.2f})")
    assert page.locator(".h2h-crowd-models b.h2h-models-disagree").count() == 0
    save_screenshot(page, "curate-crowd-models-agree")
