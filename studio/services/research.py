"""What researchers read out of the store: the leaderboard (Table 2) from adjudicated scores, the SAP safety table
(Table 3), instruction following (Fig. 7), agreement reports, judge-vs-human calibration, progress and score
distributions. Read-only. Who may read them is ``studio.policies.ResultsPolicy``, checked by
``studio.usecases.research`` before it calls these functions (the command line calls them directly: it is trusted).

Each function loads what it needs with one query per table family (answers once per campaign) into pandas and
hands it to the pure statistics of ``studio.results``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlmodel import Session, col

from pipeline.leaderboard import (
    Leaderboard,
    LeaderboardError,
    awaiting_adjudication,
    build_leaderboard,
    select_rows,
)
from pipeline.records import JUDGED_SUBTASKS
from pipeline.results import judge_label
from studio.models import Answer, Campaign, ResponseRow, ScoreRow, User
from studio.results.aggregate import complete_answers
from studio.results.agreement import (
    agreement_by_question,
    annotator_agreement,
    code_ratings,
    gold_accuracy,
)
from studio.results.calibration import Calibration, judge_human_calibration
from studio.results.coincidence import Level
from studio.results.defaults import DEFAULT_RESAMPLES
from studio.results.figures import plot_score_distribution
from studio.results.store_views import (
    SCORE_COLUMNS,
    answers_by_question,
    campaign_answers,
    campaign_items,
    gold_values,
    question_levels,
    score_frame,
)
from studio.results.tables import instruction_following_table, instruction_ratings, safety_ratings, table3
from studio.schemas import MeanRule
from studio.services.campaigns import campaign_summaries
from studio.services.errors import InvalidInput, NotFound
from studio.services.queue import campaign_schema, get_campaign

__all__ = ["plot_score_distribution"]  # re-exported: the UI and API plot through this module

#: Score columns a distribution can be drawn of, with their range.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    **dict.fromkeys(("bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rougeL", "ss", "S"), (0.0, 1.0)),
    **dict.fromkeys(("J_judge", "J", "J_human", "J_final"), (0.0, 5.0)),
}


#: The score columns Table 3 reads: only the rated responses' scores are loaded.
SAFETY_SCORE_COLUMNS: tuple[str, ...] = ("scenario_id", "model", "variant", "bleu4", "rougeL", "ss")


@dataclass(frozen=True)
class LeaderboardView:
    """Table 2 with its coverage (``board``: the table and, per cell, the items counted and pending — see
    ``pipeline.leaderboard.Leaderboard``) and how many items the experts adjudicated."""

    board: Leaderboard
    adjudicated: int

    @property
    def table(self) -> pd.DataFrame:
        """Paper Table 2 (``pipeline.leaderboard.COLUMNS``), best overall first."""
        return self.board.table

    @property
    def pending(self) -> dict[str, int]:
        """Per model with pending items (flagged items awaiting adjudication, items without a score): how many."""
        return self.board.pending_by_model()

    @property
    def coverage(self) -> pd.DataFrame:
        """Per model and column: items counted and pending (columns model, column, counted, pending)."""
        return self.board.coverage()


#: The score columns one leaderboard item needs (``pipeline.leaderboard.ROW_COLUMNS`` from the store).
LEADERBOARD_SCORE_COLUMNS: tuple[str, ...] = (
    "model",
    "variant",
    "subtask",
    "S",
    "J_final",
    "needs_adjudication",
    "J_human",
    "signature",
    "judge_model",
    "judge_prompt_version",
)


def mask_awaiting_adjudication(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (of :func:`~studio.results.store_views.score_frame`, with needs_adjudication, J_human and J_final)
    with J_final blanked on flagged items the experts have not adjudicated yet: those have no final score
    (``pipeline.leaderboard.awaiting_adjudication``, the leaderboard's own rule)."""
    return rows.assign(J_final=rows["J_final"].mask(awaiting_adjudication(rows)))


def leaderboard_rows(
    session: Session, *, variant: str | None = None, columns: tuple[str, ...] = SCORE_COLUMNS
) -> pd.DataFrame:
    """Per-item rows for Table 2 (``pipeline.leaderboard.build_leaderboard``'s input), ``variant``'s only when given:
    the stored scores with the experts' J_human, J_final blanked while a flagged item awaits adjudication, and
    ``judge`` labelling the judge (model + prompt version) of itinerary I–III rows, so two judges never mix.
    ``columns`` picks the score columns loaded (they must include subtask, judge_model, judge_prompt_version and,
    for the masking, needs_adjudication, J_human and J_final)."""
    rows = mask_awaiting_adjudication(score_frame(session, variant=variant, columns=columns))
    judged = rows["subtask"].isin(JUDGED_SUBTASKS) & rows["judge_model"].notna()
    rows["judge"] = [
        judge_label(model, version) if flag else None
        for flag, model, version in zip(
            judged.tolist(), rows["judge_model"].tolist(), rows["judge_prompt_version"].tolist(), strict=True
        )
    ]
    return rows


def score_choices(session: Session) -> tuple[list[str], list[str]]:
    """The distinct variants and score signatures of the stored scores, each sorted (a leaderboard never mixes
    them). Two DISTINCT queries, not a load of every score: the research page asks on every load."""
    scored = select(col(ScoreRow.response_id))
    variants = session.execute(
        select(col(ResponseRow.variant)).where(col(ResponseRow.id).in_(scored)).distinct()
    ).scalars()
    signatures = session.execute(select(col(ScoreRow.signature_label)).distinct()).scalars()
    return sorted(v for v in variants if v is not None), sorted(s for s in signatures if s)


def leaderboard(
    session: Session,
    *,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> LeaderboardView:
    """Paper Table 2 for one variant, score signature and judge: ``pipeline.leaderboard.build_leaderboard`` (the
    definition ``h2h leaderboard`` uses too) on the store's per-item rows (:func:`leaderboard_rows`), so a flagged
    itinerary item counts once the experts adjudicated it and is pending until then.

    ``NotFound`` when the store holds no scores; ``InvalidInput`` when it holds several variants, signatures or judges
    and none was chosen (they never mix; see ``pipeline.leaderboard.select_rows``).
    """
    rows = leaderboard_rows(session, variant=variant, columns=LEADERBOARD_SCORE_COLUMNS)
    if rows.empty and variant is not None:  # an unknown variant: select_rows names the ones present
        rows = leaderboard_rows(session, columns=LEADERBOARD_SCORE_COLUMNS)
    if rows.empty:
        raise NotFound("scores: the store holds no scores; run h2h ingest first")
    try:
        chosen = select_rows(rows, variant=variant, signature=signature, judge=judge)
    except LeaderboardError as error:
        raise InvalidInput(f"variant/signature/judge: {error}") from None
    return LeaderboardView(board=build_leaderboard(chosen), adjudicated=int(chosen["J_human"].notna().sum()))


def _campaigns(session: Session, workflow_type: str, name: str | None) -> list[Campaign]:
    if name is not None:
        found = get_campaign(session, name)
        if found.workflow_type != workflow_type:
            raise InvalidInput(f"campaign: {name!r} is a {found.workflow_type} campaign, not {workflow_type}")
        return [found]
    query = select(Campaign).where(col(Campaign.workflow_type) == workflow_type).order_by(col(Campaign.id))
    return list(session.execute(query).scalars())


def _rated(session: Session, campaign: Campaign) -> tuple[pd.DataFrame, MeanRule]:
    """The answers of the campaign's complete items (``studio.results.aggregate.complete_answers``, the rule
    ``h2h aggregate`` counts by) and its mean rule."""
    schema = campaign_schema(campaign)
    rule = schema.aggregation
    if not isinstance(rule, MeanRule):
        raise InvalidInput(f"campaign: {campaign.name!r} does not aggregate by mean")
    answers = campaign_answers(session, campaign)
    complete = complete_answers(answers, quota=schema.min_people_per_item, closed=campaign.status == "closed")
    return complete, rule


def sap_table(session: Session, *, campaign: str | None = None, by_model: bool = False) -> pd.DataFrame:
    """Paper Table 3 over the ``sap_safety`` campaigns (or one): per variant (or model × variant), mean safety,
    violation rate by majority per response, and BLEU-4 / ROUGE-L / SS ×100 of the same responses; complete items
    only, as ``h2h aggregate`` counts them (``studio.results.tables.safety_ratings`` and ``table3``)."""
    frames, scores = [], []
    for found in _campaigns(session, "sap_safety", campaign):
        answers, rule = _rated(session, found)
        frames.append(safety_ratings(answers, rule))
        scores.append(score_frame(session, campaign=found, columns=SAFETY_SCORE_COLUMNS))
    if not frames or all(frame.empty for frame in frames):
        raise NotFound("campaign: no sap_safety answers yet")
    return table3(pd.concat(frames, ignore_index=True), pd.concat(scores, ignore_index=True), by_model=by_model)


def instruction_table(session: Session, *, campaign: str | None = None) -> pd.DataFrame:
    """Paper Fig. 7 as a table over the ``instruction_following`` campaigns (or one): model × kind mean rating;
    complete items only, as ``h2h aggregate`` counts them (``studio.results.tables.instruction_ratings``)."""
    frames = [
        instruction_ratings(*_rated(session, found)) for found in _campaigns(session, "instruction_following", campaign)
    ]
    if not frames or all(frame.empty for frame in frames):
        raise NotFound("campaign: no instruction_following answers yet")
    return instruction_following_table(pd.concat(frames, ignore_index=True)).reset_index()


#: The levels of measurement agreement statistics take, by name (a schema names them as text).
_LEVELS: dict[str, Level] = {"nominal": "nominal", "ordinal": "ordinal", "interval": "interval", "ratio": "ratio"}


def _level(name: str) -> Level:
    """The level of measurement called ``name`` (``InvalidInput`` for an unknown one)."""
    if name not in _LEVELS:
        raise InvalidInput(f"level: {name!r} is not one of {', '.join(_LEVELS)}")
    return _LEVELS[name]


@dataclass(frozen=True)
class AgreementView:
    """Agreement of one campaign: per question, per annotator (with outliers flagged) and on gold items."""

    by_question: pd.DataFrame
    annotators: pd.DataFrame
    gold: pd.DataFrame = field(default_factory=pd.DataFrame)


def agreement(session: Session, *, campaign: str, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> AgreementView:
    """Krippendorff's α (bootstrap CI), Fleiss' κ, percent agreement and item counts per question at the level its
    schema gives it (see :func:`studio.results.store_views.question_levels`); each annotator's agreement with the
    others' majority per question; accuracy on gold items."""
    found = get_campaign(session, campaign)
    schema = campaign_schema(found)
    long = answers_by_question(campaign_answers(session, found), schema)
    named, orders = question_levels(schema)
    asked = set(long["question"])
    levels = {question: _level(level) for question, level in named.items() if question in asked}
    if not levels:
        raise NotFound(f"campaign: {campaign!r} has no answers to agree on yet")
    by_question = agreement_by_question(long, levels, resamples=resamples, seed=seed, value_orders=orders)
    items = campaign_items(session, found)
    annotators, gold = [], []
    for question, level in levels.items():
        subset = long[long["question"] == question]
        ratings = code_ratings(subset, level=level, value_order=orders.get(question))
        annotators.append(annotator_agreement(ratings).assign(question=question))
        known = gold_values(items, question)
        if known:
            gold.append(gold_accuracy(subset, known).assign(question=question))
    return AgreementView(
        by_question=by_question,
        annotators=pd.concat(annotators, ignore_index=True),
        gold=pd.concat(gold, ignore_index=True) if gold else pd.DataFrame(),
    )


def calibration(session: Session) -> tuple[Calibration, pd.DataFrame]:
    """Judge vs human on adjudicated items (both J_judge and J_human present): the statistics and the rows."""
    both = score_frame(
        session,
        columns=("scenario_id", "model", "variant", "subtask", "J_judge", "J_human"),
        present=("J_judge", "J_human"),
    )
    return judge_human_calibration(both), both


def progress(session: Session) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Progress per campaign (answers, items, complete items) and per annotator per campaign (answers, median
    seconds per item — the client's report, else the server's measure — and the last answer's time)."""
    campaigns = pd.DataFrame(
        [
            {
                "campaign": s.name,
                "schema": s.schema_name,
                "status": s.status,
                "people_per_item": s.people_per_item,
                **s.progress,
            }
            for s in campaign_summaries(session)
        ]
    )
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
    return campaigns, people


def score_distribution(
    session: Session, *, metric: str = "S", bins: int = 20, variant: str | None = None
) -> pd.DataFrame:
    """Histogram of one score per model (columns model, bin_left, bin_right, count) over the metric's range."""
    if metric not in METRIC_RANGES:
        raise InvalidInput(f"metric: {metric!r} is not one of {', '.join(METRIC_RANGES)}")
    if not 1 <= bins <= 200:
        raise InvalidInput("bins: must be 1-200")
    if metric == "J_final":
        rows = mask_awaiting_adjudication(
            score_frame(
                session,
                variant=variant,
                columns=("model", "needs_adjudication", "J_human", "J_final"),
                present=(metric,),
            )
        )
    else:
        rows = score_frame(session, variant=variant, columns=("model", metric), present=(metric,))
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


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as JSON-ready records (NaN → None, numpy scalars → Python, timestamps → ISO 8601)."""
    records: list[dict[str, Any]] = json.loads(frame.to_json(orient="records", force_ascii=False, date_format="iso"))
    return records
