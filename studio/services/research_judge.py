"""The judge-bias card from the store: the adjudicated items' J_judge, J_human, S and response length, read as the
calibration reads them (one variant, one score signature, one judge — ``research_quality.one_scoring``), and
``studio.results.judge_bias`` over them. Read-only; ``studio.usecases.research.judge_bias`` authorises.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy import func, select
from sqlmodel import Session, col

from pipeline.curation.records import PairJudgment
from studio.models import ResponseRow
from studio.results.judge_bias import DEFAULT_BINS, JudgeBiasCard, judge_bias_card
from studio.results.store_views import score_frame
from studio.services.research import with_judge_labels
from studio.services.research_quality import one_scoring

#: What :func:`judge_items` loads per score row.
JUDGE_ITEM_COLUMNS: tuple[str, ...] = (
    "response_id",
    "subtask",
    "S",
    "J_judge",
    "J_human",
    "signature",
    "judge_model",
    "judge_prompt_version",
)


def _lengths(session: Session, response_ids: list[int]) -> dict[int, int]:
    """Each response's text length in characters (SQL ``length``, characters on SQLite and PostgreSQL alike)."""
    if not response_ids:
        return {}
    query = select(col(ResponseRow.id), func.length(col(ResponseRow.text))).where(col(ResponseRow.id).in_(response_ids))
    return {int(row[0]): int(row[1]) for row in session.execute(query).all()}


def judge_items(
    session: Session, *, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> pd.DataFrame:
    """The adjudicated items scored by the judge too (J_judge, J_human and S present) of ``variant`` (all when
    None), one signature and one judge: columns response_id, J_judge, J_human, S, length (characters)."""
    rows = one_scoring(
        with_judge_labels(
            score_frame(session, variant=variant, columns=JUDGE_ITEM_COLUMNS, present=("J_judge", "J_human", "S"))
        ),
        signature=signature,
        judge=judge,
    )
    lengths = _lengths(session, [int(value) for value in rows["response_id"]])
    out = rows.loc[:, ["response_id", "J_judge", "J_human", "S"]].reset_index(drop=True)
    return out.assign(length=[lengths[int(value)] for value in out["response_id"]])


def judge_bias(
    session: Session,
    *,
    variant: str | None = None,
    signature: str | None = None,
    judge: str | None = None,
    pairs: Sequence[PairJudgment] | None = None,
    bins: int = DEFAULT_BINS,
) -> JudgeBiasCard:
    """The judge-bias card over :func:`judge_items` and, for the position rows, ``pairs`` (None: no
    ``h2h judge-pairs`` file; the rows say how to make one). Seeded bootstrap defaults (``pipeline.bootstrap``)."""
    return judge_bias_card(
        judge_items(session, variant=variant, signature=signature, judge=judge), pairs=pairs, bins=bins
    )
