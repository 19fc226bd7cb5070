"""The responses' texts a curator reads on the Curate page (issue 16 item 9), on the real store (SQLite and
PostgreSQL): ``scenario_detail`` gives each response's text and its whole length (a runaway text cut by the store,
not after reading), the page's blocks escape model text and model names, cut a long text with the whole of it in a
``<details>``, and the scenario list shows what a curator triages by in six narrow columns."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, update

from studio.db import read_session, write_session
from studio.models import ResponseRow, UserPublic
from studio.services import curation
from studio.services.curation import Page
from studio.ui import tables
from studio.ui.curate_responses import PREVIEW_CHARS, response_html, responses_html
from studio.usecases import curate

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> ${alert(3)} {{x}} `y`"


def set_text(engine: Engine, scenario_id: str, text: str) -> None:
    """Give every response of ``scenario_id`` the text ``text``."""
    with write_session(engine) as session:
        session.execute(update(ResponseRow).where(ResponseRow.scenario_id == scenario_id).values(text=text))


def test_scenario_detail_gives_each_responses_text_and_length(voted: Engine, users: dict[str, UserPublic]) -> None:
    long_text = "长" * 3000 + "END"
    set_text(voted, "dlg-3", long_text)
    with read_session(voted) as session:
        detail = curate.scenario_detail(session, caller=users["curator"], scenario_id="dlg-3")
    assert len(detail["responses"]) == 4
    assert {(r["text"], r["text_chars"]) for r in detail["responses"]} == {(long_text, 3003)}


def test_a_runaway_text_is_cut_by_the_store_and_says_its_length(
    voted: Engine, users: dict[str, UserPublic], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(curation, "RESPONSE_TEXT_CHARS", 50)
    set_text(voted, "dlg-3", "字" * 49 + "AB" + "z" * 100)
    with read_session(voted) as session:
        detail = curate.scenario_detail(session, caller=users["curator"], scenario_id="dlg-3")
    assert {(r["text"], r["text_chars"]) for r in detail["responses"]} == {("字" * 49 + "A", 151)}
    html = response_html(detail["responses"][0])
    assert "the first 50 of 151 characters" in html and "responses.jsonl" in html


def test_response_blocks_escape_model_text_and_names() -> None:
    html = responses_html(
        [{"model": "<b>m</b>", "variant": "with_sap", "text": HOSTILE, "text_chars": len(HOSTILE), "S": 0.25}]
    )
    for live in ("<script", "<img", "<b>", "${", "{{", "`"):
        assert live not in html, live
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;m&lt;/b&gt;" in html
    assert "S 0.250" in html and "with_sap" in html
    assert "<details" not in html  # short: shown whole, nothing to open
    assert "No model has answered" in responses_html([])


def test_a_long_text_shows_its_start_and_the_whole_in_details() -> None:
    text = "a" * PREVIEW_CHARS + "<b>TAIL</b>"
    html = response_html({"model": "m", "variant": "v", "text": text, "text_chars": len(text)})
    preview, whole = html.split("<details", 1)
    assert "TAIL" not in preview and "a" * PREVIEW_CHARS + "…" in preview
    assert f"Show the whole text ({len(text):,} characters)" in whole and "&lt;b&gt;TAIL&lt;/b&gt;" in whole
    assert "not scored" in html


def test_the_list_shows_crowd_llm_and_flags_in_one_cell_each() -> None:
    row = {
        "id": "s-1",
        "status": "needs_revision",
        "crowd_decision": "revise",
        "crowd_agreement": 2 / 3,
        "crowd_votes": 3,
        "models_disagree": True,
        "llm_verdict": "keep",
        "uncertainty": 0.5817,
        "flags": ["pii", "meta"],
        "user_input": "x" * 100,
    }
    bare = {"id": "s-2", "status": None, "crowd_decision": None, "llm_verdict": None, "flags": None, "user_input": "hi"}
    tied = bare | {"id": "s-3", "status": "in_review", "crowd_votes": 4, "crowd_agreement": 0.5}
    shown = tables.scenario_list(Page(total=3, page=1, page_size=25, rows=[row, bare, tied]))
    assert list(shown.frame.columns) == tables.SCENARIO_COLUMNS and shown.summary == "3 match · page 1 of 1"
    first, second, third = shown.frame.to_dict("records")
    assert third["crowd"] == "tie · 4 vote(s)"  # a tie is said, not left blank as if nobody had voted
    assert first == {
        "id": "s-1",
        "status": "needs revision",
        "crowd": "revise · 67% · 3 vote(s)",
        "models": "disagree",
        "LLM": "keep · 0.58 uncertain",
        "flags": "pii, meta",
        "user input": "x" * (tables.LIST_TEXT_CHARS - 1) + "…",
    }
    assert second == {
        "id": "s-2",
        "status": "pending",
        "crowd": "",
        "models": "",
        "LLM": "",
        "flags": "",
        "user input": "hi",
    }
