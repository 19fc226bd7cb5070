"""The researcher page's logic as plain functions: leaderboard, Table 3, Fig. 7, agreement, calibration, progress,
score distributions, and downloads of each table.

Every function re-resolves the caller from the session token and checks the role (researchers, curators and
admins) before it reads, then goes through ``studio.services.research``. Tables come back unrounded (the page
rounds them for display with :func:`studio.ui.curate_flow.display_frame`). Figures and downloads are written to a
directory the caller of these functions creates per request (:func:`studio.ui.curate_flow.new_download_dir`);
file names are built here, never taken from the browser.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from studio.results.defaults import DEFAULT_RESAMPLES
from studio.ui.curate_flow import DOWNLOAD_FORMATS, caller

RESEARCH_ROLES: tuple[str, ...] = ("researcher", "curator", "admin")
#: The tables a researcher may download, by the name the page sends.
TABLE_NAMES: tuple[str, ...] = (
    "leaderboard",
    "table3",
    "instruction_following",
    "agreement",
    "annotators",
    "calibration",
    "progress_campaigns",
    "progress_annotators",
    "distribution",
)


@dataclass(frozen=True)
class Leaderboard:
    """Table 2 and a caption with the pending (awaiting adjudication) and adjudicated counts."""

    table: pd.DataFrame
    caption: str


@dataclass(frozen=True)
class ScoreOptions:
    """The variants and score signatures present in the store (a leaderboard never mixes them)."""

    variants: list[str]
    signatures: list[str]


def _researcher(engine: Engine, token: str | None) -> Any:
    return caller(engine, token, RESEARCH_ROLES)


def score_options(engine: Engine, token: str | None) -> ScoreOptions:
    """The distinct variants and signatures of the stored scores (see ``research.score_choices``)."""
    from studio.db import read_session
    from studio.services import research

    user = _researcher(engine, token)
    with read_session(engine) as session:
        variants, signatures = research.score_choices(session, user=user)
    return ScoreOptions(variants, signatures)


def leaderboard(
    engine: Engine, token: str | None, *, variant: str | None = None, signature: str | None = None
) -> Leaderboard:
    """Paper Table 2 (×100) from adjudicated scores for one variant and signature, with the pending count."""
    from studio.db import read_session
    from studio.services import research

    user = _researcher(engine, token)
    with read_session(engine) as session:
        view = research.leaderboard(session, user=user, variant=variant or None, signature=signature or None)
    pending = sum(view.pending.values())
    detail = ", ".join(f"{model}: {count}" for model, count in sorted(view.pending.items()))
    caption = f"{pending} item(s) pending adjudication" + (f" ({detail})" if detail else "")
    caption += f"; {view.adjudicated} adjudicated."
    table = view.table.reset_index() if view.table.index.name else view.table
    return Leaderboard(table, caption)


def safety_table(
    engine: Engine, token: str | None, *, campaign: str | None = None, by_model: bool = False
) -> pd.DataFrame:
    """Paper Table 3 (SAP safety) over the sap_safety campaigns (or one)."""
    from studio.db import read_session
    from studio.services import research

    user = _researcher(engine, token)
    with read_session(engine) as session:
        return research.sap_table(session, user=user, campaign=campaign or None, by_model=by_model)


def instruction_table(engine: Engine, token: str | None, *, campaign: str | None = None) -> pd.DataFrame:
    """Paper Fig. 7 as a table: model × instruction kind, mean rating (1–5)."""
    from studio.db import read_session
    from studio.services import research

    user = _researcher(engine, token)
    with read_session(engine) as session:
        return research.instruction_table(session, user=user, campaign=campaign or None)


def instruction_plot(engine: Engine, token: str | None, directory: Path, *, campaign: str | None = None) -> Path:
    """Fig. 7 (grouped bars per model and kind) as a PNG in ``directory``."""
    from studio.results.tables import plot_instruction_following

    table = instruction_table(engine, token, campaign=campaign).set_index("model")
    return plot_instruction_following(table, directory / "instruction_following.png")


def agreement(
    engine: Engine, token: str | None, campaign: str | None, *, resamples: int = DEFAULT_RESAMPLES
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Agreement of one campaign per question (α with CI, κ, percent) and per annotator (vs the majority)."""
    from studio.db import read_session
    from studio.services import research
    from studio.services.errors import InvalidInput

    user = _researcher(engine, token)
    if not campaign:
        raise InvalidInput("campaign: choose a campaign")
    with read_session(engine) as session:
        view = research.agreement(session, user=user, campaign=campaign, resamples=resamples)
    return view.by_question, view.annotators


def calibration(
    engine: Engine, token: str | None, directory: Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, Path | None]:
    """Judge vs human on adjudicated items: the statistics (one row), the paired rows, and a scatter plot
    written to ``directory`` when given and there is at least one pair."""
    from studio.db import read_session
    from studio.results.calibration import plot_calibration
    from studio.services import research

    user = _researcher(engine, token)
    with read_session(engine) as session:
        stats, rows = research.calibration(session, user=user)
    plot = plot_calibration(rows, directory / "calibration.png") if directory is not None and len(rows) else None
    return pd.DataFrame([stats.to_dict()]), rows, plot


def progress(engine: Engine, token: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Progress per campaign, and per annotator per campaign (answers, median seconds per item, last answer)."""
    from studio.db import read_session
    from studio.services import research

    user = _researcher(engine, token)
    with read_session(engine) as session:
        campaigns, people = research.progress(session, user=user)
    return campaigns, people


def distribution(
    engine: Engine, token: str | None, *, metric: str = "S", bins: int = 20, variant: str | None = None
) -> pd.DataFrame:
    """Histogram of one score per model (model, bin_left, bin_right, count)."""
    from studio.db import read_session
    from studio.services import research

    user = _researcher(engine, token)
    with read_session(engine) as session:
        return research.score_distribution(session, user=user, metric=metric, bins=int(bins), variant=variant or None)


def distribution_plot(
    engine: Engine, token: str | None, directory: Path, *, metric: str = "S", bins: int = 20, variant: str | None = None
) -> Path:
    """The score distribution as step histograms (one line per model), a PNG in ``directory``."""
    from studio.services.research import plot_score_distribution

    frame = distribution(engine, token, metric=metric, bins=bins, variant=variant)
    return plot_score_distribution(frame, directory / f"distribution-{metric}.png", metric=metric)


def _table_builders(engine: Engine, token: str | None, params: dict[str, Any]) -> dict[str, Callable[[], pd.DataFrame]]:
    campaign = params.get("campaign") or None
    return {
        "leaderboard": lambda: (
            leaderboard(engine, token, variant=params.get("variant"), signature=params.get("signature")).table
        ),
        "table3": lambda: safety_table(
            engine, token, campaign=params.get("safety_campaign") or None, by_model=bool(params.get("by_model"))
        ),
        "instruction_following": lambda: instruction_table(
            engine, token, campaign=params.get("instruction_campaign") or None
        ),
        "agreement": lambda: agreement(engine, token, campaign)[0],
        "annotators": lambda: agreement(engine, token, campaign)[1],
        "calibration": lambda: calibration(engine, token)[1],
        "progress_campaigns": lambda: progress(engine, token)[0],
        "progress_annotators": lambda: progress(engine, token)[1],
        "distribution": lambda: distribution(
            engine,
            token,
            metric=params.get("metric") or "S",
            bins=int(params.get("bins") or 20),
            variant=params.get("variant"),
        ),
    }


def export_table(engine: Engine, token: str | None, table: str, fmt: str, directory: Path, **params: Any) -> Path:
    """Write one of :data:`TABLE_NAMES` as CSV (formula-safe), JSONL or Parquet into ``directory``.

    ``params`` are the page's current choices (variant, signature, campaign, metric, bins, ...); the role is
    checked again by the function that computes the table. The file name is ``h2h-<table>.<fmt>``.
    """
    from studio.results.export_formats import write_table
    from studio.services.errors import InvalidInput

    _researcher(engine, token)
    if table not in TABLE_NAMES:
        raise InvalidInput(f"table: {table!r} is not one of {', '.join(TABLE_NAMES)}")
    if fmt not in DOWNLOAD_FORMATS:
        raise InvalidInput(f"format: {fmt!r} is not one of {', '.join(DOWNLOAD_FORMATS)}")
    frame = _table_builders(engine, token, params)[table]()
    return write_table(frame, directory / f"h2h-{table}.{fmt}")
