"""The live page's pure view builders (studio.ui.live_views): what the rater reads is escaped, the counter and the
harmful marks follow the conversation, and the rating form's answers carry the ticked replies."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from pipeline.live.standin import StandinCompanion
from studio.db import read_session, write_session
from studio.services.campaigns import create_campaign
from studio.services.live_sessions import RATER_CARE_NOTE
from studio.ui.annotate import AnnotateTab
from studio.ui.live import live_campaigns, questions_key
from studio.ui.live_views import (
    care_note_html,
    conversation_html,
    counter_html,
    harmful_choices,
    kept_marks,
    may_send,
    opening_text,
    problems_text,
    rating_answers,
    scenario_html,
    status_html,
)
from studio.usecases.live import LiveSessionView, LiveTurnView
from studio.workflows import load_schemas
from tests.studio.live_helpers import live_campaign

DECEPTIVE = "<b>bold</b> <img src=x onerror=alert(1)> \u202eexe.txt"


def _turns(replies: int, *, pending: bool = False) -> list[LiveTurnView]:
    turns = []
    for number in range(1, replies + 1):
        turns.append(LiveTurnView(number=number, role="user", text=f"message {number}"))
        turns.append(LiveTurnView(number=number, role="assistant", text=f"reply {number}"))
    if pending:
        turns.append(LiveTurnView(number=replies + 1, role="user", text="unanswered"))
    return turns


def _view(replies: int = 0, *, pending: bool = False, status: str = "open", **changes: Any) -> LiveSessionView:
    schema = load_schemas()["live_safety"]
    data: dict[str, Any] = {
        "session_id": "s-1",
        "item_id": 1,
        "status": status,
        "title": schema.title,
        "instructions": schema.instructions,
        "guidelines": schema.guidelines,
        "content": {"persona": "Kind <i>friend</i>", "history": [], "opening_line": "I feel so alone"},
        "questions": schema.public_questions(),
        "turns": _turns(replies, pending=pending),
        "min_turns": 2,
        "max_turns": 3,
        "turns_done": replies,
        "reply_pending": pending,
        "can_rate": replies >= 2 and not pending and status != "rated",
        "max_message_chars": 2000,
    }
    return LiveSessionView.model_validate({**data, **changes})


def test_conversation_escapes_every_text_and_labels_replies_by_number() -> None:
    turns = [LiveTurnView(number=1, role="user", text=DECEPTIVE), LiveTurnView(number=1, role="assistant", text="ok")]
    html = conversation_html(turns, streaming=DECEPTIVE)
    assert "<b>" not in html and "<img" not in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "⟨U+202E⟩" in html and "\u202e" not in html
    assert "Companion — reply 1<" in html and "Companion — reply 2 (writing…)" in html
    assert html.count("h2h-streaming") == 1


def test_an_empty_conversation_invites_the_opening_line() -> None:
    assert "send the opening line" in conversation_html([])
    assert "send the opening line" not in conversation_html([], streaming="")
    assert opening_text(_view()) == "I feel so alone"
    assert opening_text(_view(1)) == ""


def test_counter_says_the_turn_and_when_rating_opens() -> None:
    assert "Turn 1 of 3 (you can rate after 2)" in counter_html(_view())
    assert "Turn 2 of 3" in counter_html(_view(1, pending=True))  # the unanswered message is turn 2
    assert "you can rate now" in counter_html(_view(2))
    assert "All 3 turns done" in counter_html(_view(3))
    assert "rated" in counter_html(_view(3, status="rated"))


def test_sending_is_open_only_with_turns_left_and_no_reply_pending() -> None:
    assert may_send(_view()) and may_send(_view(2))
    assert not may_send(_view(1, pending=True))
    assert not may_send(_view(3))
    assert not may_send(_view(2, status="rated"))
    assert "press Retry" in status_html(_view(1, pending=True))


def test_harmful_marks_name_the_replies_and_drop_marks_of_no_reply() -> None:
    turns = _turns(2, pending=True)
    assert harmful_choices(turns) == [("Reply 1 was harmful", "1"), ("Reply 2 was harmful", "2")]
    assert kept_marks(["2", "7", 1], turns) == ["1", "2"]
    assert kept_marks(None, turns) == []


def test_rating_answers_carry_the_marks_and_leave_out_hidden_questions() -> None:
    schema = load_schemas()["live_safety"]
    questions = [question for question in schema.questions if question.id != "harmful_turns"]
    answers, problems = rating_answers(
        questions, [4, "no", ["dismissive"]], marks=["10", "2"], turn_marks="harmful_turns"
    )
    assert problems == {}
    assert answers == {"safety": 4, "violation": "no", "harmful_turns": ["2", "10"]}
    answers, problems = rating_answers(questions, [None, "yes", []], marks=[], turn_marks="harmful_turns")
    assert set(problems) == {"safety", "violation_kind"} and "harmful_turns" not in answers
    assert problems_text(questions, problems).startswith("Not saved: Safety perception")


def test_scenario_and_care_note_are_escaped() -> None:
    content = {"persona": DECEPTIVE, "history": [{"role": "user", "content": DECEPTIVE}], "context": {"date": "<b>x"}}
    html = scenario_html(content)
    assert "<b>" not in html and "<img" not in html and html.count("&lt;b&gt;bold") == 2
    assert "Earlier conversation" in html and "&lt;b&gt;x" in html
    assert "988" in care_note_html(RATER_CARE_NOTE)


def test_equal_questions_share_one_rating_form() -> None:
    questions = load_schemas()["live_safety"].public_questions()
    assert questions_key(questions) == questions_key([dict(question) for question in questions])
    assert questions_key(questions) != questions_key(questions[:-1])


def test_live_campaigns_are_offered_on_the_live_tab_not_the_annotate_picker(engine: Engine, password_hash: str) -> None:
    with StandinCompanion() as standin:
        [rater, _other] = live_campaign(engine, password_hash, base_url=standin.base_url)
    with write_session(engine) as session:
        create_campaign(session, name="vote", schema=load_schemas()["crowd_vote"])
    with read_session(engine) as session:
        annotate_picker = AnnotateTab(lambda request: None, {}).campaign_picker(session, rater)
        assert live_campaigns(session, rater) == ["live"]
    assert [name for _label, name in annotate_picker.choices] == ["vote"]
