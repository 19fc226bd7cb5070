"""Revising one's own answer (issue 16 item 3): a revision that changes nothing stores nothing and says so."""

from __future__ import annotations

from sqlalchemy import Engine, func, select

from studio.db import read_session, write_session
from studio.models import Answer, AnswerRevision, CampaignPublic, UserPublic
from studio.services.answer_values import Revision
from studio.services.answers import revise_answer, submit_answer
from studio.services.queue import next_item

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def history(engine: Engine) -> int:
    with read_session(engine) as session:
        return int(session.execute(select(func.count(AnswerRevision.id))).scalar_one())


def stored(engine: Engine, answer_id: int) -> Answer:
    with read_session(engine) as session:
        found = session.get(Answer, answer_id)
        assert found is not None
        session.expunge(found)
        return found


def revise(engine: Engine, person: UserPublic, item_id: int, answers: dict, seconds: float | None = 5.0):  # noqa: ANN201
    with write_session(engine) as session:
        revision = Revision(answers=answers, seconds_spent=seconds)
        return revise_answer(session, campaign="vote", user=person, item_id=item_id, revision=revision)


def test_a_revision_that_changes_nothing_stores_nothing(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    """Before, the same answer submitted again was stored as a revision ("revised 2×") with a history row and more
    time counted. Values equal once normalised (the order of keys, a multiple choice's order) are the same answer."""
    person = users["annotator"]
    with write_session(corpus) as session:
        view = next_item(session, campaign="vote", user=person)
        assert view is not None
        first = submit_answer(
            session,
            campaign="vote",
            user=person,
            item_id=view.item_id,
            lease_id=view.lease_id,
            submission_id="s-1",
            answers=VOTE,
            seconds_spent=3.0,
        ).answer
    same = revise(corpus, person, view.item_id, {"subtask_label": "dialogue_base", "verdict": "keep", "comment": ""})
    assert same.changed is False and same.answer.revision == 0 and same.answer.values == VOTE
    kept = stored(corpus, first.id)
    assert (kept.revision, kept.values, kept.seconds_spent, kept.updated_at) == (
        0,
        VOTE,
        first.seconds_spent,
        first.updated_at,
    )
    assert history(corpus) == 0
    changed = revise(corpus, person, view.item_id, VOTE | {"verdict": "discard"})
    assert changed.changed is True and changed.answer.revision == 1 and history(corpus) == 1
    again = revise(corpus, person, view.item_id, VOTE | {"verdict": "discard"})
    assert again.changed is False and again.answer.revision == 1 and history(corpus) == 1
    assert stored(corpus, first.id).values == VOTE | {"verdict": "discard"}
