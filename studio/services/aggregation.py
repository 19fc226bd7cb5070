"""Aggregating a campaign's answers by its schema's rule, and writing the outcome to the store.

* ``majority`` (crowd vote) and ``majority_per_criterion`` (expert review): each writes its side of the scenarios it
  decided, and the status follows from both sides by the stated rules (:mod:`studio.services.aggregation_scenarios`,
  :mod:`studio.results.decisions`); a crowd tie or agreement below ``min_agreement`` opens an item in an open
  ``expert_review`` campaign (created as ``<campaign>-review`` when none is open).
* ``median`` yielding ``J_human`` (adjudication): median rubric score → J_human → J_final, written to the score.
* ``mean`` (SAP safety, instruction following) and ``pairwise_majority``: tables only (nothing is written).

Only *decided* items count: answered by the campaign's quota (:func:`studio.services.progress.complete_at`); a closed
campaign's items below quota only where whoever closed it chose so. Every write compares first, so a second run
changes nothing; a status set by a curator is never overwritten by aggregation.

Reading the answers and fitting the crowd models on them (Dawid–Skene, MACE: about 2 s on 93,000 votes) are the long
parts of a run, and so is a report-only rule's whole run (``mean``, ``pairwise_majority``: Table 3's bootstrap
intervals take about 1 s at the paper's size): :func:`aggregate` (and the API route) does these in a read session
first (:func:`answers_to_aggregate`), where it also works out what a scenario-deciding rule writes (the crowd or
expert sides, labels and review items: :class:`Planned`), and writes in a second phase, so that on SQLite the write
lock, which every submit waits for, is not held meanwhile. :func:`aggregate` writes in short transactions of 500
scenarios (:mod:`studio.services.aggregation_chunks`); :func:`write_aggregation` in the one session it is given.
Answers stored or revised in between count at the next run, as those stored just after a run do (statuses follow them
then; an expert-review item once opened stays open). Models fitted on other decided items than the write session
decides (the campaign was closed in between) are fitted again there, and a report or plan made before the campaign
was opened or closed is made again, so the outcome is the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from sqlalchemy import Engine, select
from sqlmodel import Session, col

from studio.models import Campaign, ResponseRow
from studio.results.aggregate import complete_answers, pairwise_majority
from studio.results.store_views import campaign_answers, score_frame
from studio.results.table_intervals import table3_intervals
from studio.results.tables import (
    instruction_following_table,
    instruction_ratings,
    rated_answers,
    safety_ratings,
)
from studio.rules import CriteriaRule, MajorityRule, MeanRule, MedianRule, PairwiseRule
from studio.services.aggregation_adjudication import aggregate_median, pending_adjudication
from studio.services.aggregation_chunks import Planned, audit_aggregation, campaign_state, plan_key, write_chunks
from studio.services.aggregation_scenarios import (
    AggregationSummary,
    FittedModels,
    Run,
    ScenarioWrites,
    aggregate_criteria,
    aggregate_majority,
    criteria_writes,
    crowd_models,
    majority_writes,
    table_records,
    write_all,
)
from studio.services.content import pair_is_swapped
from studio.services.progress import complete_at
from studio.services.queue import campaign_schema, get_campaign

__all__ = [
    "AggregationSummary",
    "AnswersRead",
    "aggregate",
    "aggregate_all",
    "aggregate_campaign",
    "answers_to_aggregate",
    "pending_adjudication",
]

logger = logging.getLogger(__name__)


def _summary(campaign: Campaign, rule: str, answers: pd.DataFrame, complete: pd.DataFrame) -> AggregationSummary:
    n_complete = complete["item"].nunique()
    below = answers["item"].nunique() - n_complete
    return AggregationSummary(
        campaign=campaign.name,
        workflow_type=campaign.workflow_type,
        rule=rule,
        answers=len(answers),
        complete_items=n_complete,
        incomplete_items=below,
        below_quota=below,
    )


def _closed_words(campaign: Campaign, below_quota: int) -> str:
    """What a closed campaign's rule did with its items below quota (nothing to say while it is open)."""
    if campaign.status != "closed":
        return ""
    if campaign.decide_below_quota:
        return " Closed with 'decide the items below quota': every answered item was decided on the answers it has."
    return f" Closed: its {below_quota} item(s) below quota stay undecided."


def _values_frame(complete: pd.DataFrame, questions: list[str]) -> pd.DataFrame:
    return complete.assign(**{q: [values.get(q) for values in complete["values"]] for q in questions})


def _aggregate_mean(run: Run, rule: MeanRule) -> None:
    """SAP safety (Table 3), instruction following (Fig. 7) or a plain mean per group: a table, nothing written.
    Table 3 (with its intervals, ``studio.results.table_intervals``) and Fig. 7 are the definitions the research views
    use."""
    complete = run.complete
    if run.campaign.target_kind == "live_session":  # sessions are rated: the variant is the session's
        from studio.services.live_results import live_summary_records

        run.summary.table = live_summary_records(run.session, campaign=run.campaign)
        return
    if complete.empty:
        return
    if rule.majority_of:
        table = table3_intervals(safety_ratings(complete, rule), score_frame(run.session, campaign=run.campaign))
    elif "instruction_kind" in rule.group_by:
        table = instruction_following_table(instruction_ratings(complete, rule)).reset_index()
    else:
        frame = rated_answers(complete, rule)
        keys: list[str] = [key for key in rule.group_by if key in frame.columns] or ["item"]
        table = frame.groupby(keys, sort=True)[rule.score].mean().reset_index()
    run.summary.table = table_records(table)


def _aggregate_pairwise(run: Run, rule: PairwiseRule) -> None:
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
_HANDLERS: dict[type, Callable[[Run, Any], None]] = {
    MajorityRule: aggregate_majority,
    CriteriaRule: aggregate_criteria,
    MedianRule: aggregate_median,
    MeanRule: _aggregate_mean,
    PairwiseRule: _aggregate_pairwise,
}


#: The rules that only report a table and write nothing: their whole run (Table 3's bootstrap intervals among it,
#: about 1 s at the paper's size) happens in the read half, so the write lock is never held for it.
_REPORT_ONLY: tuple[type, ...] = (MeanRule, PairwiseRule)
#: A report-only campaign's summary, finished in the read half, with the campaign's state it was made in
#: (:func:`~studio.services.aggregation_chunks.campaign_state`).
Report = tuple[tuple[str, bool], AggregationSummary]
#: The rules that decide scenarios, and what works out their writes without writing (in the read half).
_WRITERS: dict[type, Callable[[Run, Any], ScenarioWrites | None]] = {
    MajorityRule: majority_writes,
    CriteriaRule: criteria_writes,
}


class AnswersRead(dict[str, pd.DataFrame]):
    """What the read half of a run found (:func:`answers_to_aggregate`): the answers by campaign name, a plain
    ``dict`` of them to whoever passes it on, and beside them each campaign's crowd models (``models``: name →
    :class:`~studio.services.aggregation_scenarios.FittedModels`), fitted on its decided items in the read session,
    the finished summary of each campaign whose rule only reports (``reports``: name → :data:`Report`) and the writes
    worked out for each campaign whose rule decides scenarios (``plans``: name → :class:`Planned`)."""

    def __init__(self) -> None:
        super().__init__()
        self.models: dict[str, FittedModels] = {}
        self.reports: dict[str, Report] = {}
        self.plans: dict[str, Planned] = {}


def _run_rule(
    session: Session, campaign: Campaign, *, answers: pd.DataFrame | None, fitted: FittedModels | None
) -> AggregationSummary:
    """Aggregate ``campaign``'s complete items by its schema's rule and return the filled-in summary; the crowd models
    are ``fitted`` where they were fitted on these very items, else fitted here."""
    run, rule = _prepared(session, campaign, answers=answers, fitted=fitted)
    _HANDLERS[type(rule)](run, rule)
    return run.summary


def _plan_rule(session: Session, campaign: Campaign, *, answers: pd.DataFrame, fitted: FittedModels) -> Planned:
    """What :func:`_run_rule` would write for a scenario-deciding rule, worked out without writing."""
    run, rule = _prepared(session, campaign, answers=answers, fitted=fitted)
    writes = _WRITERS[type(rule)](run, rule)
    return Planned(plan_key(campaign), run.summary, writes or ScenarioWrites({}))


def _prepared(
    session: Session, campaign: Campaign, *, answers: pd.DataFrame | None, fitted: FittedModels | None
) -> tuple[Run, Any]:
    """The run of ``campaign``'s rule on its complete items (summary begun, models fitted), and the rule."""
    schema = campaign_schema(campaign)
    rule = schema.aggregation
    answers = campaign_answers(session, campaign) if answers is None else answers
    complete = complete_answers(answers, quota=complete_at(campaign))
    if fitted is None or not fitted.fits(complete):
        fitted = crowd_models(complete, schema=schema)
    summary = _summary(campaign, rule.rule, answers, complete)
    stopping = f" {schema.stopping.statement()}" if schema.stopping else ""
    summary.statement = rule.statement() + stopping + _closed_words(campaign, summary.below_quota)
    return Run(session, campaign, schema, complete, summary, fitted.table), rule


def aggregate_campaign(
    session: Session,
    *,
    campaign: str,
    actor: str = "aggregate",
    answers: pd.DataFrame | None = None,
    fitted: FittedModels | None = None,
    reported: Report | None = None,
    planned: Planned | None = None,
) -> AggregationSummary:
    """Aggregate one campaign by its schema snapshot's rule and write the outcome (see the module docstring).

    ``actor`` names who ran it in the audit log (who *may* run it is ``studio.policies.CurationPolicy.aggregate``,
    checked by ``studio.usecases.curate``). ``answers``: the campaign's answers as :func:`answers_to_aggregate` read
    them (default: read them here); ``fitted``: the crowd models it fitted on them (default, or fitted on other
    items: fitted here); ``reported``: the summary the read half finished for a report-only rule (used as is unless the
    campaign was opened, closed or reclosed since); ``planned``: the writes it worked out for a scenario-deciding rule
    (written as they are, on the same condition). Idempotent: a second run over the same answers reports
    ``changed == 0``.
    ``NotFound`` for an unknown campaign.
    """
    found = get_campaign(session, campaign)
    if reported is not None and reported[0] == campaign_state(found):
        summary = reported[1]
    elif planned is not None and planned.key == plan_key(found):
        summary = planned.summary.model_copy(deep=True)
        write_all(session, found, planned.writes, summary)
    else:
        summary = _run_rule(session, found, answers=answers, fitted=fitted)
    audit_aggregation(session, found, summary, actor=actor)
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
            summaries.append(_aggregate_read(session, campaign=name, actor=actor, answers=answers))


def _reported(answers: Mapping[str, pd.DataFrame] | None, name: str) -> Report | None:
    """The report the read half finished for campaign ``name``, if ``answers`` came from it."""
    return answers.reports.get(name) if isinstance(answers, AnswersRead) else None


def _aggregate_read(
    session: Session, *, campaign: str, actor: str, answers: Mapping[str, pd.DataFrame] | None
) -> AggregationSummary:
    """:func:`aggregate_campaign` of ``campaign`` with what the read half found for it in ``answers`` (if anything)."""
    read, fitted, reported = (answers or {}).get(campaign), _fitted(answers, campaign), _reported(answers, campaign)
    planned = answers.plans.get(campaign) if isinstance(answers, AnswersRead) else None
    return aggregate_campaign(
        session, campaign=campaign, actor=actor, answers=read, fitted=fitted, reported=reported, planned=planned
    )


def _fitted(answers: Mapping[str, pd.DataFrame] | None, name: str) -> FittedModels | None:
    """The crowd models the read half fitted for campaign ``name``, if ``answers`` came from it."""
    return answers.models.get(name) if isinstance(answers, AnswersRead) else None


def answers_to_aggregate(session: Session, *, campaign: str | None = None) -> AnswersRead:
    """The answers of ``campaign`` (every campaign when None) by campaign name, read for a later write session, with
    each campaign's crowd models fitted on its decided items (:class:`AnswersRead`).

    ``NotFound`` for an unknown campaign.
    """
    names = [campaign] if campaign is not None else list(session.execute(select(col(Campaign.name))).scalars())
    read = AnswersRead()
    for name in names:
        found = get_campaign(session, name)
        read[name] = campaign_answers(session, found)
        schema = campaign_schema(found)
        complete = complete_answers(read[name], quota=complete_at(found))
        read.models[name] = crowd_models(complete, schema=schema)
        if isinstance(schema.aggregation, _REPORT_ONLY):
            summary = _run_rule(session, found, answers=read[name], fitted=read.models[name])
            read.reports[name] = (campaign_state(found), summary)
        elif type(schema.aggregation) in _WRITERS:
            read.plans[name] = _plan_rule(session, found, answers=read[name], fitted=read.models[name])
    return read


def aggregate(engine: Engine, *, campaign: str | None = None, actor: str = "aggregate") -> list[AggregationSummary]:
    """Aggregate ``campaign`` (every campaign when None): answers read and the writes worked out first, then written
    in short write transactions (:func:`write_in_chunks`).

    The same outcome as :func:`aggregate_campaign` / :func:`aggregate_all` in one write session, with the write lock
    held only for a chunk's writes at a time (see the module docstring).
    """
    from studio.db import read_session

    with read_session(engine) as session:
        answers = answers_to_aggregate(session, campaign=campaign)
    return write_in_chunks(engine, campaign=campaign, actor=actor, answers=answers)


def write_in_chunks(
    engine: Engine, *, campaign: str | None, actor: str, answers: AnswersRead, chunk: int | None = None
) -> list[AggregationSummary]:
    """The write half of :func:`aggregate`: what ``answers`` (of :func:`answers_to_aggregate`) decides for
    ``campaign`` (every campaign when None, oldest first; review campaigns opened on the way too), written in short
    transactions of ``chunk`` scenarios (:mod:`studio.services.aggregation_chunks`); the summaries equal the
    one-transaction run's."""

    def one_transaction(session: Session, name: str) -> AggregationSummary:
        return _aggregate_read(session, campaign=name, actor=actor, answers=answers)

    return write_chunks(
        engine, campaign=campaign, actor=actor, plans=answers.plans, one_transaction=one_transaction, chunk=chunk
    )


def write_aggregation(
    session: Session, *, campaign: str | None, actor: str, answers: Mapping[str, pd.DataFrame]
) -> list[AggregationSummary]:
    """The write half of :func:`aggregate`: apply the rules to ``answers`` (of :func:`answers_to_aggregate`, whose
    crowd models are used as fitted and whose report-only summaries as finished; other answers have theirs fitted
    and run here)."""
    if campaign is not None:
        return [_aggregate_read(session, campaign=campaign, actor=actor, answers=answers)]
    return aggregate_all(session, actor=actor, answers=answers)
