"""A pairwise campaign's ranking from the store: its votes as ``h2h export votes`` gives them (both sides in the
order each person saw them, the choice as made: ``studio.services.votes_export.vote_rows``), handed to the pure
``studio.results.ranking``. Read-only; who may read it is checked by ``studio.usecases.research.ranking``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine
from sqlmodel import Session

from studio.errors import InvalidInput, NotFound
from studio.results.ranking import RULE, VOTE_COLUMNS, Ranking, bradley_terry
from studio.services.queue import campaign_schema, get_campaign
from studio.services.votes_export import vote_rows
from studio.workflows import Pairwise


@dataclass(frozen=True)
class RankingView:
    """One pairwise campaign's :class:`~studio.results.ranking.Ranking`, the question it ranks, the votes read and
    the rule in words."""

    campaign: str
    question: str
    ranking: Ranking
    rule: str = RULE


def pairwise_question(session: Session, *, campaign: str) -> str:
    """The campaign's first pairwise question; ``NotFound`` for an unknown campaign, ``InvalidInput`` for one with
    no pairwise question."""
    found = get_campaign(session, campaign)
    for question in campaign_schema(found).questions:
        if isinstance(question, Pairwise):
            return str(question.id)
    raise InvalidInput(f"campaign: {campaign!r} has no pairwise question (a ranking needs a pairwise campaign)")


def pair_votes(session: Session, *, campaign: str, question: str) -> pd.DataFrame:
    """The campaign's votes on ``question`` (:data:`studio.results.ranking.VOTE_COLUMNS`), unanswered ones left out."""
    engine = session.get_bind()
    assert isinstance(engine, Engine)
    rows = [
        {column: row[column] for column in VOTE_COLUMNS}
        for row in vote_rows(engine, campaign, question=question)
        if row["value_shown"] in ("A", "B", "tie")
    ]
    return pd.DataFrame(rows, columns=list(VOTE_COLUMNS))


def ranking(session: Session, *, campaign: str) -> RankingView:
    """The Bradley–Terry ranking of a pairwise campaign's systems (``studio.results.ranking.bradley_terry``).

    ``NotFound`` for an unknown campaign or one without votes; ``InvalidInput`` for a campaign without a pairwise
    question or whose votes name fewer than two systems."""
    question = pairwise_question(session, campaign=campaign)
    votes = pair_votes(session, campaign=campaign, question=question)
    if votes.empty:
        raise NotFound(f"campaign {campaign!r} has no votes on {question!r} yet")
    try:
        result = bradley_terry(votes)
    except ValueError as error:
        raise InvalidInput(f"campaign: {error}") from None
    return RankingView(campaign=campaign, question=question, ranking=result)
