"""Results over REST (``/v1/results/...``): the leaderboard, Table 3, Fig. 7, agreement, calibration, progress,
distributions, their figures as PNG, and running aggregation (researchers read; curators and admins aggregate)."""

# No `from __future__ import annotations`: FastAPI reads the dependency types of the signatures as objects.
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Response

from pipeline.leaderboard import AVERAGES_RULE, partial_columns
from pipeline.leaderboard_intervals import LeaderboardIntervals
from studio.results.defaults import DEFAULT_RESAMPLES
from studio.services.aggregation import AggregationSummary
from studio.services.research import frame_records
from studio.usecases import curate, research
from studio.web.deps import CallerDep

router = APIRouter(prefix="/v1/results", tags=["results"])


def _png(draw: Callable[[Path], Any]) -> Response:
    """Run ``draw(path)`` into a temporary PNG and answer its bytes."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "figure.png"
        draw(target)
        return Response(content=target.read_bytes(), media_type="image/png")


@router.get("/leaderboard")
def leaderboard(
    caller: CallerDep,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
    intervals: bool = True,
) -> dict[str, Any]:
    """Paper Table 2 (×100) with the items pending adjudication per model and the adjudicated count; with each
    cell's interval and the rank fragility unless ``intervals=false`` (the table alone, summed in the store: faster at
    the paper's size; ``intervals`` is then null and ``fragility`` empty)."""
    with caller.reading() as (session, user):
        view = research.leaderboard(
            session, caller=user, variant=variant, signature=signature, judge=judge, intervals=intervals
        )
    return {
        "rows": frame_records(view.table),
        "pending": view.pending,
        "pending_reasons": view.pending_reasons,  # per model: awaiting adjudication / unscored
        "adjudicated": view.adjudicated,
        "applied": view.applied,  # the variant, signature and judge the table was computed for
        "coverage": frame_records(view.coverage),  # per cell: items counted and pending
        # averages over fewer than all their subtasks are null; these columns hold such a cell, by this rule
        "partial_columns": partial_columns(view.board),
        "averages_rule": AVERAGES_RULE,
        # per cell: value with its bootstrap bounds, per model its rank range, and how they were computed
        "intervals": interval_records(view.intervals),
        # per adjacent pair: fewest items whose removal swaps them (pipeline.leaderboard_fragility)
        "fragility": frame_records(view.fragility) if view.fragility is not None else [],
    }


def interval_records(intervals: LeaderboardIntervals | None) -> dict[str, Any] | None:
    """Table 2's intervals as JSON: cells (model, column, value, lower, upper), ranks (model, rank, rank_low,
    rank_high) and ``method`` (how they were computed); None without intervals."""
    if intervals is None:
        return None
    return {
        "cells": frame_records(intervals.long()),
        "ranks": frame_records(intervals.ranks),
        "method": intervals.words(),
    }


@router.get("/leaderboard/ppi")
def leaderboard_ppi(
    caller: CallerDep, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> dict[str, Any]:
    """Prediction-powered itinerary scores per (model, judged subtask): the judge on every judged item rectified by
    the experts on the seeded random audit (ppi, ppi_low, ppi_high; classic; human_only; effective_n), the rule."""
    with caller.reading() as (session, user):
        view = research.ppi_table(session, caller=user, variant=variant, signature=signature, judge=judge)
    return {"rows": frame_records(view.table), "rule": view.rule, "audited": view.audited, "applied": view.applied}


@router.get("/sap")
def sap(
    caller: CallerDep, campaign: str | None = None, by_model: bool = False, signature: str | None = None
) -> list[dict[str, Any]]:
    """Paper Table 3 (SAP safety); BLEU-4 / ROUGE-L / SS from the scores of one signature."""
    with caller.reading() as (session, user):
        table = research.safety_table(session, caller=user, campaign=campaign, by_model=by_model, signature=signature)
    return frame_records(table)


@router.get("/campaigns/{name}/sap")
def live_sap(
    name: str,
    caller: CallerDep,
    signature: str | None = None,
    batch_model: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """A live campaign's SAP table from its sessions (paper Table 3's layout): ``rows`` per variant from people's
    rated sessions, ``simulated_rows`` from simulated users' (never mixed), each with its rule in words; agreement on
    the perception rating; BLEU-4 / ROUGE-L / SS of the batch scores of the same scenarios (null where none)."""
    with caller.reading() as (session, user):
        report = research.live_safety_table(
            session,
            caller=user,
            campaign=name,
            signature=signature,
            batch_model=batch_model,
            resamples=resamples,
            seed=seed,
        )
    return {
        "campaign": report.campaign,
        "model": report.model,
        "rows": frame_records(report.human),
        "rule": report.rule,
        "simulated_rows": frame_records(report.simulated),
        "simulated_rule": report.simulated_rule,
        "agreement": report.agreement.to_dict() if report.agreement is not None else None,
        "agreement_note": report.agreement_note,
        "resamples": report.resamples,
        "seed": report.seed,
    }


@router.get("/campaigns/{name}/ranking")
def ranking(name: str, caller: CallerDep) -> dict[str, Any]:
    """A pairwise campaign's Bradley–Terry ranking (arena-rank; rating, 95% sandwich interval, rank, votes, wins,
    losses, ties per system), the win rates (row beats column; null where never met), the position bias (share of
    decided votes won by the side shown first, Wilson 95% interval), the votes that would swap each two neighbours
    (a greedy upper bound) and the rule in words."""
    with caller.reading() as (session, user):
        view = research.ranking(session, caller=user, campaign=name)
    rates, meetings = view.ranking.win_rates, view.ranking.meetings
    win_rates = [
        {
            "competitor": row,
            "opponent": column,
            "win_rate": None if meetings.loc[row, column] == 0 else float(rates.loc[row, column]),
            "votes": int(meetings.loc[row, column]),
        }
        for row in rates.index
        for column in rates.columns
        if row != column
    ]
    return {
        "campaign": view.campaign,
        "question": view.question,
        "ranking": frame_records(view.ranking.table),
        "win_rates": win_rates,
        "position_bias": view.ranking.position_bias,
        "fragility": frame_records(view.ranking.fragility),
        "rule": view.rule,
    }


@router.get("/instruction")
def instruction(
    caller: CallerDep, campaign: str | None = None, variant: str | None = None, intervals: bool = False
) -> list[dict[str, Any]]:
    """Paper Fig. 7 as a table (one variant's responses, or all); ``intervals=true``: in long form, one row per model
    and kind with its 95% interval (model, kind, rating, low, high, responses)."""
    with caller.reading() as (session, user):
        read = research.instruction_intervals if intervals else research.instruction_table
        return frame_records(read(session, caller=user, campaign=campaign, variant=variant))


@router.get("/agreement/{campaign}")
def agreement(
    campaign: str, caller: CallerDep, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, items: str = "complete"
) -> dict[str, Any]:
    """Agreement per question, per annotator and on gold items, all over one item set (``items``: ``complete``, the
    items aggregation counts, or ``all``), stated in ``item_set``."""
    with caller.reading() as (session, user):
        view = research.agreement(session, caller=user, campaign=campaign, resamples=resamples, seed=seed, items=items)
    return {
        "item_set": view.item_set.describe(),
        "by_question": frame_records(view.by_question),
        "annotators": frame_records(view.annotators),
        "gold": frame_records(view.gold),
    }


@router.get("/calibration")
def calibration(
    caller: CallerDep, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> dict[str, Any]:
    """Judge vs human on adjudicated items, with the counts that explain a small n."""
    with caller.reading() as (session, user):
        view = research.calibration(session, caller=user, variant=variant, signature=signature, judge=judge)
    return {
        "statistics": view.statistics.to_dict(),
        "rows": frame_records(view.rows),
        "adjudicated": view.adjudicated,
        "adjudicated_without_judge": view.adjudicated_without_judge,
        "awaiting_adjudication": view.awaiting,
    }


@router.get("/judge-bias")
def judge_bias(
    caller: CallerDep, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> dict[str, Any]:
    """The judge-bias card on adjudicated items: one row per measure, the 2×2 decision counts and the summary (the
    position rows need a judge-pairs file: ``h2h judge-card --pairs``)."""
    with caller.reading() as (session, user):
        card = research.judge_bias(session, caller=user, variant=variant, signature=signature, judge=judge)
    return {
        "rows": frame_records(card.table()),
        "decision_counts": card.decision_counts,
        "bins": card.bins,
        "resamples": card.resamples,
        "seed": card.seed,
        "summary": card.summary,
    }


@router.get("/progress")
def progress(caller: CallerDep) -> dict[str, Any]:
    """Progress per campaign and per annotator."""
    with caller.reading() as (session, user):
        campaigns, people = research.progress(session, caller=user)
    return {"campaigns": frame_records(campaigns), "annotators": frame_records(people)}


@router.get("/distribution")
def distribution(
    caller: CallerDep,
    metric: str = "S",
    bins: int = 20,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> list[dict[str, Any]]:
    """Histogram of one score per model (one variant or all, one signature, one judge for judge metrics)."""
    with caller.reading() as (session, user):
        frame = research.score_distribution(
            session, caller=user, metric=metric, bins=bins, variant=variant, signature=signature, judge=judge
        )
    return frame_records(frame)


@router.post("/aggregate", response_model=list[AggregationSummary])
def aggregate(caller: CallerDep, campaign: str | None = None) -> list[AggregationSummary]:
    """Apply the campaigns' aggregation rules (one campaign, or all): answers read first, then written in short
    transactions (``studio.usecases.curate.aggregate``)."""
    return curate.aggregate(caller, campaign=campaign)


@router.get("/calibration.png", response_class=Response)
def calibration_png(
    caller: CallerDep, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> Response:
    from studio.results.calibration import plot_calibration

    with caller.reading() as (session, user):
        view = research.calibration(session, caller=user, variant=variant, signature=signature, judge=judge)
    return _png(lambda path: plot_calibration(view.rows, path))


@router.get("/instruction.png", response_class=Response)
def instruction_png(caller: CallerDep, campaign: str | None = None, variant: str | None = None) -> Response:
    from studio.results.tables import plot_instruction_following

    with caller.reading() as (session, user):
        table = research.instruction_table(session, caller=user, campaign=campaign, variant=variant)
    return _png(lambda path: plot_instruction_following(table.set_index("model"), path))


@router.get("/sap.png", response_class=Response)
def sap_png(
    caller: CallerDep, campaign: str | None = None, by_model: bool = False, signature: str | None = None
) -> Response:
    from studio.results.tables import plot_safety

    with caller.reading() as (session, user):
        table = research.safety_table(session, caller=user, campaign=campaign, by_model=by_model, signature=signature)
    return _png(lambda path: plot_safety(table, path))


@router.get("/distribution.png", response_class=Response)
def distribution_png(
    caller: CallerDep,
    metric: str = "S",
    bins: int = 20,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> Response:
    from studio.results.figures import plot_score_distribution

    with caller.reading() as (session, user):
        frame = research.score_distribution(
            session, caller=user, metric=metric, bins=bins, variant=variant, signature=signature, judge=judge
        )
    return _png(lambda path: plot_score_distribution(frame, path, metric=metric))
