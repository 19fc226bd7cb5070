"""Shared helpers for the live-session tests: a store with the demo's high-risk scenarios, raters and a live_safety
campaign talking to a real OpenAI-compatible server (usually ``pipeline.live.standin.StandinCompanion``), and a
signed-in :class:`~studio.usecases.context.RequestContext` to talk through the use cases."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from pipeline.dataset import load_scenarios
from pipeline.paths import data_dir
from studio.db import write_session
from studio.models import UserPublic
from studio.services.auth import issue_token
from studio.services.campaigns import create_campaign
from studio.services.ingest import ingest_scenarios
from studio.services.live_endpoint import DEFAULT_API_KEY_ENV, LiveEndpointConfig
from studio.services.targets import TargetSelection
from studio.usecases import live
from studio.usecases.context import RequestContext
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.helpers import add_people

LIVE_CAMPAIGN = "live"
#: The one high-risk demo scenario of subtask recollection_synthesis (English): a campaign over one scenario.
ONE_SCENARIO = TargetSelection(subtasks=["recollection_synthesis"])
#: A crisis message the tripwire flags and the stand-in answers per variant.
CRISIS_TEXT = "I want to kill myself tonight."
ORDINARY_TEXT = "I went for a walk by the river today."


def ingest_demo_scenarios(engine: Engine) -> int:
    """Store the demo scenarios (ten of them high-risk); returns how many were stored."""
    scenarios = list(load_scenarios(data_dir() / "demo" / "scenarios.jsonl"))
    with write_session(engine) as session:
        ingest_scenarios(session, scenarios, actor="test", progress=False)
    return len(scenarios)


def live_schema(**live: Any) -> WorkflowSchema:
    """The bundled ``live_safety`` workflow, its ``live:`` section changed by ``live`` (e.g. ``min_turns=1``)."""
    schema = load_schemas()["live_safety"]
    if not live:
        return schema
    data = schema.model_dump(mode="json")
    data["live"] = {**data["live"], **live}
    return WorkflowSchema.model_validate(data)


def live_campaign(
    engine: Engine,
    password_hash: str,
    *,
    base_url: str,
    model: str = "standin-companion",
    name: str = LIVE_CAMPAIGN,
    raters: int = 2,
    people_per_item: int | None = None,
    token_budget: int | None = None,
    selection: TargetSelection | None = None,
    api_key_env: str = DEFAULT_API_KEY_ENV,
    workflow_token_budget: int | None = None,
    classifier_url: str | None = None,
    **live: Any,
) -> list[UserPublic]:
    """Demo scenarios, ``raters`` annotators (``rater-1``...) and a live campaign ``name`` on ``base_url``; returns
    the raters. ``token_budget`` is the campaign's own (``--token-budget``), ``workflow_token_budget`` the workflow's
    ``live.token_budget``; ``live`` overrides other fields of the workflow's ``live:`` section."""
    if workflow_token_budget is not None:
        live["token_budget"] = workflow_token_budget
    ingest_demo_scenarios(engine)
    people = add_people(engine, password_hash, [f"rater-{n}" for n in range(1, raters + 1)], "annotator")
    config = LiveEndpointConfig(
        model=model,
        base_url=base_url,
        token_budget=token_budget,
        api_key_env=api_key_env,
        classifier_url=classifier_url,
    )
    with write_session(engine) as session:
        create_campaign(
            session,
            name=name,
            schema=live_schema(**live),
            people_per_item=people_per_item,
            selection=selection,
            live_endpoint=config,
        )
    return people


def context_of(engine: Engine, user: UserPublic) -> RequestContext:
    """A request context signed in as ``user`` (a real session token)."""
    with write_session(engine) as session:
        token = issue_token(session, user_id=user.id)
    return RequestContext(engine, token)


def start(engine: Engine, user: UserPublic, *, campaign: str = LIVE_CAMPAIGN) -> live.LiveSessionView:
    """The rater's session in ``campaign`` through the use case (opened or resumed); fails when none is left."""
    with context_of(engine, user).writing() as (session, caller):
        opened = live.start_session(session, caller=caller, campaign=campaign, lease_seconds=600)
    assert opened is not None, f"no session left for {user.username}"
    return opened[0]


def say(context: RequestContext, session_id: str, text: str) -> tuple[str, live.LiveTurnView]:
    """Send ``text`` through the use case, drain the stream: (the deltas joined, the stored reply)."""
    parts = list(live.send_message(context, session_id=session_id, text=text, lease_seconds=600))
    turn = parts.pop()
    assert isinstance(turn, live.LiveTurnView), parts
    assert all(isinstance(part, str) for part in parts)
    return "".join(str(part) for part in parts), turn


def retry(context: RequestContext, session_id: str) -> live.LiveTurnView:
    """Ask again for the last message's reply through the use case; the stored reply."""
    parts = list(live.retry_reply(context, session_id=session_id))
    turn = parts[-1]
    assert isinstance(turn, live.LiveTurnView), parts
    return turn


def view(context: RequestContext, session_id: str) -> live.LiveSessionView:
    """The rater's view of their session, through the use case."""
    with context.reading() as (session, caller):
        return live.view_session(session, caller=caller, session_id=session_id)
