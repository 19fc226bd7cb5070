"""Prediction-powered itinerary scores from the store: per item the S, J (the judge's), J_final, J_human and whether
a seeded random audit drew it (``item.audit`` in an adjudication campaign), for one variant, signature and judge as
Table 2 takes them (``studio.services.research.leaderboard_rows``, ``choose_rows``), handed to the pure
``studio.results.ppi``. Read-only; who may read it is checked by ``studio.usecases.research.ppi_table``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from sqlalchemy import select
from sqlmodel import Session, col

from studio.errors import NotFound
from studio.models import Campaign, Item
from studio.results.ppi import RULE, ppi_cells
from studio.services.research import LEADERBOARD_SCORE_COLUMNS, choose_rows, leaderboard_rows

#: The score columns one PPI item needs: Table 2's, with the judge's J and the response id (to find its audit).
PPI_SCORE_COLUMNS: tuple[str, ...] = (*LEADERBOARD_SCORE_COLUMNS, "response_id", "J")


@dataclass(frozen=True)
class PpiView:
    """Per (model, judged subtask) cell: ``studio.results.ppi.PPI_COLUMNS``; the rule in words; the variant,
    signature and judge it was computed for; how many responses an audit drew in all."""

    table: pd.DataFrame
    rule: str
    audited: int
    applied: dict[str, str | None] = field(default_factory=dict)


def audited_responses(session: Session) -> set[int]:
    """The response ids some adjudication campaign's seeded random audit drew (``item.audit``). One query."""
    query = (
        select(col(Item.response_id))
        .join(Campaign, col(Campaign.id) == col(Item.campaign_id))
        .where(col(Item.audit).is_(True), col(Campaign.workflow_type) == "adjudication")
        .distinct()
    )
    return {int(rid) for rid in session.execute(query).scalars() if rid is not None}


def ppi_rows(session: Session, *, variant: str | None = None) -> pd.DataFrame:
    """Table 2's per-item rows (J_final blanked while a flagged item awaits adjudication) with J, response_id and
    ``audit`` (True where an audit drew the response)."""
    rows = leaderboard_rows(session, variant=variant, columns=PPI_SCORE_COLUMNS)
    drawn = audited_responses(session)
    return rows.assign(audit=rows["response_id"].isin(drawn))


def ppi_table(
    session: Session, *, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> PpiView:
    """The prediction-powered score of every (model, judged subtask) cell of one variant, signature and judge
    (``studio.results.ppi.ppi_cells``). ``NotFound`` without scores; ``InvalidInput`` when a choice is needed or
    wrong (``studio.services.research.choose_rows``)."""
    rows = ppi_rows(session, variant=variant)
    if rows.empty and variant is not None:  # an unknown variant: choose_rows names the ones present
        rows = ppi_rows(session)
    if rows.empty:
        raise NotFound("scores: the store holds no scores; run h2h ingest first")
    chosen = choose_rows(rows, variant=variant, signature=signature, judge=judge)
    applied = {
        column: (str(chosen[column].dropna().iloc[0]) if chosen[column].notna().any() else None)
        for column in ("variant", "signature", "judge")
    }
    return PpiView(table=ppi_cells(chosen), rule=RULE, audited=int(chosen["audit"].sum()), applied=applied)
