"""The queue's rules (ARCHITECTURE.md "Rules every workflow obeys"): quota, least-answered first, leases, skips, no
hoarding, races."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from sqlalchemy import Engine, func, select

from studio.db import read_session, write_session
from studio.errors import Conflict, NotFound, PermissionDenied
from studio.models import Answer, CampaignPublic, Item, Lease, UserPublic, utc_now
from studio.services.answers import submit_answer
from studio.services.auth import hash_password
from studio.services.campaigns import TargetSelection, create_campaign, set_campaign_status
from studio.services.queue import next_item, skip_item
from studio.usecases import annotate
from studio.workflows import load_schemas
from tests.studio.conftest import add_people

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def annotators(engine: Engine, count: int, prefix: str = "crowd") -> list[UserPublic]:
    return add_people(engine, hash_password("pw"), [f"{prefix}{n}" for n in range(count)], "annotator")


def valid_answers(questions: list[dict]) -> dict:
    """A valid answer to every unconditional question of a public form (first option, lowest rating, A)."""
    chosen: dict = {}
    for question in questions:
        if question.get("when"):
            continue
        if question["type"] == "single_choice":
            chosen[question["id"]] = question["options"][0]["value"]
        elif question["type"] in ("rating", "number"):
            chosen[question["id"]] = int(question["min"])
        elif question["type"] == "pairwise":
            chosen[question["id"]] = "A"
        elif question["type"] == "multiple_choice":
            chosen[question["id"]] = [question["options"][0]["value"]]
        elif question.get("required"):
            chosen[question["id"]] = "note"
    return chosen


def take(engine: Engine, user: UserPublic, name: str = "vote", **kwargs):  # noqa: ANN201
    with write_session(engine) as session:
        return next_item(session, campaign=name, user=user, **kwargs)


def answer(engine: Engine, user: UserPublic, view, submission: str, name: str = "vote", **kwargs):  # noqa: ANN001,ANN201
    with write_session(engine) as session:
        return submit_answer(
            session,
            campaign=name,
            user=user,
            item_id=view.item_id,
            lease_id=view.lease_id,
            submission_id=submission,
            answers=kwargs.pop("answers", VOTE),
            **kwargs,
        )


def test_next_hands_out_least_answered_first_and_each_person_answers_an_item_once(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    first, second = annotators(corpus, 2)
    seen_by_first = []
    while (view := take(corpus, first)) is not None:
        seen_by_first.append(view.item_id)
        answer(corpus, first, view, f"first-{view.item_id}")
    assert len(seen_by_first) == 6 == len(set(seen_by_first))
    assert seen_by_first == sorted(seen_by_first)  # all at 0 answers: stable position order
    view = take(corpus, second)
    assert view is not None and view.item_id == seen_by_first[0]


def test_quota_counts_answers_and_live_leases_and_an_expired_lease_frees_its_slot(
    corpus: Engine, campaign: CampaignPublic
) -> None:
    people = annotators(corpus, 3)
    now = utc_now()
    views = [take(corpus, person, now=now) for person in people[:2]]
    # Least-answered first counts stored answers: both start on the first item, which then has no free slot.
    assert views[0].item_id == views[1].item_id
    # Fill every item with leases: 6 items x 2 people = 12 slots; 2 taken.
    fillers = annotators(corpus, 10, prefix="filler")
    for person in fillers:
        assert take(corpus, person, now=now) is not None
    late = people[2]
    assert take(corpus, late, now=now) is None
    later = now + timedelta(seconds=601)
    view = take(corpus, late, now=later)
    assert view is not None


def test_a_live_lease_returns_the_same_item_and_skip_moves_it_to_the_end(
    corpus: Engine, campaign: CampaignPublic
) -> None:
    (person,) = annotators(corpus, 1)
    view = take(corpus, person)
    again = take(corpus, person)
    assert (again.item_id, again.lease_id) == (view.item_id, view.lease_id)
    with write_session(corpus) as session:
        skip_item(session, campaign="vote", user=person, item_id=view.item_id, lease_id=view.lease_id)
    order = []
    while (current := take(corpus, person)) is not None:
        order.append(current.item_id)
        answer(corpus, person, current, f"s-{current.item_id}")
    assert order[-1] == view.item_id and len(order) == 6


def test_closed_campaign_and_wrong_role_are_refused(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    def offered(user: UserPublic, name: str = "vote") -> object:  # through the use case: it authorises first
        with write_session(corpus) as session:
            return annotate.next_item(session, caller=user, campaign=name, lease_seconds=600)

    with pytest.raises(PermissionDenied, match="role 'expert'"):
        offered(users["expert"])
    with write_session(corpus) as session:
        set_campaign_status(session, name="vote", status="closed")
    with pytest.raises(PermissionDenied, match="closed"):
        take(corpus, users["annotator"])  # the queue's own rule, for every caller
    with pytest.raises(PermissionDenied, match="closed"):
        offered(users["annotator"])
    with pytest.raises(NotFound, match="campaign"):
        offered(users["annotator"], name="nope")
    with read_session(corpus) as session:
        assert session.execute(select(func.count()).select_from(Lease)).scalar_one() == 0


HIDDEN = (
    "model-alpha",
    "model-beta",
    "with_sap",
    "without_sap",
    "bleu",
    "rouge",
    '"J_judge"',
    '"J"',
    '"S"',
    '"ss"',
    '"judge_score"',
    '"auto_scores"',
    '"model"',
    '"variant"',
    "signature",
    "pair_seed",
    '"values"',
    "submission_id",
    "needs_adjudication",
)


@pytest.mark.parametrize(
    "schema_name", ["crowd_vote", "sap_safety", "instruction_following", "pairwise", "adjudication", "expert_review"]
)
def test_next_never_leaks_model_names_variants_scores_or_answers(
    corpus: Engine, users: dict[str, UserPublic], schema_name: str
) -> None:
    schema = load_schemas()[schema_name]
    with write_session(corpus) as session:
        create_campaign(session, name=schema_name, schema=schema, people_per_item=schema.min_people_per_item)
    person = users[schema.eligible_roles[0]]
    views = []
    while (view := take(corpus, person, name=schema_name)) is not None:
        views.append(view)
        chosen = valid_answers(view.questions)
        answer(corpus, person, view, f"{schema_name}-{view.item_id}", name=schema_name, answers=chosen)
    assert views, f"{schema_name}: the campaign handed out nothing"
    for view in views:
        payload = json.dumps(view.model_dump(mode="json"), ensure_ascii=False)
        for hidden in HIDDEN:
            assert hidden not in payload, f"{schema_name}: {hidden!r} leaked in {payload}"


def test_pairwise_order_is_per_person_and_answers_store_real_response_ids(
    corpus: Engine, users: dict[str, UserPublic]
) -> None:
    with write_session(corpus) as session:
        create_campaign(
            session,
            name="pairs",
            schema=load_schemas()["pairwise"],
            people_per_item=20,
            selection=TargetSelection(subtasks=["dialogue_base"], variants=["with_sap"]),
        )
    people = annotators(corpus, 12)
    shown_first = set()
    for person in people:
        view = take(corpus, person, name="pairs")
        shown_first.add(view.content["response_a"]["text"])
        result = answer(corpus, person, view, f"p-{person.id}", name="pairs", answers={"preference": "A"})
        with read_session(corpus) as session:
            item = session.get(Item, view.item_id)
            chosen = result.answer.values["preference"]
            assert chosen in (item.response_id, item.response_b_id)
            from studio.models import ResponseRow

            assert session.get(ResponseRow, chosen).text == view.content["response_a"]["text"]
    assert len(shown_first) == 2  # 12 people: both orders occur (probability of not: 2 * 2**-12)


@pytest.mark.parametrize("racers", [8])
def test_racing_for_the_last_slot_stores_exactly_the_quota(
    corpus: Engine, users: dict[str, UserPublic], racers: int
) -> None:
    with write_session(corpus) as session:
        create_campaign(
            session,
            name="race",
            schema=load_schemas()["crowd_vote"],
            people_per_item=3,
            selection=TargetSelection(subtasks=["dialogue_base"]),
        )
    people = annotators(corpus, racers)
    now = utc_now()
    views = [take(corpus, person, name="race", now=now) for person in people[:3]]
    assert all(views) and all(take(corpus, person, name="race", now=now) is None for person in people[3:])
    # Every lease expires; all racers then try at once to answer the single item (3 slots).
    later = now + timedelta(seconds=700)
    barrier = threading.Barrier(racers)
    outcomes: list[str] = []

    def race(person: UserPublic, index: int) -> None:
        barrier.wait()
        try:
            view = views[index] if index < 3 else take(corpus, person, name="race", now=later)
            if view is None:
                outcomes.append("none")
                return
            answer(corpus, person, view, f"race-{person.id}", name="race", now=later)
            outcomes.append("stored")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=race, args=(person, index)) for index, person in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with read_session(corpus) as session:
        stored = session.execute(select(func.count(Answer.id))).scalar_one()
        counted = session.execute(select(Item.answer_count)).scalars().all()
    assert stored == 3 == outcomes.count("stored"), outcomes
    assert sum(item for item in counted) == 3
