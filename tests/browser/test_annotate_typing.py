"""Issue 16 item 2: keys typed while a follow-up question appears are not lost, in Chromium.

A follow-up question (``when``) used to appear through a server round trip (~0.4 s): in the SAP form, "Yes" and then
two violation-kind digits ~80 ms apart were stored with fewer kinds than were typed (30 of 77 answers), or refused.
Here a person types whole answers — a rating digit, the violation (1 no, 2 yes) and for "yes" one to three kind
digits, then Enter — at 30–80 ms per key (random, seeded), for 100 items, and every stored answer equals what was
typed, item by item.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.jsonl import write_records
from pipeline.records import Response, Scenario
from studio.workflows import MultipleChoice, load_schemas
from tests.browser.annotate_store import AnnotateStore
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, choose_campaign, sign_in
from tests.browser.store_fixture import PASSWORD
from tests.browser.test_annotate_page import stored

# Typing is timed (30-80 ms between keys): run alone, after the parallel pass (tests/run.sh), like the load tests.
pytestmark = [pytest.mark.browser, pytest.mark.serial]

ITEMS = 100
CAMPAIGN = "typing-safety"
TYPIST = "typist01"
KEY_GAP_MS = (30, 80)


@pytest.fixture(scope="module")
def typing_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """A studio whose SAP safety campaign has :data:`ITEMS` responses, and one annotator."""
    from studio.db import create_db_engine, upgrade_db, write_session
    from studio.services.auth import create_user
    from studio.services.campaigns import create_campaign
    from studio.services.ingest import ingest_run
    from studio.settings import get_settings
    from studio.web.app import create_app
    from studio.workflows import TargetFilter
    from tests.serving import serve_in_thread

    folder = Path(tmp_path_factory.mktemp("typing"))
    run = folder / "run"
    run.mkdir()
    scenarios = [
        Scenario(
            id=f"t-{number:03d}",
            subtask="dialogue_emotion",
            persona="Mia, a warm illustrator.",
            user_input=f"I can't sleep again, night {number}.",
            reference="I'm here with you. Are you safe right now?",
        )
        for number in range(ITEMS // 2)
    ]
    responses = [
        Response(
            scenario_id=s.id, model="m", variant=variant, text=f"Reply to {s.id}.", backend="x", prompt_version="x"
        )
        for s in scenarios
        for variant in ("with_sap", "without_sap")
    ]
    write_records(run / "scenarios.jsonl", scenarios)
    write_records(run / "responses.jsonl", responses)
    url = f"sqlite:///{folder / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    ingest_run(engine, run)
    safety = load_schemas()["sap_safety"].model_copy(update={"target_filter": TargetFilter()})
    with write_session(engine) as session:
        create_user(session, username=TYPIST, password=PASSWORD, role="annotator")
        create_campaign(session, name=CAMPAIGN, schema=safety, people_per_item=3, actor="t")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=url))) as base_url:
        yield Studio(base_url, AnnotateStore(url))  # type: ignore[arg-type]  # stored() reads its database_url


def an_answer(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """A random SAP safety answer and the keys that type it (about a third of them "no")."""
    kinds = load_schemas()["sap_safety"].questions_by_id["violation_kind"]
    assert isinstance(kinds, MultipleChoice)
    rating = rng.randint(1, 5)
    if rng.random() < 0.35:
        return {"safety": rating, "violation": "no"}, [str(rating), "1", "Enter"]
    ticked = sorted(rng.sample(range(1, len(kinds.options) + 1), rng.randint(1, 3)))
    values = [kinds.options[number - 1].value for number in ticked]
    answer = {"safety": rating, "violation": "yes", "violation_kind": values}
    return answer, [str(rating), "2", *map(str, ticked), "Enter"]


SHOWN_JS = "() => document.querySelector('#h2h-shown-item textarea, #h2h-shown-item input').value"
#: The page has moved on from ``before`` (the hidden field's value): the next item is shown with an empty form, or
#: nothing is left; or the submit was refused ("Not saved").
MOVED_ON_JS = """(before) => {
  const now = document.querySelector('#h2h-shown-item textarea, #h2h-shown-item input').value;
  const message = document.querySelector('#h2h-message').innerText;
  if (message.startsWith('Not saved')) return true;
  const empty = !document.querySelector('.h2h-form input:checked');
  return now !== before && empty && (message.startsWith('Saved.') || now === '');
}"""


def test_every_answer_typed_across_a_follow_up_question_is_stored_as_typed(typing_site: Studio, page: Any) -> None:
    rng = random.Random(16)
    sign_in(page, typing_site, TYPIST)
    choose_campaign(page, CAMPAIGN)
    typed: dict[int, dict[str, Any]] = {}
    for number in range(ITEMS):
        shown = page.evaluate(SHOWN_JS)
        item_id = json.loads(shown)["item_id"]
        answer, keys = an_answer(rng)
        for key in keys:  # the waits between keys are the typist's pace, not an assertion on time
            page.keyboard.press(key)
            page.wait_for_timeout(rng.randint(*KEY_GAP_MS))
        if number == 3:
            save_screenshot(page, "annotate-annotator-typed-across-follow-up")
        typed[item_id] = answer
        page.wait_for_function(MOVED_ON_JS, arg=shown, timeout=UI_WAIT_MS)
        assert not page.inner_text("#h2h-message").startswith("Not saved"), (number, answer, keys)
    assert page.evaluate(SHOWN_JS) == "" and "No more items" in page.inner_text("#h2h-message")
    save_screenshot(page, "annotate-annotator-typed-100-done")
    assert len(typed) == ITEMS and sum(1 for answer in typed.values() if answer["violation"] == "no") > 20
    kept = {answer.item_id: answer.values for answer in stored(typing_site, TYPIST, CAMPAIGN)}
    differing = {item: (typed[item], kept.get(item)) for item in typed if kept.get(item) != typed[item]}
    assert differing == {} and len(kept) == ITEMS
