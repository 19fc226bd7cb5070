"""studio.ui.flow without a browser: the annotate page's logic over a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from studio.db import create_db_engine, read_session, write_session
from studio.models import Answer, User
from studio.schemas import load_schemas
from studio.services.auth import login
from studio.services.campaigns import create_campaign
from studio.services.errors import NotAuthenticated, PermissionDenied
from studio.ui.app import form_schemas
from studio.ui.flow import campaign_choices, current_user, form_key, show_next, skip, submit
from tests.browser.store_fixture import HOSTILE_TEXT, PASSWORD, build_store


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    store = build_store(Path(tmp_path_factory.mktemp("flow-store")), annotators=3, experts=1)
    built = create_db_engine(store.database_url)
    yield built
    built.dispose()


def token_for(engine: Engine, username: str) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=PASSWORD)


def answers_of(engine: Engine, username: str) -> list[dict]:
    with read_session(engine) as session:
        rows = session.exec(select(Answer).join(User, User.id == Answer.user_id).where(User.username == username))
        return [dict(row.values) for row in rows.all()]


def test_a_missing_or_unknown_token_is_not_authenticated(engine: Engine) -> None:
    for token in (None, "", "forged"):
        with pytest.raises(NotAuthenticated):
            current_user(engine, token)
        with pytest.raises(NotAuthenticated):
            show_next(engine, token, "test-crowd_vote")


def test_campaign_choices_follow_the_role(engine: Engine) -> None:
    assert [name for _label, name in campaign_choices(engine, token_for(engine, "annotator01"))] == [
        "test-crowd_vote",
        "test-sap_safety",
    ]
    assert [name for _label, name in campaign_choices(engine, token_for(engine, "expert01"))] == [
        "test-adjudication",
        "test-sap_safety",
    ]


def test_an_annotator_cannot_open_an_expert_campaign(engine: Engine) -> None:
    with pytest.raises(PermissionDenied, match="not open to role 'annotator'"):
        show_next(engine, token_for(engine, "annotator01"), "test-adjudication")


def test_show_next_renders_the_item_escaped_and_hides_the_model(engine: Engine) -> None:
    panel = show_next(engine, token_for(engine, "annotator02"), "test-sap_safety")
    assert panel.state is not None and panel.form_key == form_key(load_schemas()["sap_safety"])
    assert "<script>" not in panel.chat_html and "<img" not in panel.chat_html
    assert "&lt;script&gt;" in panel.chat_html
    assert "demo-alpha" not in panel.chat_html and "with_sap" not in panel.chat_html
    assert HOSTILE_TEXT not in panel.chat_html  # only its escaped form is there


def test_a_retried_submit_stores_one_answer_and_moves_on(engine: Engine) -> None:
    token = token_for(engine, "annotator03")
    panel = show_next(engine, token, "test-crowd_vote")
    answers = {"verdict": "discard", "subtask_label": "dialogue_base"}
    after = submit(engine, token, panel.state, answers)
    retried = submit(engine, token, panel.state, answers)
    assert answers_of(engine, "annotator03") == [answers]
    assert after.state is not None and after.state.item_id != panel.state.item_id
    assert "You answered <b>1</b> item(s)." in after.progress_html
    assert "You answered <b>1</b> item(s)." in retried.progress_html


def test_skip_puts_the_item_last_for_this_person(engine: Engine) -> None:
    token = token_for(engine, "annotator01")
    first = show_next(engine, token, "test-crowd_vote")
    second = skip(engine, token, first.state)
    assert second.state is not None and second.state.item_id != first.state.item_id
    assert second.message_html.startswith('<div class="h2h-message h2h-info">Skipped.')
    assert answers_of(engine, "annotator01") == []


def test_without_a_campaign_there_is_no_item_and_no_form(engine: Engine) -> None:
    panel = show_next(engine, token_for(engine, "annotator01"), None)
    assert panel.state is None and panel.form_key is None
    assert "Choose a campaign" in panel.message_html


def test_campaigns_of_two_versions_of_one_schema_get_a_form_each(tmp_path: Path) -> None:
    """A YAML file edited between two campaigns: each campaign shows the form of the version it was created with."""
    store = build_store(tmp_path, annotators=1, experts=0)
    engine = create_db_engine(store.database_url)
    try:
        bundled = load_schemas()["crowd_vote"]
        edited = bundled.model_copy(update={"title": "Crowd vote, second version"})
        with write_session(engine) as session:
            create_campaign(session, name="vote-v2", schema=edited, people_per_item=3)
        forms = form_schemas(engine)
        assert forms[form_key(bundled)] == bundled and forms[form_key(edited)] == edited
        assert form_key(bundled) != form_key(edited) and form_key(bundled).startswith("crowd_vote@")
        token = token_for(engine, "annotator01")
        assert show_next(engine, token, "test-crowd_vote").form_key == form_key(bundled)
        assert show_next(engine, token, "vote-v2").form_key == form_key(edited)
    finally:
        engine.dispose()


def test_a_campaign_without_a_built_form_says_so_instead_of_showing_no_questions(engine: Engine) -> None:
    from studio.ui.annotate import NO_FORM_YET, AnnotateTab
    from studio.ui.render import render_message

    panel = show_next(engine, token_for(engine, "annotator03"), "test-crowd_vote")
    values = AnnotateTab(engine, schemas={})._panel_values(panel)  # a studio started before the campaign existed
    assert values[4] == render_message(NO_FORM_YET, kind="error") and values[0] == panel.state
