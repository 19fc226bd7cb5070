"""The Annotate page through nginx (the shipped ``deploy/nginx.conf``) in front of two ``h2h studio`` processes on
one fresh PostgreSQL database: an annotator signs in and answers; a reload lands on the same process (nginx's access
log names the process of each request); when that process dies, a reload lands on the other one, still signed in
(the session is in the store), and the answering goes on. Every answer is checked in the database."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from pipeline.jsonl import write_records
from pipeline.records import Scenario
from studio.db import create_db_engine, read_session
from studio.models import Answer, Campaign, User
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, chat_text, choose_campaign, settled, sign_in
from tests.browser.store_fixture import PASSWORD
from tests.nginx_proxy import Team, require_nginx, team_behind_nginx
from tests.requirements import fresh_postgres_database

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

FORM = ".h2h-form:visible"
CAMPAIGN = "nginx-vote"
ANNOTATOR = "na01"
#: The answers given, in order: (verdict's label, subtask label's label) and the values they are stored as.
CHOICES = [
    (("Keep", "Dialogue — everyday chat"), {"verdict": "keep", "subtask_label": "dialogue_base"}),
    (("Revise", "Dialogue — emotional support"), {"verdict": "revise", "subtask_label": "dialogue_emotion"}),
    (("Discard", "Dialogue — schedule and plans"), {"verdict": "discard", "subtask_label": "dialogue_schedule"}),
    (("Keep", "Dialogue — emotional support"), {"verdict": "keep", "subtask_label": "dialogue_emotion"}),
    (("Revise", "Dialogue — everyday chat"), {"verdict": "revise", "subtask_label": "dialogue_base"}),
]


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    """A fresh PostgreSQL database (filled by :func:`fill_store`); dropped afterwards."""
    with fresh_postgres_database("h2h_test_nginx_") as url:
        yield url


def fill_store(url: str, folder: Path) -> None:
    from studio.db import upgrade_db, write_session
    from studio.services.auth import create_user
    from studio.services.campaigns import create_campaign
    from studio.services.ingest import ingest_run
    from studio.workflows import load_schemas

    chats = [
        Scenario(
            id=f"n-chat-{number}",
            subtask="dialogue_base",
            persona="Mia, a warm illustrator.",
            user_input=f"Checking in through the proxy ({number}).",
            reference=f"Good to hear from you ({number}).",
        )
        for number in range(1, 7)
    ]
    run = folder / "run"
    run.mkdir(parents=True)
    write_records(run / "scenarios.jsonl", chats)
    engine = create_db_engine(url)
    try:
        upgrade_db(engine)
        ingest_run(engine, run)
        with write_session(engine) as session:
            create_user(session, username=ANNOTATOR, password=PASSWORD, role="annotator")
            create_campaign(session, name=CAMPAIGN, schema=load_schemas()["crowd_vote"], people_per_item=2, actor="t")
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def team(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    require_nginx()
    folder = Path(tmp_path_factory.mktemp("behind-nginx"))
    fill_store(database_url, folder)
    with team_behind_nginx(database_url, folder / "team", processes=2) as served:
        yield served


def stored_values(url: str) -> list[dict[str, Any]]:
    engine = create_db_engine(url)
    try:
        with read_session(engine) as session:
            query = (
                select(Answer)
                .join(User, User.id == Answer.user_id)
                .join(Campaign, Campaign.id == Answer.campaign_id)
                .where(User.username == ANNOTATOR, Campaign.name == CAMPAIGN)
                .order_by(Answer.id)
            )
            return [dict(answer.values) for answer in session.exec(query).all()]
    finally:
        engine.dispose()


def answer(page: Any, url: str, number: int) -> None:
    """Give answer ``number`` of :data:`CHOICES` on the item shown; wait until the store holds it."""
    (verdict, label), _ = CHOICES[number]
    shown = chat_text(page)
    page.locator(f"{FORM} [id^='q-box-'][id$='-verdict']").get_by_text(verdict, exact=True).click()
    page.locator(f"{FORM} [id^='q-box-'][id$='-subtask_label']").get_by_text(label, exact=True).click()
    page.locator(f"{FORM} .h2h-submit").click()
    deadline = time.monotonic() + UI_WAIT_MS / 1000
    while len(stored_values(url)) <= number:
        assert time.monotonic() < deadline, f"answer {number + 1} was not stored"
        time.sleep(0.1)
    page.wait_for_function("(before) => document.querySelector('#h2h-chat').innerText !== before", arg=shown)
    settled(page)


def gradio_upstreams(team: Team, after: int) -> set[str]:
    """The processes that answered the page's Gradio requests, from the access log's line ``after`` on."""
    lines = team.nginx.access_log.read_text(encoding="utf-8").splitlines()[after:]
    return {
        line.split("upstream=")[1].split(" time=")[0].split(", ")[-1] for line in lines if "/ui/gradio_api/" in line
    }


def log_length(team: Team) -> int:
    return len(team.nginx.access_log.read_text(encoding="utf-8").splitlines())


def test_an_annotator_answers_through_nginx_and_a_reload_survives_its_process(
    team: Team, database_url: str, page: Any
) -> None:
    site = Studio(team.url, None)  # type: ignore[arg-type]  # sign_in and choose_campaign read the URL only
    sign_in(page, site, ANNOTATOR)
    choose_campaign(page, CAMPAIGN)
    for number in range(3):
        answer(page, database_url, number)
    assert stored_values(database_url) == [values for _, values in CHOICES[:3]]
    assert page.inner_text("#h2h-message").startswith("Saved.")
    assert "You answered 3 item(s)" in page.inner_text("body")
    [first] = gradio_upstreams(team, 0)  # one page, one process: every Gradio request went there
    save_screenshot(page, "behind-nginx-annotator-three-answers")

    before_reload = log_length(team)
    page.reload()
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
    choose_campaign(page, CAMPAIGN)
    answer(page, database_url, 3)
    assert gradio_upstreams(team, before_reload) == {first}  # the reload stayed on the same process

    team.process_on(first).stop(kill=True)  # the page's process dies (SIGKILL, as a crash)
    before_failover = log_length(team)
    page.reload()
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)  # still signed in: the session is in the store
    assert ANNOTATOR in page.inner_text("#h2h-username")
    choose_campaign(page, CAMPAIGN)
    answer(page, database_url, 4)
    [second] = gradio_upstreams(team, before_failover)
    assert second != first
    assert stored_values(database_url) == [values for _, values in CHOICES]
    assert "You answered 5 item(s)" in page.inner_text("body")  # the other process counts the first one's answers
    save_screenshot(page, "behind-nginx-annotator-after-failover")
