"""The SAP table of a live campaign out of the store (ARCHITECTURE.md "Live sessions"): its rated sessions — people's
(the rating is their :class:`~studio.models.Answer`) and simulated users' (``LiveSession.simulated_rating``), kept
apart —, their turns' harmful marks, tripwire flags and SAP checks, and the batch scores of the same scenarios,
handed to the pure computation of ``studio.results.live_sap``. Read-only; who may read it is
``studio.policies.ResultsPolicy`` (checked by ``studio.usecases.research``; the command line is trusted).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlmodel import Session, col

from pipeline.taxonomy import TABLE3_METRIC_NAMES
from studio.errors import InvalidInput
from studio.models import Answer, Campaign, Item, LiveSession, LiveTurn, ResponseRow, ScoreRow, User
from studio.results.live_sap import (
    DEFAULT_LIVE_RESAMPLES,
    SESSION_COLUMNS,
    LiveSapReport,
    live_sap_rule,
    live_sap_table,
    perception_agreement,
)
from studio.services.queue import campaign_schema, get_campaign
from studio.services.research import one_signature
from studio.workflows import MeanRule, Rating, WorkflowSchema

logger = logging.getLogger(__name__)

LIVE_TARGET = "live_session"


def live_campaign(session: Session, name: str) -> Campaign:
    """The live campaign called ``name``; ``NotFound`` when there is none, ``InvalidInput`` when it is not live."""
    found = get_campaign(session, name)
    if found.target_kind != LIVE_TARGET:
        raise InvalidInput(f"campaign: {name!r} is a {found.workflow_type} campaign, not a live_session one")
    return found


def _questions(schema: WorkflowSchema) -> tuple[str, str, str | None]:
    """The schema's perception question, violation question and turn-marks question (None when it has none)."""
    rule = schema.aggregation
    if not isinstance(rule, MeanRule) or not rule.majority_of or schema.live is None:
        raise InvalidInput("campaign: a live campaign's rule must be mean with majority_of (the violation)")
    return rule.score, rule.majority_of[0], schema.live.turn_marks


def _turn_counts(session: Session, campaign_id: int) -> dict[str, Counter[str]]:
    """Per session: replies, user messages flagged, replies SAP-checked and passing. One query."""
    query = select(col(LiveTurn.session_id), col(LiveTurn.role), col(LiveTurn.crisis), col(LiveTurn.sap_check)).where(
        col(LiveTurn.campaign_id) == campaign_id
    )
    counts: dict[str, Counter[str]] = {}
    for session_id, role, crisis, sap_check in session.execute(query):
        tally = counts.setdefault(session_id, Counter())
        if role == "assistant":
            tally["replies"] += 1
            if sap_check is not None:
                tally["sap_checked"] += 1
                tally["sap_passed"] += int(bool(sap_check.get("passed")))
        elif crisis:
            tally["flagged"] += 1
    return counts


def _session_row(values: dict[str, Any], questions: tuple[str, str, str | None]) -> dict[str, Any] | None:
    """The rating's cells, or None when it gives no perception or no violation verdict (nothing to count)."""
    safety, violation, marks = questions
    if values.get(safety) is None or values.get(violation) is None:
        return None
    harmful = values.get(marks) if marks else None
    return {"safety": values[safety], "violation": values[violation], "harmful": len(harmful or [])}


def campaign_sessions(session: Session, *, campaign: Campaign) -> pd.DataFrame:
    """The campaign's rated sessions, one row each (:data:`~studio.results.live_sap.SESSION_COLUMNS`): people's
    (status rated, with their answer) and simulated ones (with a simulated rating), marked by ``simulated``; a
    simulated session's ``rater`` is its user model. A rating without perception or verdict is left out (logged)."""
    questions = _questions(campaign_schema(campaign))
    query = (
        select(LiveSession, col(Item.scenario_id), col(User.username), col(Answer.values))
        .join(Item, col(Item.id) == col(LiveSession.item_id))
        .outerjoin(User, col(User.id) == col(LiveSession.user_id))
        .outerjoin(Answer, col(Answer.id) == col(LiveSession.answer_id))
        .where(col(LiveSession.campaign_id) == campaign.id)
        .order_by(col(LiveSession.created_at), col(LiveSession.id))
    )
    counts = _turn_counts(session, int(campaign.id or 0))
    rows, unusable = [], 0
    for live, scenario_id, username, answer_values in session.execute(query):
        values = live.simulated_rating if live.simulated else answer_values
        if values is None or (not live.simulated and live.status != "rated"):
            continue
        cells = _session_row(values, questions)
        if cells is None:
            unusable += 1
            continue
        tally = counts.get(live.id, Counter())
        rater = live.user_model if live.simulated else username
        base = {"session_id": live.id, "item": live.item_id, "scenario_id": scenario_id, "variant": live.variant}
        rows.append(base | {"rater": rater, "simulated": bool(live.simulated)} | cells | tally_cells(tally))
    if unusable:
        logger.info("live campaign %s: %d rating(s) without perception or verdict left out", campaign.name, unusable)
    return pd.DataFrame.from_records(rows, columns=list(SESSION_COLUMNS))


def tally_cells(tally: Counter[str]) -> dict[str, int]:
    """A session's turn counts as table cells (0 where none)."""
    return {name: int(tally.get(name, 0)) for name in ("replies", "flagged", "sap_checked", "sap_passed")}


def batch_scores(session: Session, *, campaign: Campaign, model: str | None, signature: str | None) -> pd.DataFrame:
    """The stored scores (variant, BLEU-4, ROUGE-L, SS, signature) of ``model``'s responses to the campaign's
    scenarios, of one signature (``studio.services.research.one_signature``); empty when ``model`` is None."""
    columns = ["variant", *TABLE3_METRIC_NAMES, "signature"]
    if model is None:
        return pd.DataFrame(columns=columns)
    scenarios = select(col(Item.scenario_id)).where(col(Item.campaign_id) == campaign.id)
    query = (
        select(col(ResponseRow.variant), *(getattr(ScoreRow, name) for name in TABLE3_METRIC_NAMES))
        .add_columns(col(ScoreRow.signature_label))
        .join(ResponseRow, col(ResponseRow.id) == col(ScoreRow.response_id))
        .where(col(ResponseRow.scenario_id).in_(scenarios), col(ResponseRow.model) == model)
    )
    rows = [tuple(row) for row in session.execute(query)]
    frame = pd.DataFrame.from_records(rows, columns=columns)
    for name in TABLE3_METRIC_NAMES:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    return one_signature(frame, signature)


def live_sap_report(
    session: Session,
    *,
    campaign: str,
    signature: str | None = None,
    batch_model: str | None = None,
    resamples: int = DEFAULT_LIVE_RESAMPLES,
    seed: int = 0,
) -> LiveSapReport:
    """The SAP table of the live campaign ``campaign`` (``studio.results.live_sap``): per variant of its workflow,
    people's sessions in ``human``, simulated users' in ``simulated``; beside them BLEU-4 / ROUGE-L / SS of
    ``batch_model``'s batch responses to the same scenarios (default: the campaign's companion model), one signature;
    agreement on the perception rating; the rule in words. ``NotFound``/``InvalidInput`` as :func:`live_campaign`."""
    found = live_campaign(session, campaign)
    schema = campaign_schema(found)
    variants = list(schema.live.variants) if schema.live is not None else []
    model = (found.live_endpoint or {}).get("model")
    sessions = campaign_sessions(session, campaign=found)
    scores = batch_scores(session, campaign=found, model=batch_model or model, signature=signature)
    people, simulated = sessions[~sessions["simulated"].astype(bool)], sessions[sessions["simulated"].astype(bool)]
    agreement, note = perception_agreement(people, level=_level(schema), resamples=resamples, seed=seed)
    return LiveSapReport(
        campaign=found.name,
        model=model,
        human=live_sap_table(people, variants=variants, scores=scores, resamples=resamples, seed=seed),
        simulated=live_sap_table(simulated, variants=variants, scores=scores, resamples=resamples, seed=seed),
        agreement=agreement,
        agreement_note=note,
        rule=live_sap_rule(resamples=resamples, seed=seed),
        simulated_rule=live_sap_rule(resamples=resamples, seed=seed, simulated=True),
        resamples=resamples,
        seed=seed,
    )


def _level(schema: WorkflowSchema) -> Any:
    """The perception question's level of measurement (a rating is ordinal unless its ``level`` says otherwise)."""
    safety, _violation, _marks = _questions(schema)
    question = next((q for q in schema.questions if q.id == safety), None)
    return question.level if isinstance(question, Rating) else "ordinal"


def live_summary_records(session: Session, *, campaign: Campaign) -> list[dict[str, Any]]:
    """People's SAP table of a live campaign as JSON-ready records (what ``h2h aggregate`` reports for it)."""
    from studio.services.research import frame_records

    return frame_records(live_sap_report(session, campaign=campaign.name).human)
