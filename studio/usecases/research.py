"""Reading results: the leaderboard (Table 2), Table 3, Fig. 7, agreement, calibration, progress, distributions.

Every function takes the request's ``session`` and ``caller``, authorises first (``studio.policies.ResultsPolicy``)
and then calls ``studio.services.research``. Tables come back unrounded, as pandas DataFrames; each front door
turns them into its own shape (JSON records, a page's table, a file).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from sqlmodel import Session

from studio.errors import InvalidInput
from studio.models import UserPublic
from studio.policies import ResultsPolicy, authorize
from studio.results.defaults import DEFAULT_RESAMPLES, MAX_RESAMPLES
from studio.results.judge_bias import JudgeBiasCard
from studio.results.live_sap import DEFAULT_LIVE_RESAMPLES, LiveSapReport
from studio.services import live_results, research, research_judge, research_ppi, research_quality, research_ranking
from studio.services.research import LeaderboardView, ScoreChoices
from studio.services.research_ppi import PpiView
from studio.services.research_quality import CalibrationView, CampaignAgreement
from studio.services.research_ranking import RankingView

#: The tables :func:`table` builds, by the name a page or a client sends.
TABLE_NAMES: tuple[str, ...] = (
    "leaderboard",
    "leaderboard_coverage",
    "leaderboard_intervals",
    "leaderboard_fragility",
    "leaderboard_ppi",
    "table3",
    "instruction_following",
    "instruction_following_intervals",
    "agreement",
    "annotators",
    "calibration",
    "judge_bias",
    "progress_campaigns",
    "progress_annotators",
    "distribution",
    "ranking",
    "ranking_fragility",
)


def score_options(session: Session, *, caller: UserPublic) -> ScoreChoices:
    """The distinct variants, score signatures and judges of the stored scores (a table never mixes them)."""
    authorize(caller, ResultsPolicy.read())
    return research.score_choices(session)


def leaderboard(
    session: Session,
    *,
    caller: UserPublic,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
    intervals: bool = True,
) -> LeaderboardView:
    """Paper Table 2 for one variant, signature and judge, with the items pending adjudication per model; with its
    intervals and rank fragility unless ``intervals`` is False (then the table alone, summed in the store)."""
    authorize(caller, ResultsPolicy.read())
    return research.leaderboard(
        session, variant=variant or None, signature=signature or None, judge=judge or None, intervals=intervals
    )


def ppi_table(
    session: Session,
    *,
    caller: UserPublic,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> PpiView:
    """Prediction-powered itinerary scores per (model, judged subtask) of one variant, signature and judge: the
    judge on every judged item, rectified by the experts on the random audit (``studio.results.ppi``)."""
    authorize(caller, ResultsPolicy.read())
    return research_ppi.ppi_table(session, variant=variant or None, signature=signature or None, judge=judge or None)


def safety_table(
    session: Session,
    *,
    caller: UserPublic,
    campaign: str | None = None,
    by_model: bool = False,
    signature: str | None = None,
) -> pd.DataFrame:
    """Paper Table 3 (SAP safety) over the sap_safety campaigns (or one), BLEU-4 / ROUGE-L / SS of one signature."""
    authorize(caller, ResultsPolicy.read())
    return research.sap_table(session, campaign=campaign or None, by_model=by_model, signature=signature or None)


def live_safety_table(
    session: Session,
    *,
    caller: UserPublic,
    campaign: str | None,
    signature: str | None = None,
    batch_model: str | None = None,
    resamples: int = DEFAULT_LIVE_RESAMPLES,
    seed: int = 0,
) -> LiveSapReport:
    """The SAP table of one live campaign from its sessions (people's, and simulated users' apart), beside the batch
    BLEU-4 / ROUGE-L / SS of one signature, with agreement on the perception rating; resamples clamped to 0-10,000."""
    authorize(caller, ResultsPolicy.read())
    if not campaign:
        raise InvalidInput("campaign: choose a live campaign")
    resamples = max(0, min(int(resamples), MAX_RESAMPLES))
    return live_results.live_sap_report(
        session,
        campaign=campaign,
        signature=signature or None,
        batch_model=batch_model or None,
        resamples=resamples,
        seed=int(seed),
    )


def instruction_table(
    session: Session, *, caller: UserPublic, campaign: str | None = None, variant: str | None = None
) -> pd.DataFrame:
    """Paper Fig. 7 as a table: model × instruction kind, mean rating (1–5), of one variant's responses (or all)."""
    authorize(caller, ResultsPolicy.read())
    return research.instruction_table(session, campaign=campaign or None, variant=variant or None)


def instruction_intervals(
    session: Session, *, caller: UserPublic, campaign: str | None = None, variant: str | None = None
) -> pd.DataFrame:
    """Fig. 7 in long form with each cell's 95% interval (model, kind, rating, low, high, responses): responses, then
    raters within each response, resampled (``studio.results.table_intervals``)."""
    authorize(caller, ResultsPolicy.read())
    return research.instruction_table_intervals(session, campaign=campaign or None, variant=variant or None)


def agreement(
    session: Session,
    *,
    caller: UserPublic,
    campaign: str | None,
    items: str = "complete",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> CampaignAgreement:
    """Agreement of one campaign per question, per annotator and on gold items, all over one item set (``complete``
    items by default, or ``all``; :func:`studio.services.research_quality.campaign_agreement`, the computation
    ``h2h export agreement`` writes); resamples clamped to 0-10,000."""
    authorize(caller, ResultsPolicy.read())
    if not campaign:
        raise InvalidInput("campaign: choose a campaign")
    resamples = max(0, min(int(resamples), MAX_RESAMPLES))
    return research_quality.campaign_agreement(
        session, campaign=campaign, items=items or "complete", resamples=resamples, seed=int(seed)
    )


def calibration(
    session: Session,
    *,
    caller: UserPublic,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> CalibrationView:
    """Judge vs human on adjudicated items of one variant (or all), signature and judge: the statistics, the paired
    rows and the counts that explain them."""
    authorize(caller, ResultsPolicy.read())
    return research_quality.calibration(
        session, variant=variant or None, signature=signature or None, judge=judge or None
    )


def judge_bias(
    session: Session,
    *,
    caller: UserPublic,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> JudgeBiasCard:
    """The judge-bias card (position flips need a judge-pairs file: ``h2h judge-card --pairs``; here they say so)
    on adjudicated items of one variant (or all), signature and judge."""
    authorize(caller, ResultsPolicy.read())
    return research_judge.judge_bias(session, variant=variant or None, signature=signature or None, judge=judge or None)


def progress(session: Session, *, caller: UserPublic) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Progress per campaign, and per annotator per campaign."""
    authorize(caller, ResultsPolicy.read())
    return research_quality.progress(session)


def score_distribution(
    session: Session,
    *,
    caller: UserPublic,
    metric: str | None = "S",
    bins: Any = 20,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
) -> pd.DataFrame:
    """Histogram of one score per model (model, bin_left, bin_right, count) for one variant (or all), signature and
    (for judge metrics) judge."""
    authorize(caller, ResultsPolicy.read())
    return research_quality.score_distribution(
        session,
        metric=metric or "S",
        bins=int(20 if bins is None else bins),
        variant=variant or None,
        signature=signature or None,
        judge=judge or None,
    )


def ranking(session: Session, *, caller: UserPublic, campaign: str | None) -> RankingView:
    """A pairwise campaign's Bradley–Terry ranking (arena-rank), win rates, position bias and fragility
    (``studio.services.research_ranking``); ``InvalidInput`` when no campaign is named."""
    authorize(caller, ResultsPolicy.read())
    if not campaign:
        raise InvalidInput("campaign: choose a pairwise campaign")
    return research_ranking.ranking(session, campaign=campaign)


def table(session: Session, *, caller: UserPublic, name: str, **choices: Any) -> pd.DataFrame:
    """One of :data:`TABLE_NAMES`, computed with ``choices`` (variant, signature, judge, campaign, safety_campaign,
    instruction_campaign, by_model, metric, bins, resamples, seed, items) — the choices a page holds; each table
    reads those it needs, as the page's table of that name does."""
    authorize(caller, ResultsPolicy.read())
    if name not in TABLE_NAMES:
        raise InvalidInput(f"table: {name!r} is not one of {', '.join(TABLE_NAMES)}")
    return _builders(session, caller, choices)[name]()


def _interval_table(view: LeaderboardView) -> pd.DataFrame:
    """Table 2's cells with their bootstrap bounds (model, column, value, lower, upper); empty without intervals."""
    return view.intervals.long() if view.intervals is not None else pd.DataFrame()


def _fragility_table(view: LeaderboardView) -> pd.DataFrame:
    """Table 2's rank fragility (``pipeline.leaderboard_fragility.FRAGILITY_COLUMNS``); empty without it."""
    return view.fragility if view.fragility is not None else pd.DataFrame()


def _builders(session: Session, caller: UserPublic, choices: dict[str, Any]) -> dict[str, Callable[[], pd.DataFrame]]:
    scoring = {name: choices.get(name) for name in ("variant", "signature", "judge")}

    def board() -> LeaderboardView:
        return leaderboard(
            session, caller=caller, variant=scoring["variant"], signature=scoring["signature"], judge=scoring["judge"]
        )

    def pairwise() -> RankingView:  # the Rankings section's own picker, else the page's campaign
        return ranking(session, caller=caller, campaign=choices.get("ranking_campaign") or choices.get("campaign"))

    def agreement_part(part: str) -> Callable[[], pd.DataFrame]:
        # the defaults every front door uses (studio.results.defaults), so a download equals the page and the CLI
        asked = choices.get("resamples")
        resamples = DEFAULT_RESAMPLES if asked is None else int(asked)
        seed, items = int(choices.get("seed") or 0), str(choices.get("items") or "complete")
        return lambda: getattr(
            agreement(
                session, caller=caller, campaign=choices.get("campaign"), items=items, resamples=resamples, seed=seed
            ),
            part,
        )

    return {
        "leaderboard": lambda: board().table,
        "leaderboard_coverage": lambda: board().coverage,
        "leaderboard_intervals": lambda: _interval_table(board()),
        "leaderboard_fragility": lambda: _fragility_table(board()),
        "leaderboard_ppi": lambda: ppi_table(session, caller=caller, **scoring).table,
        "table3": lambda: safety_table(
            session,
            caller=caller,
            campaign=choices.get("safety_campaign"),
            by_model=bool(choices.get("by_model")),
            signature=choices.get("signature"),
        ),
        "instruction_following": lambda: instruction_table(
            session, caller=caller, campaign=choices.get("instruction_campaign"), variant=choices.get("variant")
        ),
        "instruction_following_intervals": lambda: instruction_intervals(
            session, caller=caller, campaign=choices.get("instruction_campaign"), variant=choices.get("variant")
        ),
        "agreement": agreement_part("by_question"),
        "annotators": agreement_part("annotators"),
        "calibration": lambda: calibration(session, caller=caller, **scoring).rows,
        "judge_bias": lambda: judge_bias(session, caller=caller, **scoring).table(),
        "progress_campaigns": lambda: progress(session, caller=caller)[0],
        "progress_annotators": lambda: progress(session, caller=caller)[1],
        "ranking": lambda: pairwise().ranking.table,
        "ranking_fragility": lambda: pairwise().ranking.fragility,
        "distribution": lambda: score_distribution(
            session, caller=caller, metric=choices.get("metric"), bins=choices.get("bins"), **scoring
        ),
    }
