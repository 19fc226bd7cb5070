"""Aggregating a campaign's answers by its schema's rule, and writing the outcome to the store.

* ``majority`` (crowd vote): majority per question; a tie or agreement below ``min_agreement`` opens an item in an
  open ``expert_review`` campaign (created as ``<campaign>-review`` when none is open); the verdict sets the
  scenario's status (keep → accepted, revise → needs_revision, discard → rejected).
* ``majority_per_criterion`` (expert review): majority per criterion; the status follows
  :func:`studio.results.aggregate.expert_review_status`.
* ``median`` yielding ``J_human`` (adjudication): median rubric score → J_human → J_final, written to the score.
* ``mean`` (SAP safety, instruction following) and ``pairwise_majority``: tables only (nothing is written).

Only *complete* items count: answered by the campaign's quota (``min_people_per_item`` for a median), or any
answered item once the campaign is closed. Every write compares first, so a second run changes nothing; a status
set by a curator is never overwritten by aggregation.

Reading the answers is the long part of a run: :func:`aggregate` (and the API route) reads them in a read session
first (:func:`answers_to_aggregate`) and applies the rules in a second, write session, so that on SQLite the write
lock, which every submit waits for, is not held while they are read. Answers stored or revised in between count at
the next run, as those stored just after a run do (statuses follow them then; an expert-review item once opened
stays open).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field
from sqlalchemy import Engine, func, insert, select
from sqlmodel import Session, col

from studio.models import AuditLog, Campaign, ResponseRow, ScoreRow, utc_now
from studio.models.curation import ScenarioStatus, ScenarioStatusBase
from studio.results.aggregate import (
    adjudicate,
    complete_answers,
    completion_quota,
    crowd_majority,
    expert_review_status,
    pairwise_majority,
)
from studio.results.store_views import answers_by_question, campaign_answers, score_frame
from studio.results.tables import (
    instruction_following_table,
    instruction_ratings,
    rated_answers,
    safety_ratings,
    table3,
)
from studio.schemas import (
    CriteriaRule,
    MajorityRule,
    MeanRule,
    MedianRule,
    PairwiseRule,
    SingleChoice,
    WorkflowSchema,
)
from studio.services.content import pair_is_swapped
from studio.services.queue import campaign_schema, get_campaign
from studio.services.review import open_review_items

logger = logging.getLogger(__name__)

#: A crowd verdict → the scenario's status.
VERDICT_STATUS: dict[str, str] = {"keep": "accepted", "revise": "needs_revision", "discard": "rejected"}
#: Whose status decision outweighs whose (the prefix of ScenarioStatus.decided_by).
DECIDER_RANK: dict[str, int] = {"": 0, "crowd": 1, "expert": 2, "curator": 3}


def table_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A result table as records with text column names (the summary's ``table``)."""
    return [{str(name): value for name, value in row.items()} for row in frame.to_dict("records")]


class AggregationSummary(BaseModel):
    """What one aggregation run found and changed. ``changed`` counts rows written by this run."""

    campaign: str
    workflow_type: str
    rule: str
    answers: int
    complete_items: int
    incomplete_items: int
    changed: int = 0
    review_campaign: str | None = None
    review_items_opened: int = 0
    statuses: dict[str, int] = Field(default_factory=dict)
    pending_adjudication: int | None = None
    table: list[dict[str, Any]] = Field(default_factory=list)


def _summary(campaign: Campaign, rule: str, answers: pd.DataFrame, complete: pd.DataFrame) -> AggregationSummary:
    n_complete = complete["item"].nunique()
    return AggregationSummary(
        campaign=campaign.name,
        workflow_type=campaign.workflow_type,
        rule=rule,
        answers=len(answers),
        complete_items=n_complete,
        incomplete_items=answers["item"].nunique() - n_complete,
    )


def _update_status(row: ScenarioStatus, values: dict[str, Any]) -> bool:
    """Write ``values`` onto an existing status row; True when anything changed.

    A weightier decision stands: crowd < expert < curator (see :data:`DECIDER_RANK`); a lighter writer updates its
    own fields but leaves status and decided_by alone.
    """
    if _rank(row.decided_by) > _rank(values.get("decided_by", "")):
        values = {key: value for key, value in values.items() if key not in ("status", "decided_by")}
    changed = {key: value for key, value in values.items() if getattr(row, key) != value}
    for key, value in changed.items():
        setattr(row, key, value)
    if changed:
        row.updated_at = utc_now()
    return bool(changed)


def _rank(decided_by: str) -> int:
    return DECIDER_RANK.get(decided_by.split(":", 1)[0], 0)


def _status_defaults() -> dict[str, Any]:
    """A new status row's columns before any decision: the model's defaults."""
    fields = ScenarioStatusBase.model_fields
    return {name: field.get_default(call_default_factory=True) for name, field in fields.items()}


def _write_statuses(session: Session, updates: dict[str, dict[str, Any]]) -> int:
    """Apply per-scenario status values; return how many rows were created or changed.

    Existing rows are loaded in one query and updated where a value differs; new rows go in as one bulk insert
    (building an ORM object per scenario would cost more than the rest of the write phase).
    """
    known: dict[str, ScenarioStatus] = {}
    if updates:
        query = select(ScenarioStatus).where(col(ScenarioStatus.scenario_id).in_(sorted(updates)))
        known = {row.scenario_id: row for row in session.execute(query).scalars()}
    now = utc_now()
    defaults = _status_defaults()  # a new row has no earlier decision to outrank its values
    created = [
        defaults | values | {"scenario_id": scenario_id, "updated_at": now}
        for scenario_id, values in updates.items()
        if scenario_id not in known
    ]
    changed = sum(
        _update_status(known[scenario_id], values) for scenario_id, values in updates.items() if scenario_id in known
    )
    if created:
        session.execute(insert(ScenarioStatus), created)
    session.flush()
    return len(created) + changed


def _scenario_of(answers: pd.DataFrame) -> dict[Any, str]:
    pairs = answers.drop_duplicates("item")
    return dict(zip(pairs["item"].tolist(), pairs["scenario_id"].tolist(), strict=True))


@dataclass(frozen=True)
class _Run:
    """One aggregation run of a campaign: the store, the campaign and its schema, the answers of its complete items,
    and the summary the rule's handler fills in."""

    session: Session
    campaign: Campaign
    schema: WorkflowSchema
    complete: pd.DataFrame
    summary: AggregationSummary


def _aggregate_majority(run: _Run, rule: MajorityRule) -> None:
    """Crowd vote: majority per single-choice question; ties and low agreement go to expert review."""
    session, campaign, complete, summary = run.session, run.campaign, run.complete, run.summary
    long = answers_by_question(complete, run.schema)
    choice_ids = [q.id for q in run.schema.questions if isinstance(q, SingleChoice) and q.id in set(long["question"])]
    if not choice_ids:
        return
    min_share = rule.min_agreement if rule.min_agreement is not None else 0.0
    per_question = [
        crowd_majority(long.loc[long["question"] == q, ["item", "value"]], min_share=min_share) for q in choice_ids
    ]
    primary = per_question[0].set_index("item")
    flagged = pd.concat([frame.set_index("item")["needs_expert_review"] for frame in per_question], axis=1)
    review = flagged.fillna(False).astype(bool).any(axis=1)
    if campaign.target_kind != "scenario":
        summary.table = table_records(per_question[0])
        return
    updates = _crowd_updates(campaign, primary, review, _scenario_of(complete), rule.on_tie == "expert_review")
    summary.changed = _write_statuses(session, updates)
    summary.statuses = dict(Counter(values["status"] for values in updates.values()))
    to_review = sorted(sid for sid, values in updates.items() if values["disagreement"])
    if rule.on_tie == "expert_review" and to_review:
        summary.review_campaign, summary.review_items_opened = open_review_items(session, campaign, to_review)
        summary.changed += summary.review_items_opened


def _crowd_updates(
    campaign: Campaign, primary: pd.DataFrame, review: pd.Series, scenario_of: dict[Any, str], to_experts: bool
) -> dict[str, dict[str, Any]]:
    updates: dict[str, dict[str, Any]] = {}
    disputed_items = review.to_dict()
    columns = (
        primary.index.tolist(),
        primary["decision"].tolist(),
        primary["votes"].tolist(),
        primary["top_share"].tolist(),
    )
    for item, decision, votes, top_share in zip(*columns, strict=True):
        disputed = bool(disputed_items.get(item, False))
        decision = decision if isinstance(decision, str) else None
        if disputed:
            status = "in_review" if to_experts else "needs_revision"
        else:
            status = VERDICT_STATUS.get(decision or "", "pending")
        updates[scenario_of[item]] = {
            "status": status,
            "decided_by": f"crowd:{campaign.name}",
            "crowd_decision": decision,
            "crowd_votes": int(votes),
            "crowd_agreement": round(float(top_share), 6),
            "disagreement": disputed,
        }
    return updates


def _aggregate_criteria(run: _Run, rule: CriteriaRule) -> None:
    """Expert review: majority per criterion; the scenario's status follows ``expert_review_status``."""
    complete = run.complete
    rows = [
        (item, reviewer, criterion, values[criterion])
        for item, reviewer, values in zip(complete["item"], complete["annotator"], complete["values"], strict=True)
        for criterion in rule.criteria
        if values.get(criterion) not in (None, "")
    ]
    if not rows or run.campaign.target_kind != "scenario":
        return
    verdicts = expert_review_status(
        pd.DataFrame(rows, columns=["item", "reviewer", "criterion", "passed"]), criteria=rule.criteria
    )
    scenario_of = _scenario_of(complete)
    updates = {
        scenario_of[row["item"]]: {
            "status": row["status"],
            "decided_by": f"expert:{run.campaign.name}",
            "expert_verdicts": {criterion: row[criterion] for criterion in rule.criteria},
        }
        for row in verdicts.to_dict("records")
    }
    run.summary.changed = _write_statuses(run.session, updates)
    run.summary.statuses = dict(Counter(values["status"] for values in updates.values()))


def _differs(old: float | None, new: float | None) -> bool:
    if old is None or new is None:
        return old is not new
    return abs(old - new) > 1e-9


def _aggregate_median(run: _Run, rule: MedianRule) -> None:
    """Adjudication: the experts' median rubric score is J_human; J_final = α·5S + (1−α)·J_human on the score."""
    session, complete, summary = run.session, run.complete, run.summary
    rubric = pd.DataFrame(
        {
            "item": complete["response_id"],
            "expert": complete["annotator"],
            "score": [values.get(rule.score) for values in complete["values"]],
        }
    ).dropna()
    if rule.yields == "J_human" and not rubric.empty:
        rubric["item"] = rubric["item"].astype(int)
        ids = sorted(set(rubric["item"]))
        rows = {
            row.response_id: row
            for row in session.execute(select(ScoreRow).where(col(ScoreRow.response_id).in_(ids))).scalars()
        }
        result = adjudicate(rubric, {rid: rows[rid].S if rid in rows else None for rid in ids})
        for item, j_human, j_final in zip(result["item"], result["J_human"], result["J_final"], strict=True):
            row = rows.get(int(item))
            new_final = None if pd.isna(j_final) else float(j_final)
            if row is not None and (_differs(row.J_human, float(j_human)) or _differs(row.J_final, new_final)):
                row.J_human, row.J_final, row.updated_at = float(j_human), new_final, utc_now()
                summary.changed += 1
        session.flush()
        summary.table = table_records(result)
    summary.pending_adjudication = pending_adjudication(session)


def pending_adjudication(session: Session) -> int:
    """Responses flagged for human adjudication that no expert panel has scored yet (J_human missing)."""
    query = (
        select(func.count(col(ResponseRow.id)))
        .join(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
        .where(col(ResponseRow.needs_adjudication).is_(True), col(ScoreRow.J_human).is_(None))
    )
    return int(session.execute(query).scalar_one())


def _values_frame(complete: pd.DataFrame, questions: list[str]) -> pd.DataFrame:
    return complete.assign(**{q: [values.get(q) for values in complete["values"]] for q in questions})


def _aggregate_mean(run: _Run, rule: MeanRule) -> None:
    """SAP safety (Table 3), instruction following (Fig. 7) or a plain mean per group: a table, nothing written.
    Table 3 and Fig. 7 are ``studio.results.tables``' definitions, the ones the research views use."""
    complete = run.complete
    if complete.empty:
        return
    if rule.majority_of:
        table = table3(safety_ratings(complete, rule), score_frame(run.session, campaign=run.campaign))
    elif "instruction_kind" in rule.group_by:
        table = instruction_following_table(instruction_ratings(complete, rule)).reset_index()
    else:
        frame = rated_answers(complete, rule)
        keys: list[str] = [key for key in rule.group_by if key in frame.columns] or ["item"]
        table = frame.groupby(keys, sort=True)[rule.score].mean().reset_index()
    run.summary.table = table_records(table)


def _aggregate_pairwise(run: _Run, rule: PairwiseRule) -> None:
    """Pairwise preference: position-balanced majority per pair of systems (a table, nothing written)."""
    session, campaign, complete = run.session, run.campaign, run.complete
    if complete.empty:
        return
    ids = set(complete["response_id"]) | set(complete["response_b_id"])
    names = {
        rid: f"{model}/{variant}"
        for rid, model, variant in session.execute(
            select(col(ResponseRow.id), col(ResponseRow.model), col(ResponseRow.variant)).where(
                col(ResponseRow.id).in_(sorted(ids))
            )
        )
    }
    votes = []
    for row in _values_frame(complete, [rule.choice]).to_dict("records"):
        first, second = int(row["response_id"]), int(row["response_b_id"])
        shown_a, shown_b = (
            (second, first) if pair_is_swapped(campaign.pair_seed, row["user_id"], row["item"]) else (first, second)
        )
        choice = "A" if row[rule.choice] == shown_a else "B" if row[rule.choice] == shown_b else "tie"
        votes.append(
            {
                "item": row["item"],
                "annotator": row["annotator"],
                "choice": choice,
                "system_a": names[shown_a],
                "system_b": names[shown_b],
            }
        )
    run.summary.table = table_records(pairwise_majority(pd.DataFrame(votes)))


#: Each aggregation rule's handler. Crowd vote and expert review count an item complete at the campaign's quota;
#: the others at the schema's ``min_people_per_item``.
_HANDLERS: dict[type, Callable[[_Run, Any], None]] = {
    MajorityRule: _aggregate_majority,
    CriteriaRule: _aggregate_criteria,
    MedianRule: _aggregate_median,
    MeanRule: _aggregate_mean,
    PairwiseRule: _aggregate_pairwise,
}


def _run_rule(
    session: Session, campaign: Campaign, schema: WorkflowSchema, answers: pd.DataFrame | None
) -> AggregationSummary:
    """Aggregate ``campaign``'s complete items by its schema's rule and return the filled-in summary."""
    rule = schema.aggregation
    answers = campaign_answers(session, campaign) if answers is None else answers
    quota = completion_quota(
        rule, people_per_item=campaign.people_per_item, min_people_per_item=schema.min_people_per_item
    )
    complete = complete_answers(answers, quota=quota, closed=campaign.status == "closed")
    summary = _summary(campaign, rule.rule, answers, complete)
    _HANDLERS[type(rule)](_Run(session, campaign, schema, complete, summary), rule)
    return summary


def aggregate_campaign(
    session: Session, *, campaign: str, actor: str = "aggregate", answers: pd.DataFrame | None = None
) -> AggregationSummary:
    """Aggregate one campaign by its schema snapshot's rule and write the outcome (see the module docstring).

    ``actor`` names who ran it in the audit log (who *may* run it is ``studio.policies.CurationPolicy.aggregate``,
    checked by ``studio.usecases.curate``). ``answers``: the campaign's answers as :func:`answers_to_aggregate` read
    them (default: read them here). Idempotent: a second run over the same answers reports ``changed == 0``.
    ``NotFound`` for an unknown campaign.
    """
    found = get_campaign(session, campaign)
    summary = _run_rule(session, found, campaign_schema(found), answers)
    if summary.changed:
        session.add(
            AuditLog(
                actor=actor,
                action="campaign.aggregate",
                entity="campaign",
                entity_id=found.name,
                detail={"changed": summary.changed, "statuses": summary.statuses},
            )
        )
        session.flush()
    logger.info("aggregated %s: %d answers, %d changed", found.name, summary.answers, summary.changed)
    return summary


def aggregate_all(
    session: Session, *, actor: str = "aggregate", answers: Mapping[str, pd.DataFrame] | None = None
) -> list[AggregationSummary]:
    """Aggregate every campaign, oldest first (review campaigns opened on the way are aggregated too).

    ``answers``: campaign name → its answers as :func:`answers_to_aggregate` read them; others are read here.
    """
    summaries: list[AggregationSummary] = []
    done: set[int] = set()
    while True:
        pending = session.execute(select(col(Campaign.id), col(Campaign.name)).order_by(col(Campaign.id))).all()
        todo = [(cid, name) for cid, name in pending if cid not in done]
        if not todo:
            return summaries
        for campaign_id, name in todo:
            done.add(campaign_id)
            summaries.append(aggregate_campaign(session, campaign=name, actor=actor, answers=(answers or {}).get(name)))


def answers_to_aggregate(session: Session, *, campaign: str | None = None) -> dict[str, pd.DataFrame]:
    """The answers of ``campaign`` (every campaign when None) by campaign name, read for a later write session.

    ``NotFound`` for an unknown campaign.
    """
    names = [campaign] if campaign is not None else list(session.execute(select(col(Campaign.name))).scalars())
    return {name: campaign_answers(session, get_campaign(session, name)) for name in names}


def aggregate(engine: Engine, *, campaign: str | None = None, actor: str = "aggregate") -> list[AggregationSummary]:
    """Aggregate ``campaign`` (every campaign when None): answers read first, then one write transaction.

    The same outcome as :func:`aggregate_campaign` / :func:`aggregate_all` in one write session, with the write lock
    held only for the rules and the writes (see the module docstring).
    """
    from studio.db import read_session, write_session

    with read_session(engine) as session:
        answers = answers_to_aggregate(session, campaign=campaign)
    with write_session(engine) as session:
        return write_aggregation(session, campaign=campaign, actor=actor, answers=answers)


def write_aggregation(
    session: Session, *, campaign: str | None, actor: str, answers: Mapping[str, pd.DataFrame]
) -> list[AggregationSummary]:
    """The write half of :func:`aggregate`: apply the rules to ``answers`` (of :func:`answers_to_aggregate`)."""
    if campaign is not None:
        return [aggregate_campaign(session, campaign=campaign, actor=actor, answers=answers[campaign])]
    return aggregate_all(session, actor=actor, answers=answers)
