"""The LLM as a rater beside the humans on a pairwise campaign: its items as ``h2h judge-pairs`` input, and how
often its verdicts agree with the people's (one definition, for ``h2h rater-agreement`` and the curator page).

An item's ``response_id`` is side ``a`` and its ``response_b_id`` side ``b``, for the LLM (``PairJudgment.winner``)
and for the people alike (a person's stored preference is the response id they chose, or ``tie``; the A/B order
they were shown is undone when they submit, see ``studio.services.answers``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlmodel import Session, col

from pipeline.curation.records import PairInput
from studio.errors import InvalidInput
from studio.models import Answer, Campaign, Item, PairJudgmentRow, ResponseRow, ScenarioRow
from studio.services.queue import get_campaign
from studio.workflows import Pairwise, WorkflowSchema

SIDES: tuple[str, ...] = ("a", "b", "tie")


class RaterAgreement(BaseModel):
    """The LLM rater against the humans' majority on one pairwise campaign.

    ``items_compared`` counts the items with an LLM winner and a human majority (a strict plurality of the people's
    votes); ``agreement`` is the share of them where the two are equal; ``cohen_kappa`` corrects that for chance
    (None when chance alone explains every match); ``vote_agreement`` is the share of all human votes, on items with
    an LLM winner, equal to that winner. ``llm_without_winner`` counts items the LLM contradicted itself on,
    ``humans_split`` items whose people tied.
    """

    campaign: str
    items_with_llm: int
    llm_without_winner: int
    humans_split: int
    items_compared: int
    agreement: float | None
    cohen_kappa: float | None
    human_votes: int
    vote_agreement: float | None


def _pairwise_schema(session: Session, campaign: str) -> tuple[Any, str]:
    found = get_campaign(session, campaign)
    schema = WorkflowSchema.model_validate(found.schema_snapshot)
    questions = [question.id for question in schema.questions if isinstance(question, Pairwise)]
    if found.target_kind != "response_pair" or not questions:
        raise InvalidInput(f"campaign: {campaign!r} is not a pairwise campaign")
    return found, questions[0]


def pair_inputs(session: Session, *, campaign: str) -> list[PairInput]:
    """The campaign's items as ``h2h judge-pairs`` input, ids ``item-<item id>``, in item order."""
    found, _ = _pairwise_schema(session, campaign)
    texts = dict(session.execute(select(col(ResponseRow.id), col(ResponseRow.text))).all())
    rows = session.execute(
        select(col(Item.id), col(Item.response_id), col(Item.response_b_id), col(ScenarioRow.user_input))
        .join(ScenarioRow, col(ScenarioRow.id) == col(Item.scenario_id))
        .where(col(Item.campaign_id) == found.id)
        .order_by(col(Item.position))
    ).all()
    return [
        PairInput(id=f"item-{item_id}", prompt=prompt, response_a=texts[first], response_b=texts[second])
        for item_id, first, second, prompt in rows
    ]


def _side(value: Any, first: int, second: int) -> str:
    return "a" if value == first else "b" if value == second else "tie"


def _majority(votes: list[str]) -> str | None:
    """The strict plurality of ``votes``; None when the top two tie."""
    ranked = Counter(votes).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def cohen_kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters over ``(first, second)`` labels; None when expected agreement is 1."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(first == second for first, second in pairs) / n
    firsts, seconds = Counter(first for first, _ in pairs), Counter(second for _, second in pairs)
    expected = sum(firsts[label] * seconds[label] for label in SIDES) / (n * n)
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def llm_human_agreement(session: Session, *, campaign: str) -> RaterAgreement:
    """The LLM rater against the humans on ``campaign`` (see :class:`RaterAgreement`)."""
    found, question = _pairwise_schema(session, campaign)
    rows = session.execute(
        select(col(Item.id), col(Item.response_id), col(Item.response_b_id), col(PairJudgmentRow.winner))
        .join(PairJudgmentRow, col(PairJudgmentRow.item_id) == col(Item.id))
        .where(col(Item.campaign_id) == found.id)
    ).all()
    votes: dict[int, list[Any]] = {}
    for item_id, values in session.execute(
        select(col(Answer.item_id), col(Answer.values)).where(col(Answer.campaign_id) == found.id)
    ):
        votes.setdefault(item_id, []).append(values.get(question))
    compared: list[tuple[str, str]] = []
    matching_votes = all_votes = without_winner = split = 0
    for item_id, first, second, winner in rows:
        if winner is None:
            without_winner += 1
            continue
        sides = [_side(value, first, second) for value in votes.get(item_id, [])]
        all_votes += len(sides)
        matching_votes += sum(side == winner for side in sides)
        majority = _majority(sides)
        if majority is None:
            split += bool(sides)
            continue
        compared.append((winner, majority))
    return RaterAgreement(
        campaign=campaign,
        items_with_llm=len(rows),
        llm_without_winner=without_winner,
        humans_split=split,
        items_compared=len(compared),
        agreement=sum(a == b for a, b in compared) / len(compared) if compared else None,
        cohen_kappa=cohen_kappa(compared),
        human_votes=all_votes,
        vote_agreement=matching_votes / all_votes if all_votes else None,
    )


def pairwise_campaigns(session: Session) -> list[str]:
    """The names of the pairwise campaigns (response pairs asked a pairwise question), in name order."""
    rows = session.execute(
        select(col(Campaign.name), col(Campaign.schema_snapshot))
        .where(col(Campaign.target_kind) == "response_pair")
        .order_by(col(Campaign.name))
    )
    return [
        name
        for name, snapshot in rows
        if any(isinstance(question, Pairwise) for question in WorkflowSchema.model_validate(snapshot).questions)
    ]


def llm_human_agreements(session: Session, *, campaign: str | None = None) -> list[RaterAgreement]:
    """The LLM rater against the humans on ``campaign`` (``InvalidInput`` when it is not pairwise), or on each
    pairwise campaign (:func:`pairwise_campaigns`) when ``campaign`` is None: one :class:`RaterAgreement` each."""
    names = [campaign] if campaign else pairwise_campaigns(session)
    return [llm_human_agreement(session, campaign=name) for name in names]
