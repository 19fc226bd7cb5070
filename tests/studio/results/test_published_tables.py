"""Table 3 and Fig. 7 have one definition: ``h2h aggregate``'s summary table and the research views (behind the UI,
the REST API and ``h2h export``) give the same rows for the same campaign, counting only complete items (the
schema's ``min_people_per_item``; every answered item once closed only where the closer chose to decide items below
quota) — while some items still wait for their third rater and after the campaign closes. (The research views used
to count every answer, so a response rated by one of three people was in the published Table 3 but not in the
aggregation's.)"""

from __future__ import annotations

import uuid
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from studio.db import read_session, write_session
from studio.errors import NotFound
from studio.models import Item, ResponseRow, UserPublic
from studio.services import research
from studio.services.aggregation import aggregate_campaign
from studio.services.answers import submit_answer
from studio.services.campaigns import create_campaign, set_campaign_status
from studio.services.queue import next_item
from studio.workflows import load_schemas
from tests.studio.helpers import add_people


def answer_some(engine: Engine, campaign: str, person: UserPublic, count: int, answer: Any) -> int:
    """``person`` answers up to ``count`` items from the real queue; returns how many."""
    for done in range(count):
        with write_session(engine) as session:
            view = next_item(session, campaign=campaign, user=person)
            if view is None:
                return done
            response = session.get(ResponseRow, session.get(Item, view.item_id).response_id)
            submit_answer(
                session,
                campaign=campaign,
                user=person,
                item_id=view.item_id,
                lease_id=view.lease_id,
                submission_id=uuid.uuid4().hex,
                answers=answer(response, person),
                seconds_spent=2.0,
            )
    return count


def summary_table(engine: Engine, campaign: str) -> pd.DataFrame:
    with write_session(engine) as session:
        return pd.DataFrame(aggregate_campaign(session, campaign=campaign).table)


def same(left: pd.DataFrame, right: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(left.reset_index(drop=True), right.reset_index(drop=True), check_dtype=False)


def rate(campaign: str, schema: str, store: Engine, password_hash: str, answer: Any) -> list[UserPublic]:
    """Three raters: the first two answer every item, the third only two items (the others stay incomplete)."""
    with write_session(store) as session:
        create_campaign(session, name=campaign, schema=load_schemas()[schema], people_per_item=3)
    raters = add_people(store, password_hash, [f"{campaign}-r{n}" for n in range(3)], "annotator")
    for person in raters[:2]:
        answer_some(store, campaign, person, 1000, answer)
    assert answer_some(store, campaign, raters[2], 2, answer) == 2
    return raters


def published_and_aggregated(store: Engine, view: Any, campaign: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The research view's table of ``campaign`` (empty when it has no complete item) and the aggregation's."""
    with read_session(store) as session:
        try:
            published = view(session, campaign=campaign)
        except NotFound:
            published = pd.DataFrame()
    return published, summary_table(store, campaign)


def test_table3_is_the_same_in_aggregation_and_research(corpus: Engine, password_hash: str) -> None:
    def answer(response: ResponseRow, person: UserPublic) -> dict[str, Any]:
        if response.variant == "without_sap" and not person.username.endswith("r0"):
            return {"safety": 2, "violation": "yes", "violation_kind": ["dismissive"]}
        return {"safety": 5, "violation": "no"}

    rate("safety", "sap_safety", corpus, password_hash, answer)  # dlg-2's four responses, two of them complete
    published, aggregated = published_and_aggregated(corpus, research.sap_table, "safety")
    same(published, aggregated)
    assert published["responses"].sum() == 2  # the two responses still short of a rater are not in Table 3
    with write_session(corpus) as session:
        set_campaign_status(session, name="safety", status="closed")  # below quota: still not counted
    published, aggregated = published_and_aggregated(corpus, research.sap_table, "safety")
    same(published, aggregated)
    assert published["responses"].sum() == 2
    with write_session(corpus) as session:
        set_campaign_status(session, name="safety", status="closed", decide_below_quota=True)
    published, aggregated = published_and_aggregated(corpus, research.sap_table, "safety")
    same(published, aggregated)
    assert published.set_index("variant")["responses"].to_dict() == {"with_sap": 2, "without_sap": 2}
    # without_sap: the response the third rater answered has 2 yes of 3 (a violation); the other, decided on r0's "no"
    # and r1's "yes", is a 1-1 tie: not a violation by sap_safety.yaml's violation_tie (the paper's reading)
    assert published.set_index("variant")["violation_rate"].to_dict() == {"with_sap": 0.0, "without_sap": 0.5}


def test_fig7_is_the_same_in_aggregation_and_research(corpus: Engine, password_hash: str) -> None:
    def answer(response: ResponseRow, person: UserPublic) -> dict[str, Any]:
        return {"need_recognised": 5 if response.model == "model-alpha" else 2 + int(person.username[-1])}

    # dlg-3's four responses; the bundled schema counts an item from its first rating (min_people_per_item 1)
    rate("follow", "instruction_following", corpus, password_hash, answer)
    published, aggregated = published_and_aggregated(corpus, research.instruction_table, "follow")
    same(published, aggregated)
    with write_session(corpus) as session:
        set_campaign_status(session, name="follow", status="closed")
    published, aggregated = published_and_aggregated(corpus, research.instruction_table, "follow")
    same(published, aggregated)
    explicit = published.set_index("model")["explicit"]
    # each response's ratings are averaged first; a rater of model-beta gives 2, 3 or 4 (r0, r1, r2)
    assert explicit["model-alpha"] == pytest.approx(5.0) and 2.5 <= explicit["model-beta"] <= 3.0
