"""Aggregation wired to the store: crowd majority → statuses + expert-review items, expert criteria → status,
adjudication → J_human / J_final on the score, SAP safety and instruction-following tables; idempotent; role-checked.

Answers go in through the real queue and answer services, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.engine import make_url

from pipeline.records import ALPHA
from pipeline.rundir import RunDir
from studio.db import read_session, write_session
from studio.errors import PermissionDenied
from studio.models import AuditLog, Campaign, CampaignPublic, Item, ResponseRow, ScoreRow, UserPublic
from studio.models.curation import ScenarioStatus
from studio.services.aggregation import (
    aggregate,
    aggregate_all,
    aggregate_campaign,
    answers_to_aggregate,
    pending_adjudication,
)
from studio.services.campaigns import TargetSelection, create_campaign, set_campaign_status
from studio.services.ingest import ingest_run
from studio.usecases import curate
from studio.usecases.context import RequestContext
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.helpers import add_people, answer_all, crowd_vote


def statuses(engine: Engine) -> dict[str, tuple[str, str]]:
    with read_session(engine) as session:
        rows = session.execute(select(ScenarioStatus)).scalars()
        return {row.scenario_id: (row.status, row.decided_by) for row in rows}


def review_items(engine: Engine, name: str) -> list[str]:
    with read_session(engine) as session:
        campaign = session.execute(select(Campaign).where(Campaign.name == name)).scalars().one()
        return sorted(session.execute(select(Item.scenario_id).where(Item.campaign_id == campaign.id)).scalars())


EXPERT_VERDICTS: dict[str, list[tuple[str, str, str]]] = {
    "dlg-3": [("pass", "pass", "pass")] * 3,
    "iti-2": [("fail", "pass", "pass"), ("fail", "pass", "pass"), ("pass", "pass", "pass")],
    "iti-3": [("pass", "fail", "pass"), ("pass", "fail", "fail"), ("pass", "pass", "pass")],
}


def expert_review(engine: Engine, password_hash: str, campaign: str) -> list[UserPublic]:
    experts = add_people(engine, password_hash, ["exp-1", "exp-2", "exp-3"], "expert")

    def answer(item: Item, _response: ResponseRow | None, person: UserPublic) -> dict[str, Any]:
        accuracy, consistency, compliance = EXPERT_VERDICTS[item.scenario_id][experts.index(person)]
        values = {"accuracy": accuracy, "consistency": consistency, "domain_compliance": compliance}
        return values | {f"{name}_note": "needs work" for name, verdict in values.items() if verdict == "fail"}

    answer_all(engine, campaign, experts, answer)
    return experts


#: The statuses :func:`crowd_vote`'s answers lead to.
CROWD_STATUSES = {
    "dlg-1": ("accepted", "crowd:vote"),
    "dlg-2": ("needs_revision", "crowd:vote"),
    "dlg-3": ("in_review", "crowd:vote"),
    "iti-1": ("rejected", "crowd:vote"),
    # The verdict agrees; the subtask label ties, which is no dispute: the classification rule changes nothing then.
    "iti-2": ("accepted", "crowd:vote"),
    "iti-3": ("in_review", "crowd:vote"),
}


def test_crowd_majority_sets_statuses_and_opens_review_items_once(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    crowd_vote(store, password_hash)
    with write_session(store) as session:
        first = aggregate_campaign(session, campaign="vote", actor="curator")
    assert statuses(store) == CROWD_STATUSES
    assert first.review_campaign == "vote-review" and first.review_items_opened == 2
    assert first.complete_items == 6 and first.changed == 6 + 2
    assert review_items(store, "vote-review") == ["dlg-3", "iti-3"]
    with write_session(store) as session:
        second = aggregate_campaign(session, campaign="vote", actor="admin")
        review = session.execute(select(Campaign).where(Campaign.name == "vote-review")).scalars().one()
        assert review.workflow_type == "expert_review" and review.status == "open"
    assert second.changed == 0 and second.review_items_opened == 0
    assert review_items(store, "vote-review") == ["dlg-3", "iti-3"]
    with read_session(store) as session:
        dlg3 = session.get(ScenarioStatus, "dlg-3")
    assert (dlg3.crowd_votes, dlg3.crowd_agreement, dlg3.disagreement) == (2, 0.5, True)


def test_disputes_already_in_an_open_review_campaign_wait_for_its_experts_without_new_items(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    """An expert-review campaign opened by hand over every scenario (as ``h2h demo`` does): the crowd's disputed
    scenarios go ``in_review`` (for that campaign's experts), no item is added (they are there already) and no
    ``<crowd>-review`` campaign is opened."""
    with write_session(store) as session:
        create_campaign(session, name="by-hand-review", schema=load_schemas()["expert_review"])
    before = review_items(store, "by-hand-review")
    assert {"dlg-3", "iti-2", "iti-3"} <= set(before)
    crowd_vote(store, password_hash)
    with write_session(store) as session:
        summary = aggregate_campaign(session, campaign="vote", actor="curator")
    assert (summary.review_campaign, summary.review_items_opened) == ("by-hand-review", 0)
    assert review_items(store, "by-hand-review") == before
    disputed = {sid: status for sid, status in statuses(store).items() if sid in ("dlg-3", "iti-3")}
    assert disputed == dict.fromkeys(("dlg-3", "iti-3"), ("in_review", "crowd:vote"))
    with read_session(store) as session:
        assert session.execute(select(func.count(Campaign.id))).scalar_one() == 2  # no "vote-review" was opened


def test_items_below_quota_stay_undecided_when_closed_unless_the_closer_chose_otherwise(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    with write_session(store) as session:
        (empty,) = aggregate_all(session)
    assert (empty.answers, empty.complete_items, empty.changed) == (0, 0, 0)
    (only,) = add_people(store, password_hash, ["lonely"], "annotator")
    answer_all(store, "vote", [only], lambda item, _r, _p: {"verdict": "keep", "subtask_label": "dialogue_base"})
    with write_session(store) as session:
        summary = aggregate_campaign(session, campaign="vote")
    assert (summary.complete_items, summary.incomplete_items, summary.changed) == (0, 6, 0)
    assert statuses(store) == {}
    with write_session(store) as session:
        closing = set_campaign_status(session, name="vote", status="closed")
        closed = aggregate_campaign(session, campaign="vote")
    assert (closing.quota.below_quota, closing.quota.at_quota, closing.decide_below_quota) == (6, 0, False)
    assert "6 are answered but below quota" in closing.message and "stay undecided" in closing.message
    assert (closed.complete_items, closed.below_quota, closed.changed) == (0, 6, 0)
    assert statuses(store) == {}  # one vote each decided nothing
    with write_session(store) as session:
        set_campaign_status(session, name="vote", status="open")
        chosen = set_campaign_status(session, name="vote", status="closed", decide_below_quota=True)
        decided = aggregate_campaign(session, campaign="vote")
    assert chosen.decide_below_quota and "decided on the answers they have" in chosen.message
    assert (decided.complete_items, decided.statuses) == (6, {"accepted": 6})
    with read_session(store) as session:
        rows = session.execute(select(ScenarioStatus)).scalars().all()
        closes = session.execute(select(AuditLog).where(AuditLog.action == "campaign.closed")).scalars().all()
    assert {(row.crowd_votes, row.crowd_agreement) for row in rows} == {(1, None)}  # one vote: no agreement
    assert [entry.detail["decide_below_quota"] for entry in closes] == [False, True]


def test_expert_majority_per_criterion_decides_where_the_crowd_was_split(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    crowd_vote(store, password_hash)
    with write_session(store) as session:
        aggregate_campaign(session, campaign="vote")
    expert_review(store, password_hash, "vote-review")
    with write_session(store) as session:
        summaries = aggregate_all(session, actor="curator")
    assert [s.campaign for s in summaries] == ["vote", "vote-review"]
    assert summaries[1].statuses == {"accepted": 1, "needs_revision": 1}
    found = statuses(store)
    assert found["dlg-3"] == ("accepted", "expert:vote-review")
    assert found["iti-3"] == ("needs_revision", "expert:vote-review")
    assert found["dlg-1"] == ("accepted", "crowd:vote")
    assert found["iti-2"] == ("accepted", "crowd:vote")  # not disputed, so not reviewed
    with write_session(store) as session:
        again = aggregate_all(session)
    assert [s.changed for s in again] == [0, 0]
    with read_session(store) as session:
        verdicts = session.get(ScenarioStatus, "iti-3").expert_verdicts
    assert verdicts == {"accuracy": "pass", "consistency": "fail", "domain_compliance": "pass"}


def test_adjudication_writes_median_j_human_and_j_final_and_counts_pending(
    store: Engine, corpus: Engine, run_dir: RunDir, users: dict[str, UserPublic], password_hash: str
) -> None:
    with write_session(store) as session:
        flagged_before = pending_adjudication(session)
        create_campaign(session, name="adj", schema=load_schemas()["adjudication"], people_per_item=3)
    experts = add_people(store, password_hash, ["exp-a", "exp-b", "exp-c"], "expert")
    rubric = {experts[0].id: 1.0, experts[1].id: 4.5, experts[2].id: 2.0}  # median 2.0
    answer_all(store, "adj", experts, lambda _i, _r, person: {"rubric_score": rubric[person.id], "note": "checked"})
    with write_session(store) as session:
        summary = aggregate_campaign(session, campaign="adj", actor="admin")
    assert flagged_before == summary.complete_items > 0
    assert summary.pending_adjudication == 0 and summary.changed == summary.complete_items
    with read_session(store) as session:
        rows = (
            session.execute(
                select(ScoreRow)
                .join(ResponseRow, ResponseRow.id == ScoreRow.response_id)
                .where(ResponseRow.needs_adjudication.is_(True))
            )
            .scalars()
            .all()
        )
    assert len(rows) == flagged_before
    for row in rows:
        assert row.J_human == 2.0
        assert row.J_final == pytest.approx(ALPHA * 5 * row.S + (1 - ALPHA) * 2.0)
    with write_session(store) as session:
        assert aggregate_campaign(session, campaign="adj").changed == 0
    ingest_run(store, run_dir)  # re-ingesting the run keeps the experts' J_human and J_final
    with read_session(store) as session:
        again = {
            row.id: (row.J_human, row.J_final)
            for row in session.execute(select(ScoreRow).where(ScoreRow.id.in_([row.id for row in rows]))).scalars()
        }
    assert again == {row.id: (row.J_human, row.J_final) for row in rows}
    with write_session(store) as session:
        assert aggregate_campaign(session, campaign="adj").changed == 0
        assert pending_adjudication(session) == 0


def test_sap_safety_table_per_variant_beside_the_automatic_scores(
    store: Engine, corpus: Engine, users: dict[str, UserPublic], password_hash: str
) -> None:
    with write_session(store) as session:
        create_campaign(session, name="sap", schema=load_schemas()["sap_safety"], people_per_item=3)
    raters = add_people(store, password_hash, ["r-1", "r-2", "r-3"], "annotator")

    def answer(_item: Item, response: ResponseRow | None, person: UserPublic) -> dict[str, Any]:
        assert response is not None
        if response.variant == "with_sap":
            return {"safety": 5, "violation": "no"}
        unsafe = raters.index(person) < 2  # two of three say it violates: a violation by majority
        return (
            {"safety": 2, "violation": "yes", "violation_kind": ["dismissive"]}
            if unsafe
            else {"safety": 3, "violation": "no"}
        )

    answer_all(store, "sap", raters, answer)
    with write_session(store) as session:
        summary = aggregate_campaign(session, campaign="sap", actor="curator")
        scores = session.execute(
            select(ResponseRow.variant, ScoreRow.bleu4)
            .join(ScoreRow, ScoreRow.response_id == ResponseRow.id)
            .where(ResponseRow.scenario_id == "dlg-2")
        ).all()
    table = {row["variant"]: row for row in summary.table}
    assert table["with_sap"]["violation_rate"] == 0.0 and table["with_sap"]["safety"] == 5.0
    assert table["without_sap"]["violation_rate"] == 1.0
    assert table["without_sap"]["safety"] == pytest.approx((2 + 2 + 3) / 3)
    expected_bleu = sum(b for v, b in scores if v == "without_sap") / 2 * 100
    assert table["without_sap"]["BLEU-4"] == pytest.approx(expected_bleu)
    assert summary.changed == 0


def test_instruction_following_mean_per_kind_per_model(
    store: Engine, corpus: Engine, users: dict[str, UserPublic], password_hash: str
) -> None:
    with write_session(store) as session:
        create_campaign(session, name="if", schema=load_schemas()["instruction_following"], people_per_item=2)
    raters = add_people(store, password_hash, ["r-1", "r-2"], "annotator")
    ratings = {"model-alpha": (5, 4), "model-beta": (2, 1)}
    answer_all(
        store,
        "if",
        raters,
        lambda _i, response, person: {"need_recognised": ratings[response.model][raters.index(person)]},
    )
    with write_session(store) as session:
        summary = aggregate_campaign(session, campaign="if")
    table = {row["model"]: row for row in summary.table}
    assert table["model-alpha"]["explicit"] == 4.5 and table["model-beta"]["explicit"] == 1.5


@pytest.mark.parametrize("role", ["annotator", "expert", "researcher"])
def test_only_curators_and_admins_aggregate(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], role: str
) -> None:
    from tests.studio.web.test_api_hostile_input import issue_token

    context = RequestContext(store, issue_token(store, users[role]))
    with pytest.raises(PermissionDenied):
        curate.aggregate(context, campaign="vote")
    with pytest.raises(PermissionDenied):
        curate.aggregate(context, campaign=None)
    with read_session(store) as session:
        assert session.execute(select(func.count()).select_from(ScenarioStatus)).scalar_one() == 0


def test_pairwise_campaign_reports_position_balanced_winners(
    store: Engine, corpus: Engine, users: dict[str, UserPublic], password_hash: str
) -> None:
    with write_session(store) as session:
        create_campaign(
            session,
            name="pairs",
            schema=load_schemas()["pairwise"],
            people_per_item=1,
            selection=TargetSelection(subtasks=["dialogue_base"], variants=["with_sap"]),
        )
    (judge,) = add_people(store, password_hash, ["pj"], "annotator")
    answer_all(store, "pairs", [judge], lambda _i, _r, _p: {"preference": "A"})
    with write_session(store) as session:
        summary = aggregate_campaign(session, campaign="pairs")
    (row,) = summary.table
    assert {row["first"], row["second"]} == {"model-alpha/with_sap", "model-beta/with_sap"}
    assert row["votes"] == 1 and row["winner"] in (row["first"], row["second"])


def test_aggregate_reads_the_answers_off_the_write_lock_and_writes_what_one_session_would(
    db_url: str, store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    crowd_vote(store, password_hash)
    with read_session(store) as session:
        answers = answers_to_aggregate(session, campaign="vote")
    assert len(answers["vote"]) == 12
    if db_url.startswith("sqlite"):  # the read needs no write lock: it runs while another process holds it
        holder = sqlite3.connect(make_url(db_url).database, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with read_session(store) as session:
                assert answers_to_aggregate(session)["vote"].equals(answers["vote"])
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    (summary,) = aggregate(store, campaign="vote", actor="curator")
    assert statuses(store) == CROWD_STATUSES
    assert (summary.review_campaign, summary.review_items_opened, summary.changed) == ("vote-review", 2, 6 + 2)
    again = aggregate(store, actor="admin")  # every campaign, the review campaign opened above included
    assert [(row.campaign, row.changed) for row in again] == [("vote", 0), ("vote-review", 0)]
    from tests.studio.web.test_api_hostile_input import issue_token

    for person in (users["annotator"], users["researcher"]):
        with pytest.raises(PermissionDenied):
            curate.aggregate(RequestContext(store, issue_token(store, person)))


def test_an_audited_item_the_judge_did_not_flag_keeps_j_final_equal_to_j(
    store: Engine, corpus: Engine, users: dict[str, UserPublic], password_hash: str
) -> None:
    """The audit measures the judge (studio.results.ppi); it never replaces an unflagged item's J in Table 2."""
    adjudication = load_schemas()["adjudication"]
    audited = WorkflowSchema.model_validate({**adjudication.model_dump(mode="json"), "audit": {"share": 1.0}})
    with write_session(store) as session:
        create_campaign(session, name="adj-audit", schema=audited, people_per_item=1)
        before = {row.response_id: (row.J, row.J_final) for row in session.execute(select(ScoreRow)).scalars()}
    experts = add_people(store, password_hash, ["exp-z"], "expert")
    answer_all(store, "adj-audit", experts, lambda _i, _r, _p: {"rubric_score": 1.5, "note": "audited"})
    with write_session(store) as session:
        aggregate_campaign(session, campaign="adj-audit", actor="admin")
    with read_session(store) as session:
        rows = session.execute(
            select(ScoreRow, ResponseRow.needs_adjudication).join(ResponseRow, ResponseRow.id == ScoreRow.response_id)
        ).all()
    unflagged = [row for row, flagged in rows if not flagged and row.J_human is not None]
    flagged = [row for row, flagged in rows if flagged]
    assert unflagged and flagged
    for row in unflagged:
        assert row.J_human == 1.5 and row.J_final == before[row.response_id][1]
    for row in flagged:
        assert row.J_final == pytest.approx(ALPHA * 5 * row.S + (1 - ALPHA) * 1.5)
