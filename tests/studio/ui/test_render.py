"""studio.ui.render: untrusted text never becomes markup, template syntax or script."""

from __future__ import annotations

import pytest

from studio.ui.render import (
    escape_text,
    render_context,
    render_history,
    render_item,
    render_message,
    render_persona,
    render_progress,
)
from tests.html_markup import parse

HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "<svg/onload=alert(1)>",
    '"><iframe src="javascript:alert(1)"></iframe>',
    "${window.__pwned = 1}",
    "{{constructor.constructor('alert(1)')()}}",
    "`${1+1}`",
    "[click](javascript:alert(1)) **bold** <b>tag</b>",
    "</div></div><a href=# onclick=alert(1)>x</a>",
    "你好<script>alert('中文')</script>😀 \\u003cscript\\u003e",
]

ALLOWED_TAGS = {"div", "span", "b", "br", "dl", "dt", "dd", "ul", "li"}


def assert_inert(markup: str) -> None:
    collector = parse(markup)
    for tag, attrs in collector.tags:
        assert tag in ALLOWED_TAGS, f"unexpected tag {tag!r} in {markup!r}"
        for name, _value in attrs:
            assert name == "class", f"unexpected attribute {name!r} on {tag!r}"
    for character in "$`{}":
        assert character not in markup, f"template character {character!r} left raw in {markup!r}"


@pytest.mark.parametrize("payload", HOSTILE)
def test_escape_text_keeps_the_text_and_yields_no_markup(payload: str) -> None:
    markup = escape_text(payload)
    collector = parse(markup)
    assert collector.tags == []
    assert "".join(collector.text) == payload
    for character in "<>$`{}":
        assert character not in markup


def test_escape_text_keeps_newlines_as_line_breaks() -> None:
    markup = escape_text("第一行\r\nline two\rthree\nfour")
    assert markup == "第一行<br>line two<br>three<br>four"
    assert [tag for tag, _ in parse(markup).tags] == ["br", "br", "br"]


def test_escape_text_of_none_is_empty_and_other_values_are_stringified() -> None:
    assert escape_text(None) == ""
    assert escape_text(3) == "3"


@pytest.mark.parametrize("payload", HOSTILE)
def test_render_item_of_a_response_is_inert_and_shows_every_text(payload: str) -> None:
    content = {
        "subtask": payload,
        "history": [{"role": "user", "content": payload}, {"role": "assistant", "content": payload}],
        "user_input": payload,
        "response": {"text": payload},
        "reference": payload,
    }
    markup = render_item(content)
    assert_inert(markup)
    text = "".join(parse(markup).text)
    assert text.count(payload) == 6


@pytest.mark.parametrize("payload", HOSTILE)
def test_render_item_of_a_pair_shows_both_candidates_in_label_order(payload: str) -> None:
    content = {"user_input": "hi", "response_a": {"text": payload + " first"}, "response_b": payload + " second"}
    markup = render_item(content)
    assert_inert(markup)
    text = "".join(parse(markup).text)
    assert text.index("Response A") < text.index(payload + " first") < text.index("Response B")
    assert payload + " second" in text


def test_render_item_of_a_scenario_shows_the_reference_and_ignores_unknown_top_level_fields() -> None:
    content = {
        "user_input": "我今天很难过",
        "reference": "抱抱你，发生什么了？",
        "model": "secret-model",
        "variant": "with_sap",
        "S": 0.42,
    }
    text = "".join(parse(render_item(content)).text)
    assert "抱抱你，发生什么了？" in text
    assert "Reference response" in text
    for hidden in ("secret-model", "with_sap", "0.42"):
        assert hidden not in text


@pytest.mark.parametrize("payload", HOSTILE)
def test_render_item_shows_revealed_response_fields_and_tags_as_text(payload: str) -> None:
    content = {
        "user_input": "hi",
        "subtask": "itinerary_basic",
        "tags": {"emotion": payload, "high_risk": True},
        "response": {"text": "reply", "model": payload, "auto_scores": {"S": 0.5}},
    }
    markup = render_item(content)
    assert_inert(markup)
    text = "".join(parse(markup).text)
    assert f"model: {payload}" in text
    assert "auto_scores: {'S': 0.5}" in text
    assert f"Emotion: {payload}" in text and "High risk: yes" in text
    assert "Subtask: Itinerary — basic (level I)" in text  # as raters read it, not the id


def test_subtask_labels_are_the_crowd_votes_and_cover_every_subtask() -> None:
    from pipeline.records import SUBTASKS
    from studio.ui.render import SUBTASK_LABELS
    from studio.workflows import load_schemas

    [question] = [q for q in load_schemas()["crowd_vote"].questions if q.id == "subtask_label"]
    assert {option.value: option.label for option in question.options} == SUBTASK_LABELS
    assert set(SUBTASK_LABELS) == set(SUBTASKS)
    unknown = "".join(parse(render_item({"user_input": "hi", "subtask": "a_new_subtask"})).text)
    assert "Subtask: a_new_subtask" in unknown  # an id with no label is shown as it is


def test_render_history_labels_roles() -> None:
    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    text = "".join(parse(render_history(turns)).text)
    assert text == "UseraCompanionb"


@pytest.mark.parametrize("payload", HOSTILE)
def test_render_persona_and_message_are_inert(payload: str) -> None:
    assert_inert(render_persona(payload))
    assert_inert(render_message(payload, kind="error"))
    assert_inert(render_message(payload, kind='"><script>'))
    assert payload in "".join(parse(render_persona(payload)).text)


def test_render_persona_without_text_says_so() -> None:
    assert "No persona." in "".join(parse(render_persona("")).text)


def test_render_progress_reports_counts_and_percent() -> None:
    text = "".join(parse(render_progress(mine=3, answers=25, items=200, complete_items=25)).text)
    assert "You answered 3 item(s)." in text
    assert "25 answers; 25 / 200 items complete (12%)" in text
    assert "(0%)" in "".join(parse(render_progress(mine=0, answers=0, items=0, complete_items=0)).text)
    assert "stopped early" not in text  # a workflow without a stopping rule says nothing about it


def test_render_progress_says_how_many_items_stopped_early() -> None:
    markup = render_progress(mine=3, answers=25, items=200, complete_items=30, stopped_early=7)
    assert "30 / 200 items complete (15%) (stopped early: 7)." in "".join(parse(markup).text)


@pytest.mark.parametrize("payload", HOSTILE)
def test_the_context_panel_shows_memories_schedule_date_and_place_as_text(payload: str) -> None:
    context = {
        "date": "2026-05-02",
        "location": "杭州",
        "memories": ["用户喜欢龙井茶", payload],
        "schedule": ["14:00 会议"],
    }
    markup = render_context(context)
    assert_inert(markup)
    text = "".join(parse(markup).text)
    for shown in ("Date", "2026-05-02", "Location", "杭州", "Memories of the user", "用户喜欢龙井茶", payload):
        assert shown in text
    assert "The user's schedule" in text and "14:00 会议" in text
    assert markup.count("<li>") == 3
    assert "No memories" in render_context({}) and "No memories" in render_context(None)


def test_bidi_and_zero_width_characters_are_shown_not_obeyed() -> None:
    """Issue 9.6: ``abc\u202eexe.txt`` displayed as ``abctxt.exe``; the control characters are now visible."""
    shown = escape_text("abc\u202eexe.txt \u200b\u2066x\u2069 \u200e \ufeff")
    text = "".join(parse(shown).text)
    assert text == "abc⟨U+202E⟩exe.txt ⟨U+200B⟩⟨U+2066⟩x⟨U+2069⟩ ⟨U+200E⟩ ⟨U+FEFF⟩"
    for control in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u200b":
        assert control not in shown
    assert escape_text("👨\u200d👩\u200d👧") == "👨\u200d👩\u200d👧"  # emoji sequences keep their joiners


def test_a_cut_text_says_how_much_is_shown() -> None:
    content = {
        "user_input": "hi",
        "response": {"text": "x" * 20},
        "cut": [{"field": "response.text", "shown_chars": 20, "total_chars": 10_485_760}],
    }
    text = "".join(parse(render_item(content)).text)
    assert "Cut here: showing the first 20 of 10,485,760 characters." in text
    assert "Cut here" not in "".join(parse(render_item({"user_input": "hi", "response": {"text": "x"}})).text)


def test_progress_says_what_is_left_for_me_and_my_median_time() -> None:
    markup = render_progress(mine=12, answers=40, items=60, complete_items=5, left=48, median_seconds=75.4)
    text = "".join(parse(markup).text)
    assert "You answered 12 item(s). 48 of 60 left for you. Median time per item: 1 min 15 s." in text
