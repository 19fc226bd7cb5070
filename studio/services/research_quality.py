"""How far the evaluation has come and how far its scores and votes can be trusted: judge-vs-human calibration,
agreement per campaign question, progress per campaign and annotator, and score distributions. Read-only; who may
read them is ``studio.policies.ResultsPolicy``, checked by ``studio.usecases.research``.

Scores are read for one variant, one score signature and one judge, as the leaderboard reads them: two of one kind
never mix in one figure (``pipeline.leaderboard.select_rows``' rule). "Complete" items are those
``studio.results.aggregate.complete_answers`` counts — the rule aggregation, Table 3, Fig. 7 and, by default,
agreement use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sqlalchemy import func, select
from sqlmodel import Session, col

from pipeline.leaderboard import awaiting_adjudication
from pipeline.taxonomy import JUDGE_SCORE_NAMES, JUDGE_SCORES, METRICS
from studio.errors import InvalidInput, NotFound
from studio.models import Answer, Campaign, Item, User
from studio.results.agreement import (
    ItemSet,
    agreement_by_question,
    annotator_agreement,
    choose_items,
    code_ratings,
    gold_accuracy,
)
from studio.results.calibration import Calibration, judge_human_calibration
from studio.results.coincidence import LEVELS, Level
from studio.results.consensus import rater_reliability
from studio.results.defaults import DEFAULT_RESAMPLES
from studio.results.store_views import (
    answers_by_question,
    campaign_answers,
    campaign_items,
    gold_values,
    question_levels,
    score_frame,
)
from studio.services.progress import campaign_progress, complete_at, complete_words
from studio.services.queue import campaign_schema, get_campaign
from studio.services.research import choose_rows, mask_awaiting_adjudication, with_judge_labels

#: Score columns a distribution can be drawn of, with their range.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    metric.name: (metric.low, metric.high) for metric in (*METRICS, *JUDGE_SCORES)
}
#: Metrics that come from the judge (a distribution of one of them is drawn for one judge).
JUDGE_METRICS: frozenset[str] = frozenset(JUDGE_SCORE_NAMES)
#: What :func:`calibration` loads per score row.
CALIBRATION_COLUMNS: tuple[str, ...] = (
    "scenario_id",
    "model",
    "variant",
    "subtask",
    "J_judge",
    "J_human",
    "needs_adjudication",
    "signature",
    "judge_model",
    "judge_prompt_version",
)
#: The paired rows :func:`calibration` returns.
PAIR_COLUMNS: list[str] = ["scenario_id", "model", "variant", "subtask", "J_judge", "J_human"]


def one_scoring(rows: pd.DataFrame, *, signature: str | None, judge: str | None) -> pd.DataFrame:
    """``rows`` (with signature and judge columns) of one score signature and one judge
    (``studio.services.research.choose_rows``); variants are left alone (the caller filters them)."""
    return rows.loc[choose_rows(rows.assign(variant=None), signature=signature, judge=judge).index]


@dataclass(frozen=True)
class CalibrationView:
    """Judge vs human for one variant, signature and judge: the statistics over the items scored by both, those
    paired rows (:data:`PAIR_COLUMNS`), and the counts that say why there are so few: items the experts adjudicated,
    adjudicated items without a judge score, and flagged items still awaiting adjudication."""

    statistics: Calibration
    rows: pd.DataFrame
    adjudicated: int
    adjudicated_without_judge: int
    awaiting: int


def calibration(
    session: Session, *, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> CalibrationView:
    """Judge vs human on adjudicated items (both J_judge and J_human present) of ``variant`` (all when None), one
    score signature and one judge (:func:`one_scoring`)."""
    rows = one_scoring(
        with_judge_labels(score_frame(session, variant=variant, columns=CALIBRATION_COLUMNS)),
        signature=signature,
        judge=judge,
    )
    both = rows.dropna(subset=["J_judge", "J_human"]).loc[:, PAIR_COLUMNS].reset_index(drop=True)
    adjudicated = rows["J_human"].notna()
    return CalibrationView(
        statistics=judge_human_calibration(both),
        rows=both,
        adjudicated=int(adjudicated.sum()),
        adjudicated_without_judge=int((adjudicated & rows["J_judge"].isna()).sum()),
        awaiting=int(awaiting_adjudication(rows).sum()),
    )


@dataclass(frozen=True)
class CampaignAgreement:
    """Agreement of one campaign, every part over the one ``item_set``: per question (α with its bootstrap interval,
    Fleiss' κ, percent agreement, counts and the set in words), per annotator (agreement with the others' majority,
    outliers flagged, and on a nominal question Dawid–Skene's reliability and MACE's competence,
    :func:`with_reliability`) and on gold items."""

    by_question: pd.DataFrame
    annotators: pd.DataFrame
    item_set: ItemSet
    gold: pd.DataFrame = field(default_factory=pd.DataFrame)


def campaign_agreement(
    session: Session, *, campaign: str, items: str = "complete", resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> CampaignAgreement:
    """Agreement of ``campaign``'s questions, each at the level its schema gives it
    (:func:`studio.results.store_views.question_levels`), over one item set: ``complete`` (the default) — the items
    aggregation, Table 3 and Fig. 7 count (:func:`studio.services.progress.complete_at`) — or ``all`` answered items.
    The one computation ``h2h export agreement``, the Research page and the REST API read; ``h2h agreement`` on the
    campaign's exported votes with ``--quota`` at its ``complete_at`` gives the same numbers for the same seed.
    ``InvalidInput`` for another ``items``; ``NotFound`` when the set holds no answer to agree on."""
    found = get_campaign(session, campaign)
    schema = campaign_schema(found)
    answers = campaign_answers(session, found)
    try:
        chosen = choose_items(answers, items=items, quota=complete_at(found))
    except ValueError as error:
        raise InvalidInput(str(error)) from None
    long = answers_by_question(chosen.select(answers), schema)
    named, orders = question_levels(schema)
    levels = {question: _level(level) for question, level in named.items() if question in set(long["question"])}
    if not levels:
        raise NotFound(f"campaign: {campaign!r} has no answers to agree on {chosen.describe()}")
    by_question = agreement_by_question(
        long, levels, resamples=resamples, seed=seed, value_orders=orders, item_set=chosen
    )
    annotators, gold = _per_annotator(long, levels, orders, campaign_items(session, found))
    return CampaignAgreement(by_question=by_question, annotators=annotators, item_set=chosen, gold=gold)


def _level(name: str) -> Level:
    """The level of measurement a schema names (``InvalidInput`` for an unknown one)."""
    for level in LEVELS:
        if level == name:
            return level
    raise InvalidInput(f"level: {name!r} is not one of {', '.join(LEVELS)}")


def _per_annotator(
    long: pd.DataFrame, levels: dict[str, Level], orders: dict[str, list[object]], items: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each annotator's agreement with the others' majority, and gold accuracy, per question, over the answers
    ``long`` already holds (the chosen item set)."""
    annotators, gold = [], []
    for question, level in levels.items():
        subset = long[long["question"] == question]
        ratings = code_ratings(subset, level=level, value_order=orders.get(question))
        table = annotator_agreement(ratings)
        if level == "nominal":
            table = with_reliability(table, subset)
        annotators.append(table.assign(question=question))
        known = gold_values(items, question)
        if known:
            gold.append(gold_accuracy(subset, known).assign(question=question))
    return pd.concat(annotators, ignore_index=True), pd.concat(gold, ignore_index=True) if gold else pd.DataFrame()


#: The per-rater estimates :func:`with_reliability` adds (``studio.results.consensus.rater_reliability``).
RELIABILITY_COLUMNS: tuple[str, ...] = ("dawid_skene_reliability", "mace_competence")


def with_reliability(annotators: pd.DataFrame, votes: pd.DataFrame) -> pd.DataFrame:
    """``annotators`` (one row per annotator, an ``annotator`` column) with each one's estimated reliability on one
    nominal question's ``votes`` (``item``, ``annotator``, ``value``) beside agreement with the majority:
    Dawid–Skene's (the chance the rater's label is the true one) and MACE's competence (the chance the rater answers
    by knowing rather than spamming), rounded to 6 places; empty where the rater cast no vote. Estimates from the
    votes themselves, without known answers: a crowd mostly of spammers misleads them as it misleads the majority."""
    out = annotators.copy()
    cast = votes.dropna(subset=["value"])
    if cast.empty:
        return out.assign(**dict.fromkeys(RELIABILITY_COLUMNS, np.nan))
    estimates = rater_reliability(cast, methods=["dawid_skene", "mace"]).set_index("annotator")
    names = out["annotator"].astype(str)
    for column in RELIABILITY_COLUMNS:
        out[column] = names.map(estimates[column].astype(float)).round(6)
    return out


def complete_items(session: Session, campaign: Campaign) -> int:
    """How many of ``campaign``'s items are complete, as ``studio.results.aggregate.complete_answers`` counts them
    (:func:`studio.services.progress.complete_at`: answered by its quota, or at all where a campaign was closed with
    'decide below quota')."""
    return campaign_progress(session, campaign)["complete_items"]


def _campaign_progress(session: Session) -> pd.DataFrame:
    """One row per campaign: its schema, status, people per item, the answers needed for an item to be complete,
    answers, items, complete items (:func:`complete_items`) and, in words, how many of them a stopping rule completed
    early (``studio.services.progress.complete_words``)."""
    rows = []
    for campaign in session.execute(select(Campaign).order_by(col(Campaign.name))).scalars():
        counted = campaign_progress(session, campaign)
        totals = session.execute(
            select(func.count(col(Item.id)), func.coalesce(func.sum(col(Item.answer_count)), 0)).where(
                col(Item.campaign_id) == campaign.id
            )
        ).one()
        rows.append(
            {
                "campaign": campaign.name,
                "schema": campaign.schema_name,
                "status": campaign.status,
                "people_per_item": campaign.people_per_item,
                "complete_at": complete_at(campaign),
                "answers": int(totals[1]),
                "items": int(totals[0]),
                "complete_items": counted["complete_items"],
                "complete": complete_words(counted),
            }
        )
    return pd.DataFrame(rows)


def progress(session: Session) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Progress per campaign (answers, items, complete items and the answers an item needs to be complete) and per
    annotator per campaign (answers, median seconds per item — the client's report, else the server's measure —
    and the last answer's time)."""
    query = (
        select(
            col(Campaign.name),
            col(User.username),
            col(User.role),
            col(Answer.seconds_spent),
            col(Answer.server_seconds),
            col(Answer.created_at),
        )
        .join(Campaign, col(Campaign.id) == col(Answer.campaign_id))
        .join(User, col(User.id) == col(Answer.user_id))
    )
    answers = pd.DataFrame(
        session.execute(query).all(), columns=["campaign", "annotator", "role", "seconds", "server_seconds", "at"]
    )
    answers["seconds"] = pd.to_numeric(answers["seconds"]).fillna(pd.to_numeric(answers["server_seconds"]))
    people = (
        answers.groupby(["campaign", "annotator", "role"], sort=True)
        .agg(answers=("seconds", "size"), median_seconds=("seconds", "median"), last_answer=("at", "max"))
        .reset_index()
    )
    return _campaign_progress(session), people


def _distribution_rows(
    session: Session, *, metric: str, variant: str | None, signature: str | None, judge: str | None
) -> pd.DataFrame:
    """The scored rows of ``metric`` for one variant (all when None), one signature and — for a judge metric — one
    judge; J_final blanked on items awaiting adjudication (they have no final score yet)."""
    base = ("model", "subtask", "signature", "judge_model", "judge_prompt_version")
    extra = ("needs_adjudication", "J_human", "J_final") if metric == "J_final" else (metric,)
    rows = with_judge_labels(score_frame(session, variant=variant, columns=(*base, *extra), present=(metric,)))
    if metric == "J_final":
        rows = mask_awaiting_adjudication(rows)
    if metric not in JUDGE_METRICS:
        rows = rows.assign(judge=None)  # the judge does not change BLEU, ROUGE, SS or S
    return one_scoring(rows, signature=signature, judge=judge if metric in JUDGE_METRICS else None)


def score_distribution(
    session: Session,
    *,
    metric: str = "S",
    bins: int = 20,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> pd.DataFrame:
    """Histogram of one score per model (columns model, bin_left, bin_right, count) over the metric's range, for one
    variant (all when None), one score signature and, for J_judge, J, J_human and J_final, one judge."""
    if metric not in METRIC_RANGES:
        raise InvalidInput(f"metric: {metric!r} is not one of {', '.join(METRIC_RANGES)}")
    if not 1 <= bins <= 200:
        raise InvalidInput("bins: must be 1-200")
    rows = _distribution_rows(session, metric=metric, variant=variant, signature=signature, judge=judge)
    edges = np.linspace(*METRIC_RANGES[metric], bins + 1)
    parts = []
    for model, group in rows.groupby("model", sort=True):
        counts, _ = np.histogram(group[metric].dropna(), bins=edges)
        parts.append(pd.DataFrame({"model": model, "bin_left": edges[:-1], "bin_right": edges[1:], "count": counts}))
    return (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=["model", "bin_left", "bin_right", "count"])
    )
