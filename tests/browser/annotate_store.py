"""A store for the annotate page's browser tests: scenarios with context (Chinese memories, a schedule), a deceptive
bidi input, a 10 MB reply, and campaigns over them (crowd vote, safety with a conditional question, adjudication
with a number question), served by its own studio."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipeline.jsonl import write_records
from pipeline.records import Response, Scenario, ScenarioContext, Turn
from tests.browser.conftest import Studio
from tests.browser.store_fixture import PASSWORD

MEMORY = "用户养了一只叫年糕的猫"
DECEPTIVE = "Please open abc\u202eexe.txt for me"
END_MARKER = "THE-END-OF-THE-GIANT-REPLY"
GIANT = ("很长的回复 long reply. " * 700_000)[: 10_485_760 - len(END_MARKER)] + END_MARKER
ANNOTATORS = ("pa01", "pa02", "pa03", "pa04", "pa05")
#: Further annotators and experts for the issue-16 tests (each test signs in as a person of its own).
MORE_ANNOTATORS = ("pa06", "pa07", "pa08", "pa09")
EXPERTS = ("pe01", "pe02", "pe03")
ADMIN = "padmin"


@dataclass(frozen=True)
class AnnotateStore:
    database_url: str


def _scenarios() -> list[Scenario]:
    memory = ScenarioContext(memories=[MEMORY, "用户不吃辣"], date="2026-05-02")
    trip = ScenarioContext(schedule=["周六 14:00 开会"], routine="每天早上跑步", date="2026-05-02", location="杭州")
    chats = [
        Scenario(
            id=f"p-chat-{number}",
            subtask="dialogue_base",
            persona="Mia, a warm illustrator.",
            user_input=f"Just checking in ({number}).",
            reference=f"Good to hear from you ({number}).",
        )
        for number in range(1, 4)
    ]
    return [
        Scenario(
            id="p-memo-1",
            subtask="recollection_refinement",
            persona="Mia, a warm illustrator.",
            history=[Turn(role="user", content="你还记得我的猫吗？")],
            user_input=DECEPTIVE,
            reference="当然记得，年糕最近好吗？",
            context=memory,
        ),
        *chats,
        Scenario(
            id="p-trip-1",
            subtask="itinerary_middle",
            persona="Leo, a travel-savvy friend.",
            user_input="Plan my Saturday in Hangzhou.",
            reference="09:00 West Lake; 12:00 lunch; 15:00 tea.",
            context=trip,
        ),
    ]


def build_annotate_store(folder: Path) -> AnnotateStore:
    """Write the run, ingest it into a fresh SQLite store, add the people and the campaigns."""
    from studio.db import create_db_engine, upgrade_db, write_session
    from studio.services.auth import create_user
    from studio.services.campaigns import create_campaign
    from studio.services.ingest import ingest_run
    from studio.workflows import TargetFilter, load_schemas

    run = folder / "run"
    run.mkdir(parents=True)
    write_records(run / "scenarios.jsonl", _scenarios())
    giant = Response(scenario_id="p-trip-1", model="m", variant="with_sap", text=GIANT, backend="x", prompt_version="x")
    write_records(run / "responses.jsonl", [giant])
    url = f"sqlite:///{folder / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    ingest_run(engine, run)
    schemas = load_schemas()
    every_response = {"target_filter": TargetFilter()}
    with write_session(engine) as session:
        for username in ANNOTATORS + MORE_ANNOTATORS:
            create_user(session, username=username, password=PASSWORD, role="annotator")
        for username in EXPERTS:
            create_user(session, username=username, password=PASSWORD, role="expert")
        create_user(session, username=ADMIN, password=PASSWORD, role="admin")
        create_campaign(session, name="page-vote", schema=schemas["crowd_vote"], people_per_item=5, actor="t")
        safety = schemas["sap_safety"].model_copy(update=every_response)
        create_campaign(session, name="page-safety", schema=safety, people_per_item=5, actor="t")
        adjudication = schemas["adjudication"].model_copy(update=every_response)
        create_campaign(session, name="page-adjudicate", schema=adjudication, people_per_item=3, actor="t")
    engine.dispose()
    return AnnotateStore(url)


def serve_annotate_store(folder: Path) -> Iterator[tuple[str, AnnotateStore]]:
    """Serve the studio over :func:`build_annotate_store`'s store: yields (base url, store)."""
    from studio.settings import get_settings
    from studio.web.app import create_app
    from tests.serving import serve_in_thread

    store = build_annotate_store(folder)
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield url, store


def annotate_site(folder: Path) -> Iterator[Studio]:
    """:func:`serve_annotate_store` as a :class:`Studio` for a module-scoped fixture (``sign_in`` and
    ``choose_campaign`` read only its base url)."""
    for url, store in serve_annotate_store(folder):
        yield Studio(url, store)  # type: ignore[arg-type]
