"""Issue 16 items 5-8: every decision follows a rule written in the workflow and stated where it is shown, and
nothing is decided or published that no rule and no person decided.

- closing a 20-per-item campaign early decides nothing on single votes, unless the closer chose so (recorded);
  one vote has no agreement;
- the crowd's vote and the experts' review combine by the expert workflow's ``with_crowd`` rule (a crowd "revise"
  3/3 against experts' "pass" 3/3 waits for a curator), and Publish publishes exactly its preview;
- the crowd's classification (17 of 20 name another subtask) is applied to the published scenario, or flagged for
  a curator who applies it with one action;
- a small team fills items to their quota first, and the threshold shown is the one used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from pipeline.records import Scenario
from studio.db import read_session, write_session
from studio.errors import Conflict, InvalidInput
from studio.models import AuditLog, Campaign, Item, UserPublic
from studio.models.curation import ScenarioStatus
from studio.services.aggregation import aggregate_campaign
from studio.services.campaigns import campaign_summaries, create_campaign, set_campaign_status
from studio.services.ingest import ingest_run
from studio.usecases import curate
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.helpers import add_people, answer_all, write_run

PERSONA = "你是小林，一个温柔的陪伴者。"
VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def scenarios(count: int, subtask: str = "dialogue_base") -> list[Scenario]:
    return [
        Scenario(id=f"s-{n:03d}", subtask=subtask, persona=PERSONA, user_input=f"第{n}天好累。", reference="辛苦了。")
        for n in range(count)
    ]


@pytest.fixture
def many(engine: Engine, tmp_path: Path) -> Engine:
    """A store with 61 dialogue_base scenarios (and their responses)."""
    ingest_run(engine, write_run(tmp_path / "run", scenarios=scenarios(61)))
    return engine


def schema_with(name: str, **aggregation: Any) -> WorkflowSchema:
    """A bundled workflow with some aggregation settings changed (as a team would in its own YAML file)."""
    bundled = load_schemas()[name]
    data = bundled.model_dump(mode="json")
    data["aggregation"] |= aggregation
    return WorkflowSchema.model_validate(data)


def status_of(engine: Engine, scenario_id: str) -> ScenarioStatus:
    with read_session(engine) as session:
        row = session.get(ScenarioStatus, scenario_id)
        assert row is not None
        session.expunge(row)
        return row


def test_closing_a_20_per_item_campaign_early_decides_nothing_on_single_votes(many: Engine, password_hash: str) -> None:
    with write_session(many) as session:  # one vote per item, as least-answered-first hands them out
        create_campaign(session, name="crowd", schema=load_schemas()["crowd_vote"], assignment="spread")
    for person in add_people(many, password_hash, [f"a{n}" for n in range(61)], "annotator"):
        _answer(many, "crowd", person, times=1)
    with write_session(many) as session:
        closing = set_campaign_status(session, name="crowd", status="closed", actor="admin")
        summary = aggregate_campaign(session, campaign="crowd")
    assert closing.message == (
        "0 of 61 item(s) have their quota of 20 answer(s) and count as decided; 61 are answered but below "
        "quota; 0 have no answer. The 61 below quota stay undecided (aggregation leaves them out)."
    )
    assert (summary.complete_items, summary.below_quota, summary.changed, summary.statuses) == (0, 61, 0, {})
    assert summary.statement.endswith("Closed: its 61 item(s) below quota stay undecided.")
    with write_session(many) as session:
        set_campaign_status(session, name="crowd", status="open", actor="admin")
        set_campaign_status(session, name="crowd", status="closed", actor="admin", decide_below_quota=True)
        decided = aggregate_campaign(session, campaign="crowd")
    assert decided.statuses == {"accepted": 61}
    row = status_of(many, "s-000")
    assert (row.crowd_votes, row.crowd_agreement) == (1, None)  # one vote agrees with nobody: no agreement
    assert row.rule_note == "crowd: keep 1/1 → accepted"
    with read_session(many) as session:
        closes = session.execute(select(AuditLog).where(AuditLog.action == "campaign.closed")).scalars().all()
    assert [(entry.actor, entry.detail["decide_below_quota"], entry.detail["below_quota"]) for entry in closes] == [
        ("admin", False, 61),
        ("admin", True, 61),
    ]


def crowd_then_experts(engine: Engine, password_hash: str, expert_schema: WorkflowSchema) -> None:
    """Three annotators vote "revise" on every scenario; three experts pass every criterion; both aggregated."""
    crowd = add_people(engine, password_hash, ["c1", "c2", "c3"], "annotator")
    experts = add_people(engine, password_hash, ["e1", "e2", "e3"], "expert")
    with write_session(engine) as session:
        create_campaign(session, name="crowd", schema=load_schemas()["crowd_vote"], people_per_item=3)
        create_campaign(session, name="experts", schema=expert_schema)
    answer_all(engine, "crowd", crowd, lambda item, _r, _p: {"verdict": "revise", "subtask_label": "dialogue_base"})
    passed = {"accuracy": "pass", "consistency": "pass", "domain_compliance": "pass"}
    answer_all(engine, "experts", experts, lambda _i, _r, _p: passed)
    with write_session(engine) as session:
        aggregate_campaign(session, campaign="experts")  # the experts first: the order must not matter
        aggregate_campaign(session, campaign="crowd")


@pytest.fixture
def three(engine: Engine, tmp_path: Path) -> Engine:
    ingest_run(engine, write_run(tmp_path / "run", scenarios=scenarios(3)))
    return engine


def test_experts_do_not_silently_override_the_crowd(three: Engine, password_hash: str) -> None:
    crowd_then_experts(three, password_hash, load_schemas()["expert_review"])  # with_crowd: agree_or_curator
    row = status_of(three, "s-000")
    assert (row.status, row.decided_by, row.disagreement) == ("needs_curator", "", True)
    assert row.rule_note == (
        "crowd: revise 3/3 · experts: accuracy pass, consistency pass, domain_compliance pass (3) → accepted → "
        "waits for a curator (agree_or_curator: where the crowd decided the scenario (no tie) and the experts' "
        "outcome differs, neither stands: the scenario waits for a curator; where they agree, or the crowd did not "
        "decide it, the experts' outcome stands)"
    )
    with read_session(three) as session:
        preview = curate.publish_preview(session, caller=_curator(three, password_hash))
    assert preview.rows == [] and "0 scenario(s) would be published" in preview.words()


def _curator(engine: Engine, password_hash: str) -> UserPublic:
    (person,) = add_people(engine, password_hash, ["cur"], "curator")
    return person


def test_a_workflow_that_lets_experts_decide_says_so(three: Engine, password_hash: str) -> None:
    crowd_then_experts(three, password_hash, schema_with("expert_review", with_crowd="experts_decide"))
    row = status_of(three, "s-001")
    assert (row.status, row.decided_by) == ("accepted", "expert:experts")
    assert row.rule_note is not None and row.rule_note.endswith(
        "(experts_decide: the experts' outcome replaces the crowd's)"
    )


def test_publish_publishes_its_preview_only_what_a_rule_or_a_curator_decided(three: Engine, password_hash: str) -> None:
    crowd_then_experts(three, password_hash, schema_with("expert_review", with_crowd="experts_decide"))
    curator = _curator(three, password_hash)
    with write_session(three) as session:
        curate.decide(session, caller=curator, scenario_id="s-002", action="reject", reason="duplicate")
        # A row marked accepted with nobody recorded as deciding it (e.g. written by hand): never published.
        stray = session.get(ScenarioStatus, "s-001")
        assert stray is not None
        stray.decided_by = ""
    with read_session(three) as session:
        preview = curate.publish_preview(session, caller=curator)
    assert [(row.scenario_id, row.decided_by) for row in preview.rows] == [("s-000", "expert:experts")]
    assert preview.undecided_accepted == ["s-001"]
    assert preview.words() == (
        "1 scenario(s) would be published: 1 by the experts' rule; 1 marked accepted with no rule or person recorded "
        "are left out."
    )
    with write_session(three) as session:
        curate.decide(session, caller=curator, scenario_id="s-002", action="accept", reason="fine after all")
        with pytest.raises(Conflict, match="changed since the preview"):
            curate.publish(session, caller=curator, name="v1", expected_hash=preview.content_hash)
    with read_session(three) as session:
        again = curate.publish_preview(session, caller=curator)
    with write_session(three) as session:
        version, created = curate.publish(session, caller=curator, name="v1", expected_hash=again.content_hash)
    assert created and version.n_scenarios == 2 and version.content_hash == again.content_hash
    assert (version.summary["by_curator"], version.summary["by_expert"]) == (["s-002"], ["s-000"])


def twenty_votes(
    engine: Engine, password_hash: str, crowd_schema: WorkflowSchema, vote_of: Callable[[int], dict[str, Any]]
) -> None:
    """20 annotators vote on the one scenario of a ``crowd_schema`` campaign named "crowd", the n-th of them
    ``vote_of(n)``; then the campaign is aggregated."""
    with write_session(engine) as session:
        create_campaign(session, name="crowd", schema=crowd_schema)
    people = add_people(engine, password_hash, [f"p{n:02d}" for n in range(20)], "annotator")
    assert answer_all(engine, "crowd", people, lambda _i, _r, person: vote_of(people.index(person))) == 20
    with write_session(engine) as session:
        aggregate_campaign(session, campaign="crowd")


def seventeen_of_twenty(engine: Engine, password_hash: str, crowd_schema: WorkflowSchema) -> None:
    """20 annotators vote "keep" on one scenario; 17 of them label it itinerary_basic (it is dialogue_base)."""
    twenty_votes(
        engine,
        password_hash,
        crowd_schema,
        lambda rank: {"verdict": "keep", "subtask_label": "itinerary_basic" if rank < 17 else "dialogue_base"},
    )


@pytest.fixture
def one(engine: Engine, tmp_path: Path) -> Engine:
    ingest_run(engine, write_run(tmp_path / "run", scenarios=scenarios(1)))
    return engine


def test_the_crowds_classification_is_applied_to_the_published_scenario(one: Engine, password_hash: str) -> None:
    seventeen_of_twenty(one, password_hash, load_schemas()["crowd_vote"])  # classification: apply
    row = status_of(one, "s-000")
    assert (row.crowd_label, row.label_action, row.status) == ("itinerary_basic", "applied", "accepted")
    curator = _curator(one, password_hash)
    with read_session(one) as session:
        detail = curate.scenario_detail(session, caller=curator, scenario_id="s-000")
    assert (detail["scenario"]["subtask"], detail["ingested"]["subtask"]) == ("itinerary_basic", "dialogue_base")
    with write_session(one) as session:
        version, _ = curate.publish(session, caller=curator, name="v1")
        records = curate.dataset_version_records(session, caller=curator, version="v1")
    assert records[0]["subtask"] == "itinerary_basic" and version.summary["relabelled"] == ["s-000"]


def test_a_flagged_classification_waits_for_a_curators_one_action(one: Engine, password_hash: str) -> None:
    seventeen_of_twenty(
        one, password_hash, schema_with("crowd_vote", classification={"question": "subtask_label", "action": "flag"})
    )
    row = status_of(one, "s-000")
    assert (row.crowd_label, row.label_action) == ("itinerary_basic", "flagged")
    curator = _curator(one, password_hash)
    with read_session(one) as session:
        assert curate.scenario_detail(session, caller=curator, scenario_id="s-000")["scenario"]["subtask"] == (
            "dialogue_base"
        )
    with write_session(one) as session:
        changed = curate.decide(session, caller=curator, scenario_id="s-000", action="relabel", reason="crowd 17/20")
        assert (changed.status, changed.decided_by, changed.edits) == (
            "accepted",
            "crowd:crowd",  # the status and who decided it stay as they were
            {"subtask": "itinerary_basic"},
        )
        with pytest.raises(InvalidInput, match="already itinerary_basic"):
            curate.decide(session, caller=curator, scenario_id="s-000", action="relabel", reason="again")


def test_a_small_team_fills_items_to_their_quota_before_starting_new_ones(many: Engine, password_hash: str) -> None:
    """Five annotators doing 12 votes each at the same time: filling first gives 20 items with 3 votes (agreement for
    each), where least-answered first left 60 items with one vote each and no agreement at all."""
    crowd = load_schemas()["crowd_vote"]
    with write_session(many) as session:
        create_campaign(session, name="fill", schema=crowd, people_per_item=3)
        create_campaign(session, name="spread", schema=crowd, people_per_item=3, assignment="spread")
    people = add_people(many, password_hash, [f"t{n}" for n in range(5)], "annotator")
    for name in ("fill", "spread"):
        for _round in range(12):  # people answering at the same time, one vote each in turn
            for person in people:
                _answer(many, name, person, times=1)
    with read_session(many) as session:
        counts = {
            name: sorted(
                session.execute(
                    select(Item.answer_count)
                    .join(Campaign, Campaign.id == Item.campaign_id)
                    .where(Campaign.name == name)
                ).scalars(),
                reverse=True,
            )
            for name in ("fill", "spread")
        }
        summaries = {summary.name: summary for summary in campaign_summaries(session)}
    assert counts["fill"][:20] == [3] * 20 and sum(counts["fill"]) == 60
    assert counts["spread"][:60] == [1] * 60
    assert summaries["fill"].progress["complete_items"] == 20 and summaries["spread"].progress["complete_items"] == 0
    assert (summaries["fill"].assignment, summaries["spread"].assignment) == ("fill", "spread")


def _answer(engine: Engine, campaign: str, person: UserPublic, *, times: int) -> None:
    """``person`` answers ``times`` items of ``campaign`` as the queue hands them out (keep, dialogue_base)."""
    stored = answer_all(engine, campaign, [person], lambda _i, _r, _p: dict(VOTE), per_person=times)
    assert stored == times, "the campaign ran out of items"


def test_the_completion_threshold_shown_is_the_one_used(corpus: Engine, password_hash: str) -> None:
    """Adjudication asks 3 experts but counts an item from its first score (min_people_per_item 1): the campaign
    lists say "complete at 1", and an item with one score is complete there and in aggregation."""
    with write_session(corpus) as session:
        create_campaign(session, name="adj", schema=load_schemas()["adjudication"])
    (expert,) = add_people(corpus, password_hash, ["solo"], "expert")
    answer_all(corpus, "adj", [expert], lambda _i, _r, _p: {"rubric_score": 4.0, "note": "fine"})
    with write_session(corpus) as session:
        (summary,) = [s for s in campaign_summaries(session) if s.name == "adj"]
        aggregated = aggregate_campaign(session, campaign="adj")
    assert (summary.people_per_item, summary.complete_at) == (3, 1)
    assert summary.progress["complete_items"] == aggregated.complete_items == summary.progress["items"] > 0


def nine_six_five(engine: Engine, password_hash: str, crowd_schema: WorkflowSchema) -> None:
    """20 annotators on one scenario: 9 keep, 6 revise, 5 discard (the most common verdict has under half)."""
    twenty_votes(
        engine,
        password_hash,
        crowd_schema,
        lambda rank: {
            "verdict": "keep" if rank < 9 else "revise" if rank < 15 else "discard",
            "subtask_label": "dialogue_base",
        },
    )


def test_the_bundled_crowd_rule_is_the_papers_plain_majority(one: Engine, password_hash: str) -> None:
    bundled = load_schemas()["crowd_vote"]
    nine_six_five(one, password_hash, bundled)
    row = status_of(one, "s-000")
    assert row.crowd is not None and row.crowd["counts"] == {"keep": 9, "revise": 6, "discard": 5}
    assert (row.status, row.crowd["decision"], row.crowd["disputed"]) == ("accepted", "keep", False)
    statement = bundled.aggregation.statement()
    assert "the most votes, even under half of them (the paper's rule)" in statement
    assert "a tie goes to expert review" in statement and "winning share below" not in statement


def test_the_stricter_min_agreement_rule_is_an_explicit_choice_and_says_so(one: Engine, password_hash: str) -> None:
    strict = schema_with("crowd_vote", min_agreement=0.5)
    nine_six_five(one, password_hash, strict)
    row = status_of(one, "s-000")
    assert row.crowd is not None and row.crowd["counts"] == {"keep": 9, "revise": 6, "discard": 5}
    assert (row.status, row.crowd["disputed"]) == ("in_review", True)  # sent to the experts
    statement = strict.aggregation.statement()
    assert "at least 50% of the votes (stricter than the paper's plain majority)" in statement
    assert "a tie or a winning share below 50% goes to expert review" in statement
