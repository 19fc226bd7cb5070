"""Decision-preserving stopping in the live queue (ARCHITECTURE.md "Crowd decisions"), on SQLite and PostgreSQL: a
stopped item is never handed out again, a lease open at the stop may still submit and its vote counts, every stop is
recorded once, a stopped item counts as complete, and a campaign without ``stopping:`` behaves as before."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import col

from studio.db import read_session, write_session
from studio.errors import Conflict
from studio.models import Answer, Campaign, Item, Lease, UserPublic
from studio.models.campaigns import ItemStop
from studio.results.aggregate import complete_answers
from studio.results.store_views import campaign_answers
from studio.services import research_quality
from studio.services.aggregation import aggregate_campaign
from studio.services.answers import submit_answer
from studio.services.auth import hash_password
from studio.services.campaigns import TargetSelection, campaign_summaries, create_campaign
from studio.services.progress import campaign_progress, complete_at, quota_report
from studio.services.queue import ItemView, next_item
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.conftest import add_people

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def crowd_schema(stopping: dict[str, Any] | None) -> WorkflowSchema:
    """The bundled crowd_vote workflow, with ``stopping`` when given (validated as a YAML file's would be)."""
    schema = load_schemas()["crowd_vote"]
    if stopping is None:
        return schema
    return WorkflowSchema.model_validate({**schema.model_dump(mode="json"), "stopping": stopping})


def new_campaign(
    engine: Engine, *, quota: int, stopping: dict[str, Any] | None, subtasks: list[str] | None = None
) -> None:
    with write_session(engine) as session:
        create_campaign(
            session,
            name="stop",
            schema=crowd_schema(stopping),
            people_per_item=quota,
            selection=TargetSelection(subtasks=subtasks),
        )


def people(engine: Engine, count: int, prefix: str = "crowd") -> list[UserPublic]:
    return add_people(engine, hash_password("pw"), [f"{prefix}{n}" for n in range(count)], "annotator")


def take(engine: Engine, user: UserPublic) -> ItemView | None:
    with write_session(engine) as session:
        return next_item(session, campaign="stop", user=user)


def answer(engine: Engine, user: UserPublic, view: ItemView) -> None:
    with write_session(engine) as session:
        submit_answer(
            session,
            campaign="stop",
            user=user,
            item_id=view.item_id,
            lease_id=view.lease_id,
            submission_id=f"s-{user.id}-{view.item_id}",
            answers=VOTE,
        )


def stops(engine: Engine) -> list[ItemStop]:
    with read_session(engine) as session:
        return list(session.execute(select(ItemStop).order_by(col(ItemStop.item_id))).scalars().all())


def four_leases_three_votes(corpus: Engine, stopping: dict[str, Any] | None) -> tuple[list[UserPublic], ItemView]:
    """Quota 5 on the six scenarios: four people take the first item (fill order), three of them vote alike; the
    fourth lease is still open. Returns the people (six) and the fourth one's view."""
    new_campaign(corpus, quota=5, stopping=stopping)
    crowd = people(corpus, 6)
    views = [take(corpus, person) for person in crowd[:4]]
    assert all(view is not None for view in views) and len({view.item_id for view in views if view}) == 1
    for person, view in zip(crowd[:3], views[:3], strict=True):
        assert view is not None
        answer(corpus, person, view)
    fourth = views[3]
    assert fourth is not None
    return crowd, fourth


def test_a_stopped_item_is_not_handed_out_again_and_a_lease_open_at_the_stop_still_counts(corpus: Engine) -> None:
    crowd, fourth = four_leases_three_votes(corpus, {"rule": "curtail"})
    # 3 keep of 5: the 2 votes to come (one of them the open lease) cannot change the verdict or the label.
    (stop,) = stops(corpus)
    assert (stop.item_id, stop.votes_at_stop, stop.rule, stop.probability) == (fourth.item_id, 3, "curtail", 1.0)
    # Without the stop the fifth person would get it (fill order: 3 answers + 1 lease < 5).
    fifth = take(corpus, crowd[4])
    assert fifth is not None and fifth.item_id != fourth.item_id
    again = take(corpus, crowd[3])  # the holder of the open lease gets it back, and may still submit
    assert again is not None and (again.item_id, again.lease_id) == (fourth.item_id, fourth.lease_id)
    answer(corpus, crowd[3], fourth)
    assert len(stops(corpus)) == 1 and stops(corpus)[0].votes_at_stop == 3  # recorded once, votes at the stop kept
    with read_session(corpus) as session:
        campaign = session.execute(select(Campaign)).scalars().one()
        item = session.get(Item, fourth.item_id)
        assert item is not None and item.answer_count == 4 and item.stopped_at is not None
        assert campaign_progress(session, campaign) == {
            "answers": 4,
            "items": 6,
            "complete_items": 1,
            "stopped_early": 1,
        }
        assert campaign_summaries(session)[0].complete == "1 / 6 complete (stopped early: 1)"
        research_progress, _people = research_quality.progress(session)  # the Research page's progress table
        assert research_progress.set_index("campaign").loc["stop", "complete"] == "1 / 6 complete (stopped early: 1)"
        report = quota_report(session, campaign)
        assert (report.at_quota, report.stopped_early, report.below_quota, report.unanswered) == (1, 1, 0, 5)
        answers = campaign_answers(session, campaign)
        decided = complete_answers(answers, quota=complete_at(campaign))
    assert set(decided["item"]) == {fourth.item_id} and len(decided) == 4
    with write_session(corpus) as session:  # aggregation decides the stopped item on the votes it has
        summary = aggregate_campaign(session, campaign="stop")
    assert (summary.complete_items, summary.statuses) == (1, {"accepted": 1})


def test_a_campaign_without_stopping_behaves_as_before(corpus: Engine) -> None:
    crowd, fourth = four_leases_three_votes(corpus, None)
    assert stops(corpus) == []
    fifth = take(corpus, crowd[4])
    assert fifth is not None and fifth.item_id == fourth.item_id  # the last free slot, as the quota says
    with read_session(corpus) as session:
        campaign = session.execute(select(Campaign)).scalars().one()
        assert campaign_progress(session, campaign) == {"answers": 3, "items": 6, "complete_items": 0}
        assert campaign_summaries(session)[0].complete == "0 / 6 complete"
        assert session.execute(select(func.count()).where(col(Item.stopped_at).is_not(None))).scalar_one() == 0
        assert complete_answers(campaign_answers(session, campaign), quota=complete_at(campaign)).empty


def test_predictive_records_its_probability(corpus: Engine) -> None:
    new_campaign(
        corpus, quota=20, stopping={"rule": "predictive", "confidence": 0.9, "min_votes": 5}, subtasks=["dialogue_base"]
    )
    crowd = people(corpus, 20)
    for person in crowd:
        view = take(corpus, person)
        if view is None:
            break
        answer(corpus, person, view)
    (stop,) = stops(corpus)
    assert stop.rule == "predictive" and stop.votes_at_stop >= 5 and 0.9 <= stop.probability <= 1.0
    assert stop.votes_at_stop < 20


@pytest.mark.parametrize("racers", [6])
def test_racing_raters_never_get_a_stopped_item_and_every_stop_is_recorded_once(corpus: Engine, racers: int) -> None:
    """The dialogue_base and itinerary_basic items, quota 20, curtail (11 alike votes stop an item): ``racers``
    threads, each answering as a fresh person from a pool of 60 until the queue gives nothing. At a stop at most
    ``racers - 1`` other leases are open, so an item never handed out after its stop ends with at most
    11 + racers - 1 < 20 answers."""
    new_campaign(corpus, quota=20, stopping={"rule": "curtail"}, subtasks=["dialogue_base", "itinerary_basic"])
    pool = people(corpus, 60)
    lock, barrier = threading.Lock(), threading.Barrier(racers)
    outcomes: list[str] = []

    def race() -> None:
        barrier.wait()
        while True:
            with lock:
                if not pool:
                    return
                person = pool.pop()
            view = take(corpus, person)
            if view is None:
                outcomes.append("none")
                return
            try:
                answer(corpus, person, view)
                outcomes.append("stored")
            except Conflict:
                outcomes.append("conflict")

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    recorded = stops(corpus)
    with read_session(corpus) as session:
        items = session.execute(select(Item)).scalars().all()
        answers = session.execute(select(func.count(col(Answer.id)))).scalar_one()
        query = select(col(Lease.item_id), func.count()).group_by(col(Lease.item_id))
        leases: dict[int, int] = {item: count for item, count in session.execute(query).all()}
    assert "conflict" not in outcomes and outcomes.count("stored") == answers  # every open lease's vote stored
    assert len(items) >= 2 and [stop.item_id for stop in recorded] == sorted(item.id for item in items)
    assert all(stop.votes_at_stop == 11 for stop in recorded)
    for item in items:
        assert item.stopped_at is not None
        assert 11 <= item.answer_count <= 11 + racers - 1, item.answer_count
        assert leases[item.id] == item.answer_count  # every lease handed out was answered: none after the stop
    assert take(corpus, people(corpus, 1, prefix="late")[0]) is None
