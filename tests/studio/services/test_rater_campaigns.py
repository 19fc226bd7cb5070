"""Comparing the LLM rater with the people for "all campaigns" (issue 16 item 9), on the real store (SQLite and
PostgreSQL): every pairwise campaign is compared, one result each, other workflows left out; no pairwise campaign is
an empty answer, a campaign that is not pairwise a refusal naming it; the Curate page says which were compared."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from studio.db import read_session, write_session
from studio.errors import InvalidInput, PermissionDenied
from studio.models import UserPublic
from studio.services.campaigns import TargetSelection, create_campaign
from studio.services.rater import RaterAgreement
from studio.ui import curate_views as views
from studio.usecases import curate
from studio.workflows import load_schemas


def compare(engine: Engine, caller: UserPublic, campaign: str | None) -> list[RaterAgreement]:
    with read_session(engine) as session:
        return curate.rater_agreement(session, caller=caller, campaign=campaign)


def test_all_campaigns_compares_each_pairwise_campaign(voted: Engine, users: dict[str, UserPublic]) -> None:
    curator = users["curator"]
    assert compare(voted, curator, None) == [] and compare(voted, curator, "") == []  # the crowd vote is not pairwise
    assert "there is no pairwise campaign" in views.rater_note(None, [])
    selection = TargetSelection(subtasks=["dialogue_base"])
    with write_session(voted) as session:
        for name in ("pairs-b", "pairs-a"):
            create_campaign(session, name=name, schema=load_schemas()["pairwise"], selection=selection)
    every = compare(voted, curator, None)
    assert [agreement.campaign for agreement in every] == ["pairs-a", "pairs-b"]
    assert all(agreement.items_with_llm == 0 and agreement.agreement is None for agreement in every)
    assert [agreement.campaign for agreement in compare(voted, curator, "pairs-b")] == ["pairs-b"]
    with pytest.raises(InvalidInput, match="'vote' is not a pairwise campaign"):
        compare(voted, curator, "vote")
    with pytest.raises(PermissionDenied):
        compare(voted, users["annotator"], None)
    note = views.rater_note(None, every)
    assert "on every pairwise campaign (2): pairs-a, pairs-b" in note and "cohen_kappa" in note
    assert "on pairs-b." in views.rater_note("pairs-b", every[1:])
    frame = views.rater_frame(every)
    assert list(frame["campaign"]) == ["pairs-a", "pairs-b"] and list(frame.columns)[0] == "campaign"
    assert list(views.rater_frame([]).columns) == [""]


def test_the_note_escapes_campaign_names() -> None:
    hostile = RaterAgreement(
        campaign="<img src=x onerror=alert(1)>",
        items_with_llm=0,
        llm_without_winner=0,
        humans_split=0,
        items_compared=0,
        agreement=None,
        cohen_kappa=None,
        human_votes=0,
        vote_agreement=None,
    )
    note = views.rater_note(None, [hostile])
    assert "<img" not in note and "&lt;img src=x onerror=alert(1)&gt;" in note
