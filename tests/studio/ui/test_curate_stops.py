"""The Curate page's Stops tab without a browser, on the real store (SQLite and PostgreSQL): its handler checks the
caller through the use case and returns the rule in words (escaped) and one plain-text row per stop."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from studio.db import write_session
from studio.errors import InvalidInput, PermissionDenied
from studio.models import UserPublic
from studio.services.answers import submit_answer
from studio.services.auth import hash_password, login
from studio.services.campaigns import TargetSelection, create_campaign
from studio.services.queue import next_item
from studio.usecases import curate
from studio.usecases.context import RequestContext
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.helpers import PASSWORD, add_people

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def stopped_campaign(engine: Engine, *, stopping: dict[str, str] | None) -> None:
    """Campaign ``stop`` (crowd_vote, quota 5, ``stopping`` when given): three people vote alike on every item."""
    schema = load_schemas()["crowd_vote"]
    if stopping is not None:
        schema = WorkflowSchema.model_validate({**schema.model_dump(mode="json"), "stopping": stopping})
    with write_session(engine) as session:
        selection = TargetSelection(subtasks=["dialogue_base", "itinerary_basic"])
        create_campaign(session, name="stop", schema=schema, people_per_item=5, selection=selection)
    for person in add_people(engine, hash_password("pw"), ["a", "b", "c"], "annotator"):
        while True:
            with write_session(engine) as session:
                view = next_item(session, campaign="stop", user=person)
                if view is None:
                    break
                submit_answer(
                    session,
                    campaign="stop",
                    user=person,
                    item_id=view.item_id,
                    lease_id=view.lease_id,
                    submission_id=f"{person.id}-{view.item_id}",
                    answers=VOTE,
                )


def token(engine: Engine, username: str) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=PASSWORD)


def show(engine: Engine, session_token: str, campaign: str | None) -> list[Any]:
    import gradio as gr

    from studio.ui.curate_stops import StopsPanel

    panel = StopsPanel(lambda request: RequestContext(engine, request))
    with gr.Blocks():
        panel.build()
    return list(panel.on_show()(campaign, session_token))


def test_the_stops_tab_lists_each_stop_and_states_the_rule(corpus: Engine, users: dict[str, UserPublic]) -> None:
    stopped_campaign(corpus, stopping={"rule": "curtail"})
    rule, frame = show(corpus, token(corpus, "curator"), "stop")
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["item", "scenario", "votes_at_stop", "rule", "probability", "stopped_at"]
    assert len(frame) == 3 and set(frame["rule"]) == {"curtail"} and set(frame["votes_at_stop"]) == {3}
    assert set(frame["scenario"]) >= {"dlg-1", "iti-1"} and all(len(time) == 25 for time in frame["stopped_at"])
    assert rule.startswith('<div class="h2h-message h2h-info">stop: 3 item(s) stopped early. Stopping (curtail)')
    assert "<script" not in rule


def test_the_stops_tab_checks_the_caller_and_says_when_nothing_stops(
    corpus: Engine, users: dict[str, UserPublic]
) -> None:
    import gradio as gr

    stopped_campaign(corpus, stopping=None)
    rule, frame = show(corpus, token(corpus, "researcher"), "stop")  # researchers may read the Curate page
    assert frame.empty and "stops no item early" in rule
    with pytest.raises(gr.Error):
        show(corpus, token(corpus, "annotator"), "stop")
    context = RequestContext(corpus, token(corpus, "annotator"))
    with context.reading() as (session, caller), pytest.raises(PermissionDenied):
        curate.item_stops(session, caller=caller, campaign="stop")
    context = RequestContext(corpus, token(corpus, "curator"))
    with context.reading() as (session, caller), pytest.raises(InvalidInput):
        curate.item_stops(session, caller=caller, campaign="")
