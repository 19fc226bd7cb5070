"""The curator page without a browser, on the real store (SQLite and PostgreSQL): what its handlers do — the
caller's context opened from the session token, ``studio.usecases.curate`` (role checks on every call), the views of
``studio.ui.curate_views`` / ``studio.ui.tables`` — and the handlers themselves for the listing: browse with filters
and pages, one scenario's detail (escaped), decisions with an audit trail, publishing, downloads and aggregation."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from pipeline.records import Scenario, Turn
from pipeline.rundir import RunDir, model_dump_line
from studio.db import write_session
from studio.errors import InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from studio.models import UserPublic
from studio.results.export_formats import read_table
from studio.services.aggregation import aggregate_campaign
from studio.services.auth import login
from studio.services.ingest import ingest_run
from studio.services.listing import ResponseFilters, ScenarioFilters, parse
from studio.ui import curate_views as views
from studio.ui import downloads, tables
from studio.ui.tables import TablePage
from studio.usecases import annotate, curate
from studio.usecases.context import RequestContext
from tests.studio.helpers import PASSWORD, make_scenarios

HOSTILE_INPUT = "<img src=x onerror=alert(1)><script>alert(2)</script> ${alert(3)} {{x}}"
HOSTILE_REFERENCE = '=HYPERLINK("http://evil.example","click")'
Use = Callable[[Any, UserPublic], Any]


def token(engine: Engine, username: str) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=PASSWORD)


class Tokens(dict):
    """Session tokens by username (one per role), logged in on first use: argon2 is slow on purpose."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def __missing__(self, username: str) -> str:
        self[username] = token(self.engine, username)
        return self[username]


@pytest.fixture
def tokens(voted: Engine, users: dict[str, UserPublic]) -> Tokens:
    return Tokens(voted)


def as_caller(engine: Engine, session_token: str | None, use: Use, *, write: bool = False) -> Any:
    """What a handler does: open the token's context (one session, the caller in it), run ``use(session, caller)``."""
    context = RequestContext(engine, session_token)
    with context.writing() if write else context.reading() as (session, caller):
        return use(session, caller)


def browse(engine: Engine, session_token: str, **choices: Any) -> TablePage:
    """The Scenarios listing as the page shows it."""
    found = as_caller(
        engine,
        session_token,
        lambda s, c: curate.browse_scenarios(s, caller=c, filters=parse(ScenarioFilters, **choices)),
    )
    return tables.scenario_list(found)


def scenario_view(engine: Engine, session_token: str, scenario_id: str) -> views.ScenarioView:
    def use(session: Any, caller: UserPublic) -> views.ScenarioView:
        detail = curate.scenario_detail(session, caller=caller, scenario_id=scenario_id)
        audit = curate.audit_entries(session, caller=caller, scenario_id=scenario_id)
        return views.scenario_view(scenario_id, detail, audit)

    return as_caller(engine, session_token, use)


def decide(
    engine: Engine, session_token: str, scenario_id: str | None, action: str, reason: str, **changes: str
) -> str:
    """What the page's Save does: decide on the scenario shown (``scenario_id``, None: none is shown) at the
    revision it was shown at, the edit form filled with the scenario's values and ``changes``."""

    def shown(session: Any, caller: UserPublic) -> tuple[str, dict[str, str]]:
        detail = curate.scenario_detail(session, caller=caller, scenario_id=scenario_id or "")
        return curate.ShownScenario.of(detail).to_page(), views.scenario_view("", detail, []).form

    page, form = as_caller(engine, session_token, shown) if scenario_id else ("", {})
    _, status = as_caller(
        engine,
        session_token,
        lambda s, c: curate.decide_shown(
            s, caller=c, shown=page, action=action, reason=reason, form={**form, **changes}
        ),
        write=True,
    )
    return views.decision_message(str(scenario_id), action, status)


def publish(engine: Engine, session_token: str, name: str, note: str | None) -> str:
    version, created = as_caller(
        engine, session_token, lambda s, c: curate.publish(s, caller=c, name=name, note=note), write=True
    )
    return views.publish_message(version, created)


def audit_log(engine: Engine, session_token: str) -> pd.DataFrame:
    return views.audit_frame(as_caller(engine, session_token, lambda s, c: curate.audit_entries(s, caller=c)))


def download_version(engine: Engine, session_token: str, version: str, fmt: str, directory: Path) -> Path:
    records = as_caller(
        engine, session_token, lambda s, c: curate.dataset_version_records(s, caller=c, version=version)
    )
    return downloads.version_file(records, version, fmt, directory)


def run_aggregation(engine: Engine, session_token: str, campaign: str | None) -> pd.DataFrame:
    summaries = curate.aggregate(RequestContext(engine, session_token), campaign=campaign)  # as the page calls it
    return views.aggregation_frame(summaries)


def add_hostile_scenario(engine: Engine, folder: Path) -> None:
    hostile = Scenario(
        id="evil-1",
        subtask="dialogue_base",
        persona="<b>persona</b>",
        user_input=HOSTILE_INPUT,
        reference=HOSTILE_REFERENCE,
        history=[Turn(role="user", content="<i>earlier</i>")],
    )
    run = RunDir(folder).ensure()
    run.scenarios.write_text("".join(model_dump_line(s) + "\n" for s in [*make_scenarios(), hostile]), encoding="utf-8")
    ingest_run(engine, run)


def test_every_call_checks_the_caller(voted: Engine, tokens: Tokens, tmp_path: Path) -> None:
    readers = [
        lambda t: browse(voted, t),
        lambda t: as_caller(voted, t, lambda s, c: curate.browse_responses(s, caller=c)),
        lambda t: scenario_view(voted, t, "dlg-1"),
        lambda t: audit_log(voted, t),
        lambda t: as_caller(voted, t, lambda s, c: curate.dataset_versions(s, caller=c)),
    ]
    writers = [
        lambda t: decide(voted, t, "dlg-1", "reject", "spam"),
        lambda t: publish(voted, t, "v1", None),
        lambda t: run_aggregation(voted, t, "vote"),
    ]
    for call in [*readers, *writers]:
        for role in ("annotator", "expert"):
            with pytest.raises(PermissionDenied):
                call(tokens[role])
        for bad in (None, "", "forged"):
            with pytest.raises(NotAuthenticated):
                call(bad)
    for call in writers:
        with pytest.raises(PermissionDenied):
            call(tokens["researcher"])
    for call in readers:
        call(tokens["researcher"])
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with pytest.raises(PermissionDenied):
        download_version(voted, tokens["annotator"], "v1", "csv", downloads)
    assert list(downloads.iterdir()) == []
    assert scenario_view(voted, tokens["admin"], "dlg-1").audit.empty


def test_browse_filters_and_pages(voted: Engine, tokens: Tokens) -> None:
    curator = tokens["curator"]
    with write_session(voted) as session:
        aggregate_campaign(session, campaign="vote")
    first = browse(voted, curator, page_size=4)
    second = browse(voted, curator, page=2, page_size=4)
    assert (first.total, first.pages, len(first.frame), len(second.frame)) == (6, 2, 4, 2)
    assert first.summary == "6 match · page 1 of 2"
    # The ties (dlg-3, iti-3) differ from any crowd model: the default order lists the models' disagreements first.
    tied = ["dlg-3", "iti-3"]
    assert list(first.frame["id"]) + list(second.frame["id"]) == tied + sorted(
        s.id for s in make_scenarios() if s.id not in tied
    )
    assert list(first.frame["models"]) == ["disagree", "disagree", "", ""]
    past_end = browse(voted, curator, page=9, page_size=4)
    assert (past_end.page, list(past_end.frame["id"])) == (2, list(second.frame["id"]))
    assert list(browse(voted, curator, agreement_below=" 0.6 ").frame["id"]) == ["dlg-3", "iti-3"]
    for bad in ("abc", "1.5", "-0.1"):
        with pytest.raises(InvalidInput, match="agreement_below"):
            browse(voted, curator, agreement_below=bad)
    assert list(browse(voted, curator, subtask="itinerary_basic", order="id").frame["id"]) == ["iti-1", "iti-3"]
    low = as_caller(
        voted, curator, lambda s, c: curate.browse_scenarios(s, caller=c, filters=ScenarioFilters(agreement_below=0.6))
    ).rows
    assert [row["id"] for row in low] == ["dlg-3", "iti-3"] and all(row["crowd_agreement"] < 0.6 for row in low)
    # iti-2's verdict agrees (its subtask label ties, which the classification rule leaves alone): no dispute
    assert list(browse(voted, curator, disagreement=True).frame["id"]) == ["dlg-3", "iti-3"]
    assert list(browse(voted, curator, status="rejected").frame["id"]) == ["iti-1"]
    assert browse(voted, curator, status="pending").frame.empty
    flagged = tables.table_page(
        as_caller(
            voted,
            curator,
            lambda s, c: curate.browse_responses(
                s, caller=c, filters=parse(ResponseFilters, flagged="yes", page_size=100)
            ),
        ),
        tables.RESPONSE_COLUMNS,
    )
    assert flagged.total > 0 and flagged.frame["needs_adjudication"].all()
    assert set(flagged.frame["subtask"]) <= {"itinerary_basic", "itinerary_middle"}
    with pytest.raises(InvalidInput, match="status"):
        browse(voted, curator, status="maybe")


def test_scenario_view_shows_votes_scores_and_escapes_text(voted: Engine, tokens: Tokens, tmp_path: Path) -> None:
    view = scenario_view(voted, tokens["curator"], "dlg-3")
    verdicts = view.tallies[view.tallies["question"] == "verdict"]
    assert dict(zip(verdicts["value"], verdicts["count"], strict=True)) == {"discard": 1, "keep": 1}
    assert set(view.comments["text"]) == {"ann-1 on dlg-3", "ann-2 on dlg-3"}
    assert view.responses_html.count('class="h2h-response"') == 4
    assert (
        "model-alpha" in view.responses_html and "model-beta" in view.responses_html and "S 0." in view.responses_html
    )
    assert "提醒我明天开会" in view.item_html
    with pytest.raises(NotFound):
        scenario_view(voted, tokens["curator"], "nope")

    add_hostile_scenario(voted, tmp_path / "run")
    hostile = scenario_view(voted, tokens["curator"], "evil-1")
    for html in (hostile.item_html, hostile.persona_html):
        assert "<img" not in html and "<script" not in html and "<b>" not in html and "<i>" not in html
        assert "${" not in html and "{{" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in hostile.item_html
    row = browse(voted, tokens["curator"], subtask="dialogue_base").frame
    shown = HOSTILE_INPUT[: tables.LIST_TEXT_CHARS - 1] + "…"  # the list shows its start (the scenario: all of it)
    assert shown in set(row["user input"])  # the table gets the text itself; gr.Dataframe shows it as text


def test_decisions_need_a_reason_and_are_audit_logged(voted: Engine, tokens: Tokens) -> None:
    curator = tokens["curator"]
    with pytest.raises(InvalidInput, match="reason"):
        decide(voted, curator, "dlg-1", "reject", "   ")
    with pytest.raises(InvalidInput, match="no scenario is open"):
        decide(voted, curator, None, "reject", "why")
    assert decide(voted, curator, "dlg-1", "reject", "duplicate of dlg-2") == ("dlg-1: reject saved (status rejected).")
    with pytest.raises(InvalidInput, match="edits.reference: String should have at least 1 character"):
        decide(voted, curator, "dlg-2", "edit", "typo", reference="")
    with pytest.raises(InvalidInput, match="nothing was changed"):
        decide(voted, curator, "dlg-2", "edit", "typo")
    assert decide(voted, tokens["admin"], "dlg-2", "edit", "typo", reference="新的参考回复") == (
        "dlg-2: edit saved (status accepted)."
    )

    log = audit_log(voted, curator)
    assert list(log["action"][:2]) == ["scenario.edit", "scenario.reject"]
    edit, reject = log.iloc[0], log.iloc[1]
    assert (reject["actor"], reject["entity_id"], reject["reason"]) == ("curator", "dlg-1", "duplicate of dlg-2")
    assert json.loads(reject["before"])["status"] == "pending" and json.loads(reject["after"])["status"] == "rejected"
    assert edit["actor"] == "admin" and "新的参考回复" in edit["after"]
    view = scenario_view(voted, curator, "dlg-2")
    assert "新的参考回复" in view.item_html and "edited fields:</b> reference" in view.status_html
    assert list(scenario_view(voted, curator, "dlg-1").audit["reason"]) == ["duplicate of dlg-2"]
    rejected = browse(voted, curator, status="rejected").frame
    assert list(rejected["id"]) == ["dlg-1"] and list(rejected["status"]) == ["rejected"]
    [row] = as_caller(
        voted, curator, lambda s, c: curate.browse_scenarios(s, caller=c, filters=ScenarioFilters(status="rejected"))
    ).rows
    assert row["decided_by"] == "curator:curator"


def test_publish_list_and_download_versions(voted: Engine, tokens: Tokens, tmp_path: Path) -> None:
    curator = tokens["curator"]
    with pytest.raises(InvalidInput, match="no accepted scenario"):
        publish(voted, curator, "v1", None)
    add_hostile_scenario(voted, tmp_path / "run")
    for scenario_id in ("dlg-1", "evil-1"):
        decide(voted, curator, scenario_id, "accept", "checked")
    assert publish(voted, curator, "v1", "first cut").startswith("Published v1: 2 scenarios")
    assert "already version v1" in publish(voted, curator, "v2", None)
    versions = views.versions_frame(
        as_caller(voted, tokens["researcher"], lambda s, c: curate.dataset_versions(s, caller=c))
    )
    assert list(versions["name"]) == ["v1"] and list(versions["note"]) == ["first cut"]

    directory = downloads.new_download_dir()
    paths = {
        fmt: download_version(voted, tokens["researcher"], "v1", fmt, directory) for fmt in downloads.DOWNLOAD_FORMATS
    }
    assert {path.parent for path in paths.values()} == {directory}
    assert paths["csv"].name == "h2h-scenarios-v1.csv"
    csv = read_table(paths["csv"])
    assert list(csv["id"]) == ["dlg-1", "evil-1"]
    assert csv.loc[1, "reference"] == "'" + HOSTILE_REFERENCE  # formula-safe
    assert csv.loc[1, "user_input"] == HOSTILE_INPUT
    jsonl = [json.loads(line) for line in paths["jsonl"].read_text(encoding="utf-8").splitlines()]
    assert jsonl[1]["reference"] == HOSTILE_REFERENCE and jsonl[1]["history"][0]["content"] == "<i>earlier</i>"
    assert list(pd.read_parquet(paths["parquet"])["id"]) == ["dlg-1", "evil-1"]
    with pytest.raises(NotFound):
        download_version(voted, curator, "nope", "csv", directory)
    with pytest.raises(InvalidInput, match="format"):
        download_version(voted, curator, "v1", "../../etc/passwd", directory)
    assert downloads.safe_filename("../../etc/passwd") == "etc_passwd"


def test_run_aggregation_reports_and_is_idempotent(voted: Engine, tokens: Tokens) -> None:
    names = as_caller(
        voted, tokens["curator"], lambda s, c: annotate.visible_campaigns(s, caller=c, include_closed=True)
    )
    assert [campaign.name for campaign in names] == ["vote"]
    first = run_aggregation(voted, tokens["curator"], "vote")
    assert list(first["campaign"]) == ["vote"] and first.loc[0, "changed"] > 0
    assert "in_review" in first.loc[0, "statuses"]
    everything = run_aggregation(voted, tokens["admin"], None)
    assert everything.loc[everything["campaign"] == "vote", "changed"].tolist() == [0]
    with pytest.raises(NotFound):
        run_aggregation(voted, tokens["curator"], "nope")


def test_display_frame_cuts_text_and_renders_nested_values_as_json() -> None:
    frame = tables.display_frame([{"text": "x" * 500, "tags": {"a": 1}, "score": 0.123456, "none": float("nan")}])
    assert len(frame.loc[0, "text"]) == tables.CELL_CHARS and frame.loc[0, "text"].endswith("…")
    assert frame.loc[0, "tags"] == '{"a": 1}' and frame.loc[0, "score"] == 0.1235
    assert frame.loc[0, "none"] is None or pd.isna(frame.loc[0, "none"])


def test_download_dirs_are_fresh_and_old_ones_are_pruned() -> None:
    old = downloads.new_download_dir()
    (old / "h2h-scenarios-v1.csv").write_text("id\n", encoding="utf-8")
    recent = downloads.new_download_dir()
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    fresh = downloads.new_download_dir()
    assert fresh not in (old, recent) and fresh.name.startswith(downloads.DOWNLOAD_PREFIX)
    assert not old.exists() and recent.is_dir() and list(fresh.iterdir()) == []


def test_the_page_sets_every_filter_from_its_controls_and_lists_what_the_use_case_lists(
    voted: Engine, tokens: Tokens
) -> None:
    """The Curate page's scenario controls are keyed by the ScenarioFilters field each one sets — every field has
    one, so a filter added to the model without a control fails here — and its Search lists what the use case lists
    for the same filters (the page's "any" words included)."""
    import gradio as gr

    from studio.ui.curate import CurateTab

    tab = CurateTab(lambda session_token: RequestContext(voted, session_token))
    with gr.Blocks():
        tab.build()
    assert set(tab.scenario_controls) == set(ScenarioFilters.model_fields)
    assert set(tab.response_controls) < set(ResponseFilters.model_fields)
    curator = tokens["curator"]
    with write_session(voted) as session:
        aggregate_campaign(session, campaign="vote")
    chosen = {"subtask": "", "status": "in_review", "agreement_below": "", "disagreement": "any", "flagged": ""}
    chosen |= {"order": "uncertainty", "page_size": 10, "page": 3}
    listed, summary, page = tab._browse(0, reset=True)(curator, **chosen)  # Search: the first page
    expected = browse(voted, curator, **(chosen | {"page": 1}))
    assert (summary, page) == (expected.summary, 1) and list(expected.frame["id"]) == ["dlg-3", "iti-3"]
    assert [row[0] for row in listed.value["data"]] == ["dlg-3", "iti-3"]
    responses, _summary = tab._on_responses()(curator, subtask="", flagged="yes", adjudicated="any", page=1.0)
    assert len(responses) > 0 and responses["needs_adjudication"].all()
