"""The two aggregation rules that decide scenarios: the crowd's majority vote and the experts' review per criterion.

Each writes its *side* of every decided scenario (:mod:`studio.services.scenario_status`); the status follows from
both sides by the rules the workflows state (:mod:`studio.results.decisions`). Only the answers of decided items
reach here (:func:`studio.results.aggregate.complete_answers`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlmodel import Session, col

from studio.models import Campaign, ScenarioRow
from studio.results.aggregate import crowd_majority, expert_review_status
from studio.results.consensus import compare_methods
from studio.results.decisions import CrowdSide, ExpertSide, agreement, label_action, strict_majority
from studio.results.store_views import answers_by_question
from studio.rules import CriteriaRule, MajorityRule
from studio.services.review import open_review_items
from studio.services.scenario_status import write_sides
from studio.workflows import SingleChoice, WorkflowSchema


def table_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A result table as records with text column names (the summary's ``table``)."""
    return [{str(name): value for name, value in row.items()} for row in frame.to_dict("records")]


class AggregationSummary(BaseModel):
    """What one aggregation run found and changed. ``changed`` counts rows written by this run; ``below_quota``
    the answered items left undecided because they are short of their quota."""

    campaign: str
    workflow_type: str
    rule: str
    #: The rule in words (``studio.rules``) and, for a closed campaign, what became of its items below quota.
    statement: str = ""
    answers: int
    complete_items: int
    incomplete_items: int
    below_quota: int = 0
    changed: int = 0
    review_campaign: str | None = None
    review_items_opened: int = 0
    statuses: dict[str, int] = Field(default_factory=dict)
    labels: dict[str, int] = Field(default_factory=dict)
    pending_adjudication: int | None = None
    table: list[dict[str, Any]] = Field(default_factory=list)


@dataclass(frozen=True)
class Run:
    """One aggregation run of a campaign: the store, the campaign and its schema, the answers of its decided items,
    and the summary the rule's handler fills in."""

    session: Session
    campaign: Campaign
    schema: WorkflowSchema
    complete: pd.DataFrame
    summary: AggregationSummary
    #: The majority beside the rule's crowd models on the decision question (:func:`crowd_models`), fitted where the
    #: answers were read, so that the write session only writes; None when the rule asks for no model.
    models: pd.DataFrame | None = None


def scenario_of(answers: pd.DataFrame) -> dict[Any, str]:
    pairs = answers.drop_duplicates("item")
    return dict(zip(pairs["item"].tolist(), pairs["scenario_id"].tolist(), strict=True))


def _counts(long: pd.DataFrame, question: str) -> dict[Any, dict[str, int]]:
    """Votes per item and value of ``question`` (empty answers are no votes)."""
    asked = long[(long["question"] == question) & long["value"].notna()]
    asked = asked[asked["value"].astype(str).str.strip() != ""]
    tally: dict[Any, dict[str, int]] = {}
    sizes = asked.groupby(["item", "value"], sort=True).size()
    for (item, value), count in zip(sizes.index.tolist(), sizes.tolist(), strict=True):
        tally.setdefault(item, {})[str(value)] = int(count)
    return tally


def _choice_questions(long: pd.DataFrame, schema: WorkflowSchema, rule: MajorityRule) -> list[str]:
    """The single-choice questions the crowd voted on, the classification's left out: the first one is the decision
    question."""
    label_question = rule.classification.question if rule.classification else None
    voted = set(long["question"])
    return [q.id for q in schema.questions if isinstance(q, SingleChoice) and q.id in voted and q.id != label_question]


@dataclass(frozen=True)
class FittedModels:
    """The crowd models of one campaign (:func:`crowd_models`) and the decided items they were fitted on."""

    table: pd.DataFrame | None
    items: frozenset[Any]

    def fits(self, complete: pd.DataFrame) -> bool:
        """Whether these models were fitted on exactly the decided items of ``complete``."""
        return self.items == frozenset(complete["item"])


def crowd_models(complete: pd.DataFrame, *, schema: WorkflowSchema) -> FittedModels:
    """The majority beside the schema's crowd models on its decision question, indexed by item (:func:`model_table`;
    None unless the rule is a majority asking for models), fitted on ``complete`` (the answers of decided items).

    The read half of an aggregation run calls it (``studio.services.aggregation.answers_to_aggregate``): fitting the
    models is the costly part (seconds on 93,000 votes), and SQLite's write lock must not wait for it."""
    rule, items = schema.aggregation, frozenset(complete["item"]) if "item" in complete else frozenset()
    if not isinstance(rule, MajorityRule) or not rule.models or complete.empty:
        return FittedModels(None, items)
    long = answers_by_question(complete, schema)
    choice_ids = _choice_questions(long, schema, rule)
    return FittedModels(model_table(long, rule=rule, question=choice_ids[0]) if choice_ids else None, items)


@dataclass(frozen=True)
class ScenarioWrites:
    """The sides a scenario-deciding run writes, worked out before the write lock is taken: scenario id → columns
    (:func:`studio.services.scenario_status.write_sides`), the scenarios to open for expert review (``to_review``,
    ``first`` of them ahead of the others) and the classification's action (its ``label_action`` follows each
    scenario's subtask as stored when it is written: :func:`write_chunk`)."""

    updates: dict[str, dict[str, Any]]
    to_review: list[str] = field(default_factory=list)
    first: list[str] = field(default_factory=list)
    action: str | None = None


def aggregate_majority(run: Run, rule: MajorityRule) -> None:
    """Crowd vote: the first single-choice question's majority decides (a tie or low agreement on any voted question
    but the classification sends the item to expert review); the classification question's strict majority is
    applied or flagged (:class:`studio.rules.Classification`). The models beside it come fitted in ``run.models``."""
    writes = majority_writes(run, rule)
    if writes is not None:
        apply_writes(run, writes)


def majority_writes(run: Run, rule: MajorityRule) -> ScenarioWrites | None:
    """What :func:`aggregate_majority` writes, computed without writing (None when it writes nothing; a run on
    other targets than scenarios gets its table in ``run.summary``)."""
    long = answers_by_question(run.complete, run.schema)
    choice_ids = _choice_questions(long, run.schema, rule)
    if not choice_ids:
        return None
    min_share = rule.min_agreement if rule.min_agreement is not None else 0.0
    per_question = [
        crowd_majority(long.loc[long["question"] == q, ["item", "value"]], min_share=min_share) for q in choice_ids
    ]
    if run.campaign.target_kind != "scenario":
        run.summary.table = table_records(per_question[0])
        return None
    # Under a model's rule the model names a label for every item: the majority's tie / low share on the decision
    # question disputes nothing (it is shown beside, and flagged 'models disagree' where it differs).
    flags = [frame.set_index("item")["needs_expert_review"] for frame in per_question]
    flags = flags if rule.rule == "majority" else flags[1:]
    disputed = pd.concat(flags, axis=1).fillna(False).astype(bool).any(axis=1).to_dict() if flags else {}
    updates = _crowd_updates(run, rule, per_question[0], disputed, long, choice_ids[0])
    to_review, first = _to_review(rule, updates)
    action = rule.classification.action if rule.classification else None
    return ScenarioWrites(updates, to_review, first, action)


def write_chunk(session: Session, writes: ScenarioWrites, scenario_ids: list[str]) -> tuple[int, Counter[str]]:
    """Write the sides of ``scenario_ids`` (of ``writes``) in ``session``; return the rows created or changed and the
    statuses they have now. The classification's ``label_action`` is worked out here, on the subtasks as stored now
    (a curator may have changed one since the answers were read)."""
    chunk = {sid: writes.updates[sid] for sid in scenario_ids}
    if writes.action is not None:
        subtasks = _subtasks(session, sorted(chunk))
        for sid, values in chunk.items():
            current = subtasks.get(sid, "")
            values["label_action"] = label_action(label=values["crowd_label"], current=current, action=writes.action)
    return write_sides(session, chunk)


def apply_writes(run: Run, writes: ScenarioWrites) -> None:
    """Write all of ``writes`` in ``run.session`` and open its review items there, filling in ``run.summary``."""
    write_all(run.session, run.campaign, writes, run.summary)


def write_all(session: Session, campaign: Campaign, writes: ScenarioWrites, summary: AggregationSummary) -> None:
    """Write all of ``writes`` in ``session`` and open its review items there, filling in ``summary``."""
    summary.changed, statuses = write_chunk(session, writes, list(writes.updates))
    summary.statuses = dict(statuses)
    summary.labels = labels_of(writes)
    open_reviews(session, campaign, writes, summary)


def labels_of(writes: ScenarioWrites) -> dict[str, int]:
    """How many scenarios each classification action applies to (as last written)."""
    return dict(Counter(v["label_action"] for v in writes.updates.values() if v.get("label_action")))


def model_table(long: pd.DataFrame, *, rule: MajorityRule, question: str) -> pd.DataFrame | None:
    """The majority beside the rule's models on ``question`` (:func:`studio.results.consensus.compare_methods`),
    indexed by item; None when the rule asks for no model or nobody voted on it."""
    votes = long.loc[long["question"] == question, ["item", "annotator", "value"]]
    if not rule.models or votes.empty:
        return None
    return compare_methods(votes, methods=rule.models).set_index("item")


def _model_rows(models: pd.DataFrame | None) -> dict[Any, dict[Any, Any]]:
    """The models' table (of :func:`model_table`) as item → row (one conversion, not a ``.loc`` per item)."""
    return {} if models is None else dict(models.to_dict("index"))


def _model_fields(models: dict[Any, dict[Any, Any]], item: Any) -> dict[str, Any]:
    """The crowd side's ``models`` ({name: {decision, posterior}}) and ``models_disagree`` for one item, from
    :func:`_model_rows`.

    Posteriors are rounded to 6 places so that a re-run over the same answers writes nothing."""
    row = models.get(item)
    if row is None:
        return {}
    names = [str(column) for column in row if f"{column}_posterior" in row]
    decided = {
        name: {"decision": str(row[name]), "posterior": round(float(row[f"{name}_posterior"]), 6)} for name in names
    }
    return {"models": decided, "models_disagree": bool(row["models_disagree"])}


def _to_review(rule: MajorityRule, updates: dict[str, dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The scenarios to open for expert review: disputed ones (where the rule sends them) and every scenario whose
    models disagree (the rule's statement says they go to expert review first: they are put ahead of the others);
    returns (all of them, those to put first)."""
    disagreeing = sorted(sid for sid, values in updates.items() if values["crowd"]["models_disagree"])
    disputed = sorted(sid for sid, values in updates.items() if values["crowd"]["disputed"])
    to_review = disagreeing + [sid for sid in disputed if sid not in disagreeing and rule.on_tie == "expert_review"]
    return to_review, disagreeing


def open_reviews(session: Session, campaign: Campaign, writes: ScenarioWrites, summary: AggregationSummary) -> None:
    """Open the expert-review items of ``writes`` (:func:`studio.services.review.open_review_items`), counted in
    ``summary``."""
    if not writes.to_review:
        return
    opened = open_review_items(session, campaign, writes.to_review, first=writes.first)
    summary.review_campaign, summary.review_items_opened = opened.campaign, opened.added
    summary.changed += opened.added + opened.moved


def _subtasks(session: Session, scenario_ids: list[str]) -> dict[str, str]:
    query = select(col(ScenarioRow.id), col(ScenarioRow.subtask)).where(col(ScenarioRow.id).in_(scenario_ids))
    return {sid: subtask for sid, subtask in session.execute(query).all()}


def _crowd_updates(
    run: Run,
    rule: MajorityRule,
    primary: pd.DataFrame,
    disputed: dict[Any, bool],
    long: pd.DataFrame,
    question: str,
) -> dict[str, dict[str, Any]]:
    """Each decided scenario's crowd side (and the columns the Curate list filters on)."""
    classification = rule.classification
    counts = _counts(long, question)
    labels = _counts(long, classification.question) if classification else {}
    scenario_ids = scenario_of(run.complete)
    fixed = _side_fields(run, rule, question)
    updates: dict[str, dict[str, Any]] = {}
    models = _model_rows(run.models)
    for row in primary.to_dict("records"):
        item, beside = row["item"], _model_fields(models, row["item"])
        scenario_id, decision = scenario_ids[item], _published(rule, row, beside)
        side = CrowdSide(
            **fixed,
            **beside,
            counts=counts.get(item, {}),
            decision=decision,
            disputed=bool(disputed.get(item, False)),
            label_counts=labels.get(item, {}),
        )
        label = strict_majority(side.label_counts) if classification else None
        updates[scenario_id] = {
            "crowd": side.to_store(),
            "crowd_decision": decision,
            "crowd_votes": int(row["votes"]),
            "crowd_agreement": agreement(votes=int(row["votes"]), top_share=float(row["top_share"])),
            "models_disagree": side.models_disagree,
            "crowd_label": label,
            "label_action": None,  # set on the stored subtask by write_chunk
        }
    return updates


def _side_fields(run: Run, rule: MajorityRule, question: str) -> dict[str, Any]:
    """The crowd side's fields that every item of this run shares."""
    return {
        "campaign": run.campaign.name,
        "question": question,
        "to_experts": rule.on_tie == "expert_review",
        "label_question": rule.classification.question if rule.classification else None,
        "rule": rule.rule,
    }


def _published(rule: MajorityRule, row: Mapping[Any, Any], beside: Mapping[str, Any]) -> str | None:
    """The decision question's published decision: the majority's (None on a tie) or, under a model's rule, that
    model's (the workflow's explicit choice, stated where it is shown)."""
    if rule.rule != "majority" and beside:
        return str(beside["models"][rule.rule]["decision"])
    return row["decision"] if isinstance(row["decision"], str) else None


def aggregate_criteria(run: Run, rule: CriteriaRule) -> None:
    """Expert review: majority per criterion gives the panel's outcome (its side); the status follows both sides."""
    writes = criteria_writes(run, rule)
    if writes is not None:
        apply_writes(run, writes)


def criteria_writes(run: Run, rule: CriteriaRule) -> ScenarioWrites | None:
    """What :func:`aggregate_criteria` writes, computed without writing (None when it writes nothing)."""
    complete = run.complete
    rows = [
        (item, reviewer, criterion, values[criterion])
        for item, reviewer, values in zip(complete["item"], complete["annotator"], complete["values"], strict=True)
        for criterion in rule.criteria
        if values.get(criterion) not in (None, "")
    ]
    if not rows or run.campaign.target_kind != "scenario":
        return None
    verdicts = expert_review_status(
        pd.DataFrame(rows, columns=["item", "reviewer", "criterion", "passed"]), criteria=rule.criteria
    )
    reviewers = complete.groupby("item")["annotator"].nunique().to_dict()
    scenario_ids = scenario_of(complete)
    updates = {}
    for row in verdicts.to_dict("records"):
        side = ExpertSide(
            campaign=run.campaign.name,
            status=row["status"],
            reviewers=int(reviewers[row["item"]]),
            verdicts={criterion: row[criterion] for criterion in rule.criteria},
            with_crowd=rule.with_crowd,
        )
        updates[scenario_ids[row["item"]]] = {"experts": side.to_store(), "expert_verdicts": side.verdicts}
    return ScenarioWrites(updates)
