"""Adjudication's aggregation rule (``median`` yielding ``J_human``): the experts' median rubric score is J_human, and
J_final = α·5S + (1−α)·J_human is written to the score of each response the judge flagged
(:mod:`studio.services.aggregation` runs it).
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import func, select
from sqlmodel import Session, col

from studio.models import ResponseRow, ScoreRow, utc_now
from studio.results.aggregate import adjudicate
from studio.rules import MedianRule
from studio.services.aggregation_scenarios import Run, table_records

__all__ = ["aggregate_median", "pending_adjudication"]


def _differs(old: float | None, new: float | None) -> bool:
    if old is None or new is None:
        return old is not new
    return abs(old - new) > 1e-9


def aggregate_median(run: Run, rule: MedianRule) -> None:
    """Adjudication: the experts' median rubric score is J_human; J_final = α·5S + (1−α)·J_human on the score."""
    session, complete, summary = run.session, run.complete, run.summary
    rubric = pd.DataFrame(
        {
            "item": complete["response_id"],
            "expert": complete["annotator"],
            "score": [values.get(rule.score) for values in complete["values"]],
        }
    ).dropna()
    if rule.yields == "J_human" and not rubric.empty:
        rubric["item"] = rubric["item"].astype(int)
        ids = sorted(set(rubric["item"]))
        rows = {
            row.response_id: row
            for row in session.execute(select(ScoreRow).where(col(ScoreRow.response_id).in_(ids))).scalars()
        }
        result = adjudicate(rubric, {rid: rows[rid].S if rid in rows else None for rid in ids})
        flagged = _flagged_ids(session, ids)
        for item, j_human, j_final in zip(result["item"], result["J_human"], result["J_final"], strict=True):
            row = rows.get(int(item))
            if row is None:
                continue
            # An audited item the judge did not flag keeps J_final = J (ARCHITECTURE.md "Scores"): the audit measures
            # the judge (studio.results.ppi), it does not replace its score in Table 2.
            new_final = (None if pd.isna(j_final) else float(j_final)) if int(item) in flagged else row.J_final
            if _differs(row.J_human, float(j_human)) or _differs(row.J_final, new_final):
                row.J_human, row.J_final, row.updated_at = float(j_human), new_final, utc_now()
                summary.changed += 1
        session.flush()
        summary.table = table_records(result)
    summary.pending_adjudication = pending_adjudication(session)


def _flagged_ids(session: Session, ids: list[int]) -> set[int]:
    """The responses among ``ids`` flagged for human adjudication (J < tau or no judge score)."""
    flagged = col(ResponseRow.needs_adjudication).is_(True)
    query = select(col(ResponseRow.id)).where(col(ResponseRow.id).in_(ids), flagged)
    return {int(rid) for rid in session.execute(query).scalars()}


def pending_adjudication(session: Session) -> int:
    """Responses flagged for human adjudication that no expert panel has scored yet (J_human missing)."""
    query = (
        select(func.count(col(ResponseRow.id)))
        .join(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
        .where(col(ResponseRow.needs_adjudication).is_(True), col(ScoreRow.J_human).is_(None))
    )
    return int(session.execute(query).scalar_one())
