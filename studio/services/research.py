"""What researchers read out of the store: the leaderboard (Table 2) from adjudicated scores, the SAP safety table
(Table 3), instruction following (Fig. 7) and agreement reports (calibration, progress and score distributions are in
``studio.services.research_quality``). Read-only. Who may read them is ``studio.policies.ResultsPolicy``, checked by
``studio.usecases.research`` before it calls these functions (the command line calls them directly: it is trusted).

Each function loads what it needs with one query per table family (answers once per campaign) into pandas and
hands it to the pure statistics of ``studio.results``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlmodel import Session, col

from pipeline.leaderboard import (
    Leaderboard,
    LeaderboardError,
    awaiting_adjudication,
    item_values,
    select_rows,
)
from pipeline.leaderboard_cells import board_from_cells
from pipeline.leaderboard_intervals import LeaderboardIntervals
from pipeline.records import JUDGED_SUBTASKS
from pipeline.results import judge_label
from pipeline.taxonomy import TABLE3_METRIC_NAMES
from studio.errors import InvalidInput, NotFound
from studio.models import Campaign, ResponseRow, ScoreRow
from studio.results.aggregate import complete_answers
from studio.results.store_views import (
    SCORE_COLUMNS,
    campaign_answers,
    leaderboard_cells,
    score_frame,
)
from studio.results.table_intervals import instruction_intervals, table3_intervals
from studio.results.tables import instruction_following_table, instruction_ratings, safety_ratings
from studio.services.progress import complete_at
from studio.services.queue import campaign_schema, get_campaign
from studio.services.research_intervals import leaderboard_uncertainty
from studio.workflows import MeanRule

#: The score columns Table 3 reads: only the rated responses' scores are loaded.
SAFETY_SCORE_COLUMNS: tuple[str, ...] = ("scenario_id", "model", "variant", *TABLE3_METRIC_NAMES, "signature")


@dataclass(frozen=True)
class ScoreChoices:
    """What a results table can be computed for: the stored variants, score signatures and judges (each sorted;
    a table never mixes two of one kind)."""

    variants: list[str]
    signatures: list[str]
    judges: list[str]


@dataclass(frozen=True)
class LeaderboardView:
    """Table 2 with its coverage (``board``: the table and, per cell, the items counted and pending — see
    ``pipeline.leaderboard.Leaderboard``) and how many items the experts adjudicated."""

    board: Leaderboard
    adjudicated: int
    #: Per model: pending items that are flagged and await adjudication (the rest of its pending items are unscored).
    awaiting: dict[str, int] = field(default_factory=dict)
    #: The variant, signature and judge the table was computed for (None: the store has none of that kind).
    applied: dict[str, str | None] = field(default_factory=dict)
    #: Bootstrap intervals and rank ranges (``pipeline.leaderboard_intervals``; ``studio.services.research_intervals``).
    intervals: LeaderboardIntervals | None = None
    #: Rank fragility of adjacent models (``pipeline.leaderboard_fragility.FRAGILITY_COLUMNS``).
    fragility: pd.DataFrame | None = None

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

    @property
    def pending_reasons(self) -> dict[str, dict[str, int]]:
        """Per model with pending items: how many await adjudication (flagged, no expert score yet) and how many are
        unscored (no S, or no J_final on a judged subtask)."""
        return {
            model: {
                "awaiting_adjudication": self.awaiting.get(model, 0),
                "unscored": total - self.awaiting.get(model, 0),
            }
            for model, total in self.pending.items()
        }


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
    "scenario_id",  # pairs Table 2's bootstrap across models (studio.services.research_intervals)
)
#: What :func:`leaderboard` loads: the item's columns and its response (which finds an adjudicated item's experts).
_BOARD_COLUMNS: tuple[str, ...] = (*LEADERBOARD_SCORE_COLUMNS, "response_id")


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
    return with_judge_labels(mask_awaiting_adjudication(score_frame(session, variant=variant, columns=columns)))


def with_judge_labels(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (with subtask, judge_model and judge_prompt_version) with a ``judge`` column: the judge's label
    (``pipeline.results.judge_label``) on itinerary I–III rows that name their judge, None elsewhere."""
    judged = rows["subtask"].isin(JUDGED_SUBTASKS) & rows["judge_model"].notna()
    labels = [
        judge_label(model, version) if flag else None
        for flag, model, version in zip(
            judged.tolist(), rows["judge_model"].tolist(), rows["judge_prompt_version"].tolist(), strict=True
        )
    ]
    return rows.assign(judge=pd.Series(labels, index=rows.index, dtype=object))


def score_choices(session: Session) -> ScoreChoices:
    """The distinct variants, score signatures and judges (itinerary I–III) of the stored scores, each sorted (a
    table never mixes two of one kind). Three DISTINCT queries, not a load of every score: the research page asks
    on every load."""
    scored = select(col(ScoreRow.response_id))
    variants = session.execute(
        select(col(ResponseRow.variant)).where(col(ResponseRow.id).in_(scored)).distinct()
    ).scalars()
    signatures = session.execute(select(col(ScoreRow.signature_label)).distinct()).scalars()
    judges = session.execute(
        select(col(ScoreRow.judge_model), col(ScoreRow.judge_prompt_version))
        .where(col(ScoreRow.subtask).in_(sorted(JUDGED_SUBTASKS)), col(ScoreRow.judge_model).is_not(None))
        .distinct()
    ).all()
    return ScoreChoices(
        variants=sorted(v for v in variants if v is not None),
        signatures=sorted(s for s in signatures if s),
        judges=sorted({judge_label(model, version) for model, version in judges}),
    )


def leaderboard(
    session: Session,
    *,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
    intervals: bool = True,
) -> LeaderboardView:
    """Paper Table 2 for one variant, score signature and judge: ``pipeline.leaderboard.build_leaderboard`` (the
    definition ``h2h leaderboard`` uses too) on the store's per-item rows (:func:`leaderboard_rows`), so a flagged
    itinerary item counts once the experts adjudicated it and is pending until then; with its bootstrap intervals and
    rank fragility. ``intervals=False``: the table alone, summed in the store (:func:`leaderboard_table`, the same
    numbers), without intervals or fragility.

    ``NotFound`` when the store holds no scores; ``InvalidInput`` when it holds several variants, signatures or judges
    and none was chosen (they never mix; see ``pipeline.leaderboard.select_rows``).
    """
    if not intervals:
        return leaderboard_table(session, variant=variant, signature=signature, judge=judge)
    rows = leaderboard_rows(session, variant=variant, columns=_BOARD_COLUMNS)
    if rows.empty and variant is not None:  # an unknown variant: select_rows names the ones present
        rows = leaderboard_rows(session, columns=_BOARD_COLUMNS)
    if rows.empty:
        raise NotFound("scores: the store holds no scores; run h2h ingest first")
    chosen = choose_rows(rows, variant=variant, signature=signature, judge=judge)
    awaiting = awaiting_adjudication(chosen) & item_values(chosen).isna()
    bounds, fragility = leaderboard_uncertainty(session, chosen)
    return LeaderboardView(
        board=bounds.board,
        intervals=bounds,
        fragility=fragility,
        adjudicated=int(chosen["J_human"].notna().sum()),
        awaiting={str(model): int(n) for model, n in chosen.loc[awaiting, "model"].value_counts().items()},
        applied={column: _sole_value(chosen, column) for column in ("variant", "signature", "judge")},
    )


def leaderboard_table(
    session: Session, *, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> LeaderboardView:
    """:func:`leaderboard`'s table and coverage without intervals, from sums per (model, subtask, signature, judge)
    computed in the store (``studio.results.store_views.leaderboard_cells``: one GROUP BY, no load of every score)
    and ``pipeline.leaderboard_cells.board_from_cells``: the same numbers, choices and errors as :func:`leaderboard`."""
    cells = leaderboard_cells(session, variant=variant)
    if cells.empty and variant is not None:  # an unknown variant: select_rows names the ones present
        cells = leaderboard_cells(session)
    if cells.empty:
        raise NotFound("scores: the store holds no scores; run h2h ingest first")
    labels = [
        None if model is None or pd.isna(model) else judge_label(model, version)
        for model, version in zip(cells["judge_model"].tolist(), cells["judge_prompt_version"].tolist(), strict=True)
    ]
    cells = cells.assign(judge=pd.Series(labels, index=cells.index, dtype=object))
    chosen = choose_rows(cells, variant=variant, signature=signature, judge=judge)
    awaiting = chosen.groupby("model")["awaiting"].sum()
    return LeaderboardView(
        board=board_from_cells(chosen),
        adjudicated=int(chosen["adjudicated"].sum()),
        awaiting={str(model): int(n) for model, n in awaiting.items() if n},
        applied={column: _sole_value(chosen, column) for column in ("variant", "signature", "judge")},
    )


def choose_rows(
    rows: pd.DataFrame, *, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> pd.DataFrame:
    """``rows`` of one variant, signature and judge (``pipeline.leaderboard.select_rows``; ``InvalidInput`` naming
    what is present when a choice is needed or wrong). A judge only picks among judged rows: when the chosen variant
    and signature have none, every judge's table is the same and the choice is left aside (a page's judge picker
    always holds one)."""
    try:
        chosen = rows.loc[select_rows(rows.assign(judge=None), variant=variant, signature=signature).index]
        judged = "judge" in chosen and bool(chosen["judge"].notna().any())
        return select_rows(chosen, judge=judge if judged else None)
    except LeaderboardError as error:
        raise InvalidInput(f"variant/signature/judge: {error}") from None


def _sole_value(rows: pd.DataFrame, column: str) -> str | None:
    """The one value ``rows[column]`` holds (``select_rows`` made it one), or None when it holds none."""
    present = rows[column].dropna().unique()
    return str(present[0]) if len(present) else None


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
    complete = complete_answers(answers, quota=complete_at(campaign))
    return complete, rule


def one_signature(scores: pd.DataFrame, signature: str | None) -> pd.DataFrame:
    """``scores`` of one score signature: ``signature``'s, or the only one present. ``InvalidInput`` naming the
    signatures present when ``signature`` is absent from them, or when none is given and there are several."""
    present = sorted(str(label) for label in scores["signature"].dropna().unique())
    if signature is not None and present:
        if signature not in present:
            raise InvalidInput(f"signature: no scores with signature {signature!r} here; present: {', '.join(present)}")
        return scores[scores["signature"] == signature]
    if len(present) > 1:
        raise InvalidInput(
            f"signature: scores of different signatures must not be mixed; pick one of {', '.join(present)}"
        )
    return scores


def sap_table(
    session: Session, *, campaign: str | None = None, by_model: bool = False, signature: str | None = None
) -> pd.DataFrame:
    """Paper Table 3 over the ``sap_safety`` campaigns (or one): per variant (or model × variant), mean safety,
    violation rate per response by the campaigns' ``violation_tie`` rule (its ``violation_tie`` column says which;
    ``studio.results.tables.table3_rule`` states it), and BLEU-4 / ROUGE-L / SS ×100 of the same responses, from the
    scores of one signature (:func:`one_signature`); complete items only, as ``h2h aggregate`` counts them
    (``studio.results.tables.safety_ratings`` and ``table3``). ``InvalidInput`` when the campaigns count a tie
    differently (one table, one rule: pick a campaign)."""
    frames, scores, rules = [], [], {}
    for found in _campaigns(session, "sap_safety", campaign):
        answers, rule = _rated(session, found)
        frames.append(safety_ratings(answers, rule))
        scores.append(score_frame(session, campaign=found, columns=SAFETY_SCORE_COLUMNS))
        if not frames[-1].empty:  # a campaign with nothing rated yet adds no rule to the table
            rules[found.name] = rule.violation_tie
    if not frames or all(frame.empty for frame in frames):
        raise NotFound("campaign: no sap_safety answers on complete items yet")
    if len(set(rules.values())) > 1:
        listed = ", ".join(f"{name} ({tie})" for name, tie in rules.items())
        raise InvalidInput(
            f"campaign: these sap_safety campaigns count a tie differently (violation_tie): {listed}; pick one campaign"
        )
    chosen = one_signature(pd.concat(scores, ignore_index=True), signature)
    # table3's columns, then each estimate's 95% interval (responses, then raters within each response)
    return table3_intervals(pd.concat(frames, ignore_index=True), chosen, by_model=by_model)


def instruction_table(session: Session, *, campaign: str | None = None, variant: str | None = None) -> pd.DataFrame:
    """Paper Fig. 7 as a table over the ``instruction_following`` campaigns (or one): model × kind mean rating of the
    responses of ``variant`` (all variants when None); complete items only, as ``h2h aggregate`` counts them
    (``studio.results.tables.instruction_ratings``)."""
    return instruction_following_table(_instruction_ratings(session, campaign=campaign, variant=variant)).reset_index()


def instruction_table_intervals(
    session: Session, *, campaign: str | None = None, variant: str | None = None
) -> pd.DataFrame:
    """Fig. 7 in long form with 95% intervals (model, kind, rating, low, high, responses): the ratings of
    :func:`instruction_table`, bootstrapped over responses and then raters within each response
    (``studio.results.table_intervals.instruction_intervals``)."""
    return instruction_intervals(_instruction_ratings(session, campaign=campaign, variant=variant))


def _instruction_ratings(session: Session, *, campaign: str | None, variant: str | None) -> pd.DataFrame:
    frames = []
    for found in _campaigns(session, "instruction_following", campaign):
        complete, rule = _rated(session, found)
        if variant is not None:
            complete = complete[complete["variant"] == variant]
        frames.append(instruction_ratings(complete, rule))
    if not frames or all(frame.empty for frame in frames):
        on_variant = f" on {variant} responses" if variant is not None else ""
        raise NotFound(f"campaign: no instruction_following answers{on_variant} on complete items yet")
    return pd.concat(frames, ignore_index=True)


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as JSON-ready records (NaN → None, numpy scalars → Python, timestamps → ISO 8601)."""
    records: list[dict[str, Any]] = json.loads(frame.to_json(orient="records", force_ascii=False, date_format="iso"))
    return records
