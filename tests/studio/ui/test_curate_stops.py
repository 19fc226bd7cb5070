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
from studio.services.auth import hash_password, login
from studio.usecases import curate
from studio.usecases.context import RequestContext
from tests.studio.helpers import PASSWORD, stopping_campaign


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
    stopping_campaign(corpus, hash_password("pw"), stopping={"rule": "curtail"})
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

    stopping_campaign(corpus, hash_password("pw"), stopping=None)
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
