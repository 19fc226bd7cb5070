"""The write half of ``aggregate`` in short transactions (issue 23), through the real store on SQLite and PostgreSQL:
the same outcome as the one-transaction run (statuses, sides, review items, summary), an answer stored between the
read half and the write half counted as the one-transaction run counts it (at the next run), a campaign closed in
between aggregated as closed, and on SQLite another writer committing between the chunks.

The crowd is the simulated one of ``test_crowd_models`` (30 scenarios, 9 raters; some scenarios the models decide
differently from the majority, so review items are opened and put first).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from pipeline.records import Scenario
from studio.db import read_session, write_session
from studio.models import AuditLog, Campaign, Item, ResponseRow, UserPublic
from studio.services import aggregation_chunks
from studio.services.aggregation import aggregate, aggregate_campaign, answers_to_aggregate, write_in_chunks
from studio.services.campaigns import create_campaign, set_campaign_status
from studio.services.ingest import ingest_run
from studio.workflows import load_schemas
from tests.studio.helpers import add_people, answer_all, write_run
from tests.studio.services.test_crowd_models import RATERS, crowd_sides, review_order, simulated_crowd, vote


def _sides(engine: Engine) -> dict[str, dict[str, Any]]:
    """Every scenario's stored status row (the columns aggregation writes and settles)."""
    keep = ("status", "decided_by", "crowd", "crowd_decision", "crowd_votes", "crowd_agreement", "models_disagree")
    return {sid: {name: getattr(row, name) for name in keep} for sid, (_side, row) in crowd_sides(engine).items()}


def _partly_voted(engine: Engine, tmp_path: Path, password_hash: str) -> tuple[list[UserPublic], Any]:
    """The simulated scenarios in a ``vote`` campaign (9 people per item) that all raters but the last have answered;
    returns the raters and the answer function."""
    truth, votes = simulated_crowd()
    scenarios = [
        Scenario(id=sid, subtask="dialogue_base", persona="你是小林。", user_input=f"输入 {sid}", reference="好的。")
        for sid in truth
    ]
    ingest_run(engine, write_run(tmp_path / "run", scenarios=scenarios))
    with write_session(engine) as session:
        create_campaign(
            session, name="vote", schema=load_schemas()["crowd_vote"], people_per_item=len(RATERS), actor="admin"
        )
    crowd = add_people(engine, password_hash, RATERS, "annotator")

    def answer(item: Item, _response: ResponseRow | None, person: UserPublic) -> dict[str, Any]:
        return {"verdict": votes[str(item.scenario_id), person.username], "subtask_label": "dialogue_base"}

    answer_all(engine, "vote", crowd[:-1], answer)
    return crowd, answer


def test_the_chunked_write_half_writes_what_one_transaction_writes(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    vote(engine, tmp_path, password_hash, load_schemas()["crowd_vote"])
    with read_session(engine) as session:
        read = answers_to_aggregate(session, campaign="vote")
    [chunked] = write_in_chunks(engine, campaign="vote", actor="curator", answers=read, chunk=4)
    assert chunked.changed > 0 and chunked.review_items_opened > 0
    written, order = _sides(engine), review_order(engine, str(chunked.review_campaign))
    with write_session(engine) as session:  # the one-transaction run, its models fitted there: nothing left to do
        again = aggregate_campaign(session, campaign="vote", actor="curator")
    assert again.changed == 0
    assert _sides(engine) == written and review_order(engine, str(chunked.review_campaign)) == order
    different = {"changed", "review_items_opened"}
    assert again.model_dump(exclude=different) == chunked.model_dump(exclude=different)
    with read_session(engine) as session:  # one audit entry for the run, not one per chunk
        logged = session.execute(select(AuditLog).where(AuditLog.action == "campaign.aggregate")).scalars().all()
    assert [entry.detail["changed"] for entry in logged] == [chunked.changed]


def test_an_answer_stored_between_the_halves_counts_at_the_next_run(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    crowd, answer = _partly_voted(engine, tmp_path, password_hash)
    with read_session(engine) as session:
        read = answers_to_aggregate(session, campaign="vote")
    answer_all(engine, "vote", crowd[-1:], answer, per_person=5)  # five items reach their quota meanwhile
    [summary] = write_in_chunks(engine, campaign="vote", actor="curator", answers=read, chunk=4)
    assert summary.answers == 30 * 8 and summary.complete_items == 0 and summary.changed == 0
    assert _sides(engine) == {}  # as the one-transaction run: the items were not decided when the answers were read
    [later] = aggregate(engine, campaign="vote", actor="curator")
    assert later.answers == 30 * 8 + 5 and later.complete_items == 5 and len(_sides(engine)) == 5


def test_a_campaign_closed_between_the_halves_is_aggregated_as_closed(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    _partly_voted(engine, tmp_path, password_hash)
    with read_session(engine) as session:
        read = answers_to_aggregate(session, campaign="vote")
    with write_session(engine) as session:  # closed, deciding the items below quota on the answers they have
        set_campaign_status(session, name="vote", status="closed", actor="admin", decide_below_quota=True)
    [summary] = write_in_chunks(engine, campaign="vote", actor="curator", answers=read, chunk=4)
    assert summary.complete_items == 30 and len(_sides(engine)) == 30 and summary.changed >= 30
    with write_session(engine) as session:
        assert aggregate_campaign(session, campaign="vote", actor="curator").changed == 0


def test_another_writer_commits_between_the_chunks_on_sqlite(
    db_url: str, engine: Engine, tmp_path: Path, password_hash: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A submit waiting for SQLite's write lock gets it after one chunk, not after the whole write half."""
    if not db_url.startswith("sqlite"):
        pytest.skip("SQLite's single write lock is what a long write transaction stalls")
    vote(engine, tmp_path, password_hash, load_schemas()["crowd_vote"])
    chunks: list[tuple[float, float]] = []
    committed: list[float] = []
    probed = threading.Event()

    def probe() -> None:  # another process's submit: waits for the write lock, writes, commits
        other = sqlite3.connect(str(engine.url.database), timeout=30, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE campaign SET created_by = 'probed' WHERE name = 'vote'")
        other.execute("COMMIT")
        committed.append(time.perf_counter())
        other.close()
        probed.set()

    real_chunk, real_session = aggregation_chunks.write_chunk, aggregation_chunks.write_session

    def chunk(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = real_chunk(*args, **kwargs)
        chunks.append((started, time.perf_counter()))
        if len(chunks) == 1:  # the probe starts waiting while the first chunk holds the lock
            threading.Thread(target=probe).start()
        return result

    @contextmanager
    def fair(bound: Engine) -> Iterator[Any]:
        # SQLite's busy handler polls, so a waiting writer may miss the gap between two chunks: let it in first.
        if chunks:
            probed.wait(30)
        with real_session(bound) as session:
            yield session

    monkeypatch.setattr(aggregation_chunks, "write_chunk", chunk)
    monkeypatch.setattr(aggregation_chunks, "write_session", fair)
    monkeypatch.setattr(aggregation_chunks, "CHUNK", 4)
    [summary] = aggregate(engine, campaign="vote", actor="curator")
    assert summary.changed > 0 and len(chunks) == 8  # 30 scenarios, 4 a chunk
    assert chunks[0][1] < committed[0] < chunks[-1][0]  # it committed during the write half, between two chunks
    with read_session(engine) as session:
        assert session.execute(select(func.count()).where(AuditLog.action == "campaign.aggregate")).scalar() == 1
        assert session.execute(select(Campaign.created_by).where(Campaign.name == "vote")).scalar() == "probed"
