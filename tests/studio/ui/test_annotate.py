"""The annotate page without a browser, over a real SQLite store: its handlers called the way Gradio calls them.

The tab is built inside ``gr.Blocks`` exactly as the studio builds it, with the caller's context opened from a
session token; each handler's output list is what the page receives. Covered: who may open what, escaping, one
answer per submission, skip, forms per schema version — and every submit and skip naming the item and lease it was
rendered for (issue 9 item 1): a submit for a skipped item stores nothing and moves on, a submit sent twice from one
render stores one answer, a forged or stranger's lease is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from studio.db import create_db_engine, read_session, write_session
from studio.errors import NotAuthenticated, PermissionDenied
from studio.models import Answer, Campaign, Item, Lease, User
from studio.services.auth import login
from studio.services.campaigns import create_campaign, schema_snapshots
from studio.ui.annotate import NO_FORM_YET, AnnotateTab, panel_of
from studio.ui.app import form_schemas
from studio.ui.render import render_message
from studio.ui.shown import ShownItem, form_key
from studio.usecases import annotate
from studio.usecases.context import RequestContext
from studio.workflows import WorkflowSchema, load_schemas
from tests.browser.store_fixture import HOSTILE_TEXT, PASSWORD, build_store

VOTE = {"verdict": "discard", "subtask_label": "dialogue_base"}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    store = build_store(Path(tmp_path_factory.mktemp("annotate-store")), annotators=6, experts=1)
    built = create_db_engine(store.database_url)
    yield built
    built.dispose()


def token_for(engine: Engine, username: str) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=PASSWORD)


def built_tab(engine: Engine, schemas: dict[str, WorkflowSchema] | None = None) -> AnnotateTab:
    """The Annotate tab as the studio builds it; a handler's ``request`` is the caller's session token here."""
    import gradio as gr

    with read_session(engine) as session:
        forms = form_schemas(schema_snapshots(session)) if schemas is None else schemas
    tab = AnnotateTab(lambda token: RequestContext(engine, token), forms)
    with gr.Blocks():
        tab.build()
    return tab


@pytest.fixture(scope="module")
def tab(engine: Engine) -> AnnotateTab:
    return built_tab(engine)


def choose(tab: AnnotateTab, token: str | None, campaign: str | None) -> list[Any]:
    return tab._choose()(campaign, token)


def form_of(tab: AnnotateTab, workflow: str) -> tuple[WorkflowSchema, list[Any], str]:
    key = form_key(load_schemas()[workflow])
    return tab.schemas[key], tab.fields[key], key


def submit(
    tab: AnnotateTab, token: str, shown: str, answers: dict[str, Any], workflow: str = "crowd_vote"
) -> list[Any]:
    """Press Submit on the page showing ``shown`` (the hidden field's value) with ``answers`` in the form: the panel's
    and the form's values, then the "go back" list (read anew after a revision, else left as it is)."""
    schema, fields, _key = form_of(tab, workflow)
    data = {tab.shown: shown} | {field: answers.get(q.id) for field, q in zip(fields, schema.questions, strict=True)}
    return tab._submit_handler(tab.parts[form_key(schema)])(data, token)


def skip(tab: AnnotateTab, token: str, shown: str, workflow: str = "crowd_vote") -> list[Any]:
    _schema, _fields, key = form_of(tab, workflow)
    return tab._skip_handler(tab.parts[key])(shown, token)


def visible_forms(tab: AnnotateTab, values: list[Any]) -> list[str]:
    """The keys of the forms a handler's output shows (the form columns follow the panel's seven outputs)."""
    columns = values[7 : 7 + len(tab.forms)]
    return [key for key, column in zip(tab.forms, columns, strict=True) if column.visible]


def answers_of(engine: Engine, username: str) -> list[tuple[int, dict]]:
    with read_session(engine) as session:
        rows = session.exec(select(Answer).join(User, User.id == Answer.user_id).where(User.username == username))
        return [(row.item_id, dict(row.values)) for row in rows.all()]


def shown_item(values: list[Any]) -> ShownItem:
    shown = ShownItem.from_page(values[0])
    assert shown is not None, values[4]
    return shown


def test_a_missing_or_unknown_token_is_not_authenticated(engine: Engine, tab: AnnotateTab) -> None:
    for token in (None, "", "forged"):
        with pytest.raises(NotAuthenticated), RequestContext(engine, token).reading():
            pass
        values = choose(tab, token, "test-crowd_vote")
        # Nothing is shown or changed but the message line, which says so (issue 16 item 4: a sign-in that ended).
        assert values[0] == {"__type__": "update"} and "h2h-error" in values[4]
        assert "You were signed out — " in values[4] and 'href="/login"' in values[4]


def test_campaign_choices_follow_the_role(engine: Engine) -> None:
    def names(username: str) -> list[str]:
        with RequestContext(engine, token_for(engine, username)).reading() as (session, caller):
            return [campaign.name for campaign in annotate.visible_campaigns(session, caller=caller)]

    assert names("annotator01") == ["test-crowd_vote", "test-sap_safety"]
    assert names("expert01") == ["test-adjudication", "test-sap_safety"]


def test_an_annotator_cannot_open_an_expert_campaign(engine: Engine, tab: AnnotateTab) -> None:
    token = token_for(engine, "annotator01")
    with (
        pytest.raises(PermissionDenied, match="not open to role 'annotator'"),
        RequestContext(engine, token).writing() as (session, caller),
    ):
        annotate.offer_next(session, caller=caller, campaign="test-adjudication", lease_seconds=600)
    values = choose(tab, token, "test-adjudication")
    assert values[0] == "" and "not open to role &#x27;annotator&#x27;" in values[4]


def test_the_shown_item_is_rendered_escaped_and_hides_the_model(engine: Engine, tab: AnnotateTab) -> None:
    values = choose(tab, token_for(engine, "annotator02"), "test-sap_safety")
    shown, chat = shown_item(values), values[1]
    assert shown.campaign == "test-sap_safety" and shown.lease_id and shown.submission_id
    assert "<script>" not in chat and "<img" not in chat and "&lt;script&gt;" in chat
    assert "demo-alpha" not in chat and "with_sap" not in chat
    assert HOSTILE_TEXT not in chat  # only its escaped form is there
    assert "demo-alpha" not in values[0] and "with_sap" not in values[0]  # nor in the hidden field
    visible = visible_forms(tab, values)
    assert visible == [form_key(load_schemas()["sap_safety"])]


def test_a_submit_sent_twice_from_one_render_stores_one_answer_and_moves_on(engine: Engine, tab: AnnotateTab) -> None:
    token = token_for(engine, "annotator03")
    page = choose(tab, token, "test-crowd_vote")
    after = submit(tab, token, page[0], VOTE)
    replayed = submit(tab, token, page[0], VOTE)  # the same event again: a double press, a replayed request
    assert answers_of(engine, "annotator03") == [(shown_item(page).item_id, VOTE)]
    assert shown_item(after).item_id != shown_item(page).item_id
    assert "You answered <b>1</b> item(s)." in after[3] and after[4].startswith(
        '<div class="h2h-message h2h-info">Saved.'
    )
    assert "You answered <b>1</b> item(s)." in replayed[3]
    assert shown_item(replayed).item_id == shown_item(after).item_id  # the next item, not a third one


def test_skip_puts_the_item_last_for_this_person(engine: Engine, tab: AnnotateTab) -> None:
    token = token_for(engine, "annotator01")
    first = choose(tab, token, "test-crowd_vote")
    second = skip(tab, token, first[0])
    assert shown_item(second).item_id != shown_item(first).item_id
    assert second[4].startswith('<div class="h2h-message h2h-info">Skipped.')
    assert answers_of(engine, "annotator01") == []


def test_a_submit_for_the_item_skipped_before_it_arrived_stores_nothing(engine: Engine, tab: AnnotateTab) -> None:
    """S then Enter: the skip is handled first and the server moves on; the submit still names the skipped item,
    is refused, and the page shows the next item. Nothing is stored on either item."""
    token = token_for(engine, "annotator04")
    page = choose(tab, token, "test-crowd_vote")
    moved_on = skip(tab, token, page[0])
    refused = submit(tab, token, page[0], VOTE)  # the answers the rater chose for the item they saw
    assert answers_of(engine, "annotator04") == []
    assert "Not saved" in refused[4] and "skipped" in refused[4] and "h2h-error" in refused[4]
    assert shown_item(refused).item_id == shown_item(moved_on).item_id  # the page is usable: the next item
    answered = submit(tab, token, refused[0], VOTE)
    assert answers_of(engine, "annotator04") == [(shown_item(moved_on).item_id, VOTE)]
    assert "Saved." in answered[4]


def test_a_forged_or_foreign_shown_item_is_refused_and_stores_nothing(engine: Engine, tab: AnnotateTab) -> None:
    owner, other = token_for(engine, "annotator05"), token_for(engine, "annotator06")
    theirs = shown_item(choose(tab, owner, "test-crowd_vote"))
    foreign = submit(tab, other, theirs.to_page(), VOTE)
    assert "someone else" in foreign[4]
    with read_session(engine) as session:
        expert_item = session.exec(
            select(Item.id).join(Campaign, Campaign.id == Item.campaign_id).where(Campaign.name == "test-adjudication")
        ).first()
    forged = theirs.model_copy(update={"campaign": "test-adjudication", "item_id": expert_item}).to_page()
    assert "not open to role &#x27;annotator&#x27;" in submit(tab, other, forged, VOTE)[4]
    assert "did not say which item" in submit(tab, other, '{"item_id": "x"}', VOTE)[4]
    for huge in (2**70, 2**31, 0):  # ids the store cannot compare with its own: refused in words, not a driver crash
        crafted = json.dumps(theirs.model_dump() | {"item_id": huge})
        assert "did not say which item" in submit(tab, owner, crafted, VOTE)[4]
    assert "Nothing to submit." in submit(tab, other, "", VOTE)[4]
    assert answers_of(engine, "annotator05") == answers_of(engine, "annotator06") == []
    with read_session(engine) as session:  # the owner's lease is untouched: still open, still theirs
        lease = session.get(Lease, theirs.lease_id)
        assert lease is not None and lease.released_at is None and lease.item_id == theirs.item_id


def test_without_a_campaign_there_is_no_item_and_no_form(engine: Engine, tab: AnnotateTab) -> None:
    panel = panel_of(None, None)
    assert panel.shown is None and panel.form_key is None and "Choose a campaign" in panel.message_html
    values = choose(tab, token_for(engine, "annotator01"), None)
    assert values[0] == "" and "Choose a campaign" in values[4]


def test_campaigns_of_two_versions_of_one_schema_get_a_form_each(tmp_path: Path) -> None:
    """A YAML file edited between two campaigns: each campaign shows the form of the version it was created with."""
    store = build_store(tmp_path, annotators=1, experts=0)
    engine = create_db_engine(store.database_url)
    try:
        bundled = load_schemas()["crowd_vote"]
        edited = bundled.model_copy(update={"title": "Crowd vote, second version"})
        with write_session(engine) as session:
            create_campaign(session, name="vote-v2", schema=edited, people_per_item=3)
        with read_session(engine) as session:
            forms = form_schemas(schema_snapshots(session))
        assert forms[form_key(bundled)] == bundled and forms[form_key(edited)] == edited
        assert form_key(bundled) != form_key(edited) and form_key(bundled).startswith("crowd_vote@")
        tab = built_tab(engine, forms)
        token = token_for(engine, "annotator01")
        for campaign, schema in (("test-crowd_vote", bundled), ("vote-v2", edited)):
            values = choose(tab, token, campaign)
            assert visible_forms(tab, values) == [form_key(schema)]
    finally:
        engine.dispose()


def test_a_campaign_without_a_built_form_says_so_instead_of_showing_no_questions(engine: Engine) -> None:
    token = token_for(engine, "annotator03")
    with RequestContext(engine, token).writing() as (session, caller):
        offer = annotate.offer_next(session, caller=caller, campaign="test-crowd_vote", lease_seconds=600)
    panel = panel_of("test-crowd_vote", offer)
    values = built_tab(engine, schemas={}).panel_values(panel)  # a studio started before the campaign existed
    assert values[4] == render_message(NO_FORM_YET, kind="error") and values[0] == panel.shown.to_page()


def test_the_shown_item_round_trips_and_refuses_garbage() -> None:
    shown = ShownItem(campaign="c", item_id=3, lease_id="l", submission_id="s", shown_at=1.0)
    assert ShownItem.from_page(shown.to_page()) == shown
    assert ShownItem.from_page("") is None and ShownItem.from_page(None) is None
    for garbage in ("{", json.dumps({"campaign": "c"}), json.dumps(shown.model_dump() | {"lease_id": ""})):
        with pytest.raises(Exception, match="did not say which item"):
            ShownItem.from_page(garbage)


def test_a_bad_value_is_refused_on_its_field_and_nothing_is_stored(engine: Engine, tab: AnnotateTab) -> None:
    """Issue 11 item 1 through the handler: an out-of-range number (or text crafted into a number field) comes back
    as words under that question, the item and the form kept, no answer stored, the value not echoed."""
    token = token_for(engine, "expert01")
    page = choose(tab, token, "test-adjudication")
    parts = tab.parts[form_key(load_schemas()["adjudication"])]
    for value, words in ((7.0, "7 is not allowed here."), ("not-a-number", "Enter a number.")):
        data = {tab.shown: page[0], parts.fields[0]: value, parts.fields[1]: ""}
        *refused, listed = tab._submit_handler(parts)(data, token)
        assert isinstance(listed, dict) and listed.get("__type__") == "update"  # gr.skip(): the list as it was
        errors = refused[-len(parts.errors) :]
        assert words in errors[0].value and "This question is required" in errors[1].value
        assert errors[0].visible and "not-a-number" not in str(refused)
        assert refused[4].startswith('<div class="h2h-message h2h-error">Not saved: 2 questions')
    assert answers_of(engine, "expert01") == []


def test_an_answer_opened_from_go_back_is_revised_not_answered_again(engine: Engine, tab: AnnotateTab) -> None:
    token = token_for(engine, "annotator06")
    page = choose(tab, token, "test-crowd_vote")
    answered = shown_item(page).item_id
    submit(tab, token, page[0], VOTE)
    listed = tab.revise.list_handler()("test-crowd_vote", token)
    assert [value for _label, value in listed[0].choices] == [str(answered)]
    opened = tab.revise.open_handler()("test-crowd_vote", str(answered), token)
    shown = shown_item(opened)
    assert shown.revising and shown.item_id == answered and shown.lease_id is None
    assert "Revising your answer to item" in opened[4]
    parts = tab.parts[form_key(load_schemas()["crowd_vote"])]
    before = list(tab.parts)[: list(tab.parts).index(parts.key)]  # the forms whose outputs come first
    start = len(tab.panel_outputs()) + sum(len(tab.parts[key].outputs()) for key in before)
    assert opened[start : start + 2] == ["discard", "dialogue_base"]  # the answer, back in its form
    revised = submit(tab, token, opened[0], {"verdict": "keep", "subtask_label": "dialogue_base"})
    assert "Saved your revised answer." in revised[4]
    [(label, value)] = revised[-1].choices  # the "go back" list, read anew: the revised answer in it
    assert value == str(answered) and "revised 1×" in label and label.endswith("Keep · Dialogue — everyday chat")
    assert answers_of(engine, "annotator06") == [(answered, {"verdict": "keep", "subtask_label": "dialogue_base"})]
    # Issue 16 item 3: submitting it again unchanged stores nothing and says so (it was "Saved your revised answer."
    # and revised 2×).
    reopened = tab.revise.open_handler()("test-crowd_vote", str(answered), token)
    same = submit(tab, token, reopened[0], {"verdict": "keep", "subtask_label": "dialogue_base"})
    assert "Nothing changed: your answer is as it was." in same[4] and "Saved" not in same[4]
    with read_session(engine) as session:
        mine = select(Answer.revision).join(User, User.id == Answer.user_id)
        revisions = session.exec(mine.where(User.username == "annotator06", Answer.item_id == answered)).all()
    assert list(revisions) == [1]
