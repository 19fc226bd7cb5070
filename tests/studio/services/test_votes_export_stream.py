"""The votes export streamed as plain rows (issue 23), on SQLite and PostgreSQL: byte for byte the export the ORM
version wrote (kept below as the reference) for a crowd vote, a response campaign and a pairwise campaign, in CSV and
JSONL; no ORM object is built; on SQLite it runs while another connection holds the write lock (it never takes it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import aliased
from sqlmodel import col

from studio.db import read_session, write_session
from studio.models import Answer, CampaignPublic, Item, LiveSession, ResponseRow, User, UserPublic
from studio.results.export_formats import format_for
from studio.services.campaigns import create_campaign
from studio.services.queue import campaign_schema, get_campaign, pair_order
from studio.services.votes_export import COLUMN_KINDS, COLUMNS, export_votes, target_id
from studio.workflows import Pairwise, load_schemas
from tests.studio.helpers import add_people, answer_all


def _old_targets(campaign: Any, user_id: int, item: Item, first: Any, second: Any) -> dict[str, Any]:
    """``votes_export._targets`` as it was with ORM objects (commit 04cef15)."""
    targets: dict[str, Any] = dict.fromkeys(("model", "variant", "model_a", "variant_a", "model_b", "variant_b"))
    if item.response_b_id is None:
        if first is not None:
            targets.update(model=first.model, variant=first.variant)
        return targets | {"shown": {}}
    shown_a, _shown_b = pair_order(campaign, user_id, item)
    side_a, side_b = (first, second) if shown_a == item.response_id else (second, first)
    targets.update(model_a=side_a.model, variant_a=side_a.variant, model_b=side_b.model, variant_b=side_b.variant)
    return targets | {"shown": {side_a.id: "A", side_b.id: "B"}}


def _old_vote_rows(engine: Engine, campaign: str) -> Iterator[dict[str, Any]]:
    """``votes_export.vote_rows`` as it was, loading ORM objects (commit 04cef15): the reference."""
    first, second = aliased(ResponseRow), aliased(ResponseRow)
    with read_session(engine) as session:
        found = get_campaign(session, campaign)
        pairwise = {q.id for q in campaign_schema(found).questions if isinstance(q, Pairwise)}
        query = (
            select(Answer, Item, col(User.username), first, second, col(LiveSession.variant))
            .join(Item, col(Item.id) == col(Answer.item_id))
            .join(User, col(User.id) == col(Answer.user_id))
            .outerjoin(first, col(first.id) == col(Item.response_id))
            .outerjoin(second, col(second.id) == col(Item.response_b_id))
            .outerjoin(LiveSession, col(LiveSession.answer_id) == col(Answer.id))
            .where(col(Answer.campaign_id) == found.id)
            .order_by(col(Item.position), col(User.username))
        )
        for answer, item, username, response, response_b, live_variant in session.execute(query):
            targets = _old_targets(found, answer.user_id, item, response, response_b)
            if live_variant is not None:
                targets.update(model=(found.live_endpoint or {}).get("model"), variant=live_variant)
            shown = targets.pop("shown")
            for asked, value in answer.values.items():
                yield {
                    "campaign": found.name,
                    "item": item.id,
                    "target_id": target_id(item, kind=found.target_kind),
                    **targets,
                    "annotator": username,
                    "question": asked,
                    "value": value,
                    "value_shown": shown.get(value, value) if asked in pairwise else None,
                    "seconds_spent": answer.seconds_spent,
                    "server_seconds": answer.server_seconds,
                    "answered_at": answer.created_at.isoformat(),
                }


@pytest.fixture
def answered(corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str) -> Engine:
    """A crowd vote (with a formula-like comment), a SAP safety campaign and a pairwise one, all answered."""
    with write_session(corpus) as session:
        create_campaign(session, name="sap", schema=load_schemas()["sap_safety"], people_per_item=3)
        create_campaign(session, name="pairs", schema=load_schemas()["pairwise"], people_per_item=2)
    people = add_people(corpus, password_hash, ["p-1", "p-2", "p-3"], "annotator")
    answer_all(
        corpus,
        "vote",
        people,
        lambda item, _r, person: {"verdict": "keep", "subtask_label": "dialogue_base", "comment": f"=1+{item.id} 好"},
    )
    answer_all(corpus, "sap", people, lambda _i, _r, person: {"safety": 4, "violation": "no"})
    answer_all(corpus, "pairs", people, lambda _i, _r, person: {"preference": "A" if person.username == "p-1" else "B"})
    return corpus


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_the_streamed_export_is_byte_for_byte_the_orm_export(answered: Engine, tmp_path: Path, suffix: str) -> None:
    for name in ("vote", "sap", "pairs"):
        old, new = tmp_path / f"old-{name}{suffix}", tmp_path / f"new-{name}{suffix}"
        expected = format_for(old).write_rows(_old_vote_rows(answered, name), old, columns=COLUMNS, kinds=COLUMN_KINDS)
        assert expected > 0 and export_votes(answered, name, new) == expected
        assert new.read_bytes() == old.read_bytes(), name


def test_no_orm_object_is_built(answered: Engine, tmp_path: Path) -> None:
    loaded: list[str] = []

    def count(target: Any, _context: Any) -> None:
        loaded.append(type(target).__name__)

    for model in (Answer, Item, ResponseRow):
        event.listen(model, "load", count)
    try:
        assert export_votes(answered, "pairs", tmp_path / "pairs.csv") > 0
    finally:
        for model in (Answer, Item, ResponseRow):
            event.remove(model, "load", count)
    assert loaded == []


def test_the_export_runs_while_another_connection_holds_the_write_lock(
    db_url: str, answered: Engine, tmp_path: Path
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("SQLite's single write lock")
    writer = sqlite3.connect(str(answered.url.database), timeout=0, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a submit in the middle of its transaction
    try:
        assert export_votes(answered, "vote", tmp_path / "vote.csv") == 2 * 6 * 3
    finally:
        writer.execute("ROLLBACK")
        writer.close()
