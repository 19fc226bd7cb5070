"""Shared helpers for the live-session tests: a store with the demo's high-risk scenarios, raters and a live_safety
campaign talking to a real OpenAI-compatible server (usually ``pipeline.live.standin.StandinCompanion``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from pipeline.dataset import load_scenarios
from pipeline.paths import data_dir
from studio.db import write_session
from studio.models import UserPublic
from studio.services.campaigns import create_campaign
from studio.services.ingest import ingest_scenarios
from studio.services.live_endpoint import LiveEndpointConfig
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.helpers import add_people

LIVE_CAMPAIGN = "live"


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
    **live: Any,
) -> list[UserPublic]:
    """Demo scenarios, ``raters`` annotators (``rater-1``...) and a live campaign ``name`` on ``base_url``; returns
    the raters. ``live`` overrides fields of the workflow's ``live:`` section."""
    ingest_demo_scenarios(engine)
    people = add_people(engine, password_hash, [f"rater-{n}" for n in range(1, raters + 1)], "annotator")
    config = LiveEndpointConfig(model=model, base_url=base_url, token_budget=token_budget)
    with write_session(engine) as session:
        create_campaign(
            session,
            name=name,
            schema=live_schema(**live),
            people_per_item=people_per_item,
            live_endpoint=config,
        )
    return people
