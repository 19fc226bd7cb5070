"""Reliability-weighted crowd models beside the majority, through the real store (issue 21): a known-truth simulated
crowd where a group of always-'discard' raters and two random spammers make the majority wrong on some scenarios and
Dawid–Skene right. The stored crowd side says ``models_disagree`` there, expert review puts those scenarios first, a
re-run changes nothing, and ``rule: dawid_skene`` publishes the model's decision (the majority shown beside).

Answers go in through the real queue and answer services, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError
from sqlalchemy import Engine, select

from pipeline.records import Scenario
from studio.commands.agreement import agreement_command
from studio.db import read_session, write_session
from studio.models import Campaign, Item, ResponseRow, UserPublic
from studio.models.curation import ScenarioStatus
from studio.results.decisions import CrowdSide, crowd_side
from studio.rules import VERDICT_STATUS, MajorityRule
from studio.services.aggregation import aggregate_campaign
from studio.services.campaigns import create_campaign
from studio.services.curation import browse_scenarios
from studio.services.ingest import ingest_run
from studio.services.listing import ScenarioFilters
from studio.services.queue import next_item
from studio.services.research_quality import campaign_agreement
from studio.workflows import WorkflowSchema, default_schemas_dir, load_schemas
from tests.studio.helpers import add_people, answer_all, write_run

LABELS = ("keep", "revise", "discard")
#: Four careful raters (right 85% of the time), three who always say 'discard', two who answer at random.
RATERS = [f"careful-{n}" for n in range(4)] + [f"same-{n}" for n in range(3)] + [f"random-{n}" for n in range(2)]
SCENARIOS = 30
SEED = 1


def simulated_crowd() -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """The true verdict per scenario and each rater's vote, (scenario, rater) → verdict (seeded, so fixed)."""
    rng = random.Random(SEED)
    truth = {f"sc-{n:02d}": LABELS[n % 3] for n in range(SCENARIOS)}
    votes: dict[tuple[str, str], str] = {}
    for scenario_id, true in truth.items():
        for rater in RATERS:
            if rater.startswith("careful"):
                wrong = [label for label in LABELS if label != true]
                vote = true if rng.random() < 0.85 else rng.choice(wrong)
            else:
                vote = "discard" if rater.startswith("same") else rng.choice(LABELS)
            votes[scenario_id, rater] = vote
    return truth, votes


def crowd_schema(**aggregation: Any) -> WorkflowSchema:
    """The bundled crowd vote with its aggregation changed by ``aggregation``."""
    raw = yaml.safe_load((default_schemas_dir() / "crowd_vote.yaml").read_text(encoding="utf-8"))
    raw["aggregation"] |= aggregation
    return WorkflowSchema.model_validate(raw)


def vote(engine: Engine, tmp_path: Path, password_hash: str, schema: WorkflowSchema) -> dict[str, str]:
    """Ingest the simulated scenarios, open a ``vote`` campaign of ``schema`` (9 people per item), let the crowd answer
    through the queue; return the truth."""
    truth, votes = simulated_crowd()
    scenarios = [
        Scenario(id=sid, subtask="dialogue_base", persona="你是小林。", user_input=f"输入 {sid}", reference="好的。")
        for sid in truth
    ]
    ingest_run(engine, write_run(tmp_path / "run", scenarios=scenarios))
    with write_session(engine) as session:
        create_campaign(session, name="vote", schema=schema, people_per_item=len(RATERS), actor="admin")
    crowd = add_people(engine, password_hash, RATERS, "annotator")

    def answer(item: Item, _response: ResponseRow | None, person: UserPublic) -> dict[str, Any]:
        return {"verdict": votes[str(item.scenario_id), person.username], "subtask_label": "dialogue_base"}

    assert answer_all(engine, "vote", crowd, answer) == SCENARIOS * len(RATERS)
    return truth


def crowd_sides(engine: Engine) -> dict[str, tuple[CrowdSide, ScenarioStatus]]:
    with read_session(engine) as session:
        rows = list(session.execute(select(ScenarioStatus)).scalars())
        return {row.scenario_id: (side, row) for row in rows if (side := crowd_side(row.crowd)) is not None}


def review_order(engine: Engine, name: str) -> list[str]:
    with read_session(engine) as session:
        campaign_id = session.execute(select(Campaign.id).where(Campaign.name == name)).scalar_one()
        query = select(Item.scenario_id).where(Item.campaign_id == campaign_id).order_by(Item.position)
        return [str(sid) for sid in session.execute(query).scalars()]


def test_the_models_stand_beside_the_majority_and_their_disagreements_go_to_experts_first(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    schema = load_schemas()["crowd_vote"]
    assert isinstance(schema.aggregation, MajorityRule) and schema.aggregation.models == ["dawid_skene", "mace"]
    truth = vote(engine, tmp_path, password_hash, schema)
    with write_session(engine) as session:
        first = aggregate_campaign(session, campaign="vote", actor="curator")
    sides = crowd_sides(engine)
    assert len(sides) == SCENARIOS
    majority_right = sum(side.majority == truth[sid] for sid, (side, _row) in sides.items())
    model_right = sum(side.models["dawid_skene"]["decision"] == truth[sid] for sid, (side, _row) in sides.items())
    assert model_right >= majority_right + 0.02 * SCENARIOS  # the figure: at least majority + 2 points
    rescued = [
        sid
        for sid, (side, _row) in sides.items()
        if side.majority != truth[sid] == side.models["dawid_skene"]["decision"]
    ]
    assert len(rescued) >= 3  # the spammers outvote the careful raters there; Dawid–Skene sees through them
    for sid in rescued:
        side, row = sides[sid]
        assert side.models_disagree and side.rule == "majority"
        # the majority stays the published decision; the model is shown beside it, with its posterior
        assert row.crowd_decision == side.decision == side.majority
        assert 0.5 < side.models["dawid_skene"]["posterior"] <= 1.0
        assert "models disagree" in side.words() and "dawid_skene: " in side.words()
    disagreeing = {sid for sid, (side, _row) in sides.items() if side.models_disagree}
    agreeing = [sid for sid, (side, _row) in sides.items() if not side.models_disagree]
    assert set(rescued) <= disagreeing and agreeing
    order = review_order(engine, first.review_campaign or "")
    assert set(order[: len(disagreeing)]) == disagreeing  # expert review: the models' disagreements first
    experts = add_people(engine, password_hash, ["exp-1"], "expert")
    with write_session(engine) as session:
        handed = next_item(session, campaign=first.review_campaign or "", user=experts[0])
        assert handed is not None and str(session.get(Item, handed.item_id).scenario_id) in disagreeing
    with write_session(engine) as session:
        second = aggregate_campaign(session, campaign="vote", actor="curator")
    assert second.changed == 0 and second.review_items_opened == 0
    assert review_order(engine, first.review_campaign or "") == order


def test_rule_dawid_skene_publishes_the_models_decision_with_the_majority_beside(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    schema = crowd_schema(rule="dawid_skene")
    truth = vote(engine, tmp_path, password_hash, schema)
    with write_session(engine) as session:
        summary = aggregate_campaign(session, campaign="vote", actor="curator")
    assert summary.statement.startswith("Crowd decision: the answer Dawid–Skene finds most probable decides")
    assert "the most votes" not in summary.statement
    sides = crowd_sides(engine)
    published = {sid: side.models["dawid_skene"]["decision"] for sid, (side, _row) in sides.items()}
    assert sum(published[sid] == truth[sid] for sid in truth) >= SCENARIOS - 1
    for sid, (side, row) in sides.items():
        assert side.rule == "dawid_skene" and row.crowd_decision == side.decision == published[sid]
        assert row.status == VERDICT_STATUS[published[sid]] and row.decided_by == "crowd:vote"
        assert side.words().startswith(f"crowd by dawid_skene: {published[sid]} (")
    flipped = [sid for sid, (side, _row) in sides.items() if side.majority != side.decision]
    assert flipped and all(sides[sid][0].models_disagree for sid in flipped)
    with write_session(engine) as session:
        assert aggregate_campaign(session, campaign="vote", actor="curator").changed == 0


def test_the_models_need_a_nominal_decision_question() -> None:
    raw = yaml.safe_load((default_schemas_dir() / "crowd_vote.yaml").read_text(encoding="utf-8"))
    raw["questions"] = [{"id": "quality", "type": "rating", "prompt": "How good?", "min": 1, "max": 5}]
    raw["aggregation"] = {"rule": "majority", "also": ["mace"]}
    with pytest.raises(ValidationError, match="nominal questions only"):
        WorkflowSchema.model_validate(raw)
    with pytest.raises(ValidationError, match="nominal questions only"):
        WorkflowSchema.model_validate(raw | {"aggregation": {"rule": "dawid_skene"}})


def test_a_rule_naming_a_model_does_not_claim_the_plain_majority_decides() -> None:
    for name, words in (("dawid_skene", "Dawid–Skene"), ("mace", "MACE")):
        first = MajorityRule(rule=name, on_tie="expert_review").statement().split(". ")[0]
        assert first == f"Crowd decision: the answer {words} finds most probable decides, not the plain majority"
    plain = MajorityRule(rule="majority", on_tie="expert_review", also=["dawid_skene"]).statement()
    assert "the most votes" in plain and "Beside the majority (which stays the decision)" in plain


def test_a_models_disagreement_is_listed_under_the_curate_pages_disagreement_filter(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    vote(engine, tmp_path, password_hash, load_schemas()["crowd_vote"])
    with write_session(engine) as session:
        aggregate_campaign(session, campaign="vote", actor="curator")
    sides = crowd_sides(engine)
    disagreeing = sorted(sid for sid, (side, _row) in sides.items() if side.models_disagree)
    # not only the majority's ties (listed under the filter before): scenarios the majority did decide, too
    assert any(sides[sid][0].majority is not None for sid in disagreeing)
    with read_session(engine) as session:
        listed = browse_scenarios(session, filters=ScenarioFilters(disagreement=True, page_size=100))
    assert disagreeing and sorted(row["id"] for row in listed.rows) == disagreeing


def test_the_rater_table_puts_each_raters_estimated_reliability_beside_agreement(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    vote(engine, tmp_path, password_hash, load_schemas()["crowd_vote"])
    with read_session(engine) as session:
        view = campaign_agreement(session, campaign="vote", resamples=0)
    verdict = view.annotators[view.annotators["question"] == "verdict"].set_index("annotator")
    assert {"agreement", "dawid_skene_reliability", "mace_competence"} <= set(verdict.columns)
    careful = [name for name in RATERS if name.startswith("careful")]
    spammers = [name for name in RATERS if not name.startswith("careful")]
    for column in ("dawid_skene_reliability", "mace_competence"):
        assert verdict.loc[careful, column].min() > verdict.loc[spammers, column].max()
        assert verdict[column].between(0, 1).all()
    # the free-text comment question is not nominal: no estimate is made up for it
    assert "comment" not in set(view.annotators["question"])


def test_h2h_agreement_writes_the_estimated_reliability_into_the_annotator_file(tmp_path: Path) -> None:
    _truth, votes = simulated_crowd()
    frame = pd.DataFrame([{"item": sid, "annotator": rater, "value": value} for (sid, rater), value in votes.items()])
    frame.to_csv(tmp_path / "nominal-votes.csv", index=False)
    # the same votes as ranks: an ordinal question gets no reliability estimate (the models are nominal only)
    frame.assign(value=frame["value"].map({label: rank for rank, label in enumerate(LABELS)})).to_csv(
        tmp_path / "ordinal-votes.csv", index=False
    )
    nominal, ordinal = tmp_path / "nominal.csv", tmp_path / "ordinal.csv"
    for level, out in (("nominal", nominal), ("ordinal", ordinal)):
        path = tmp_path / f"{level}-votes.csv"
        args = ["--votes", str(path), "--level", level, "--resamples", "0", "--annotators", str(out)]
        result = CliRunner().invoke(agreement_command, args)
        assert result.exit_code == 0, result.output
    table = pd.read_csv(nominal, encoding="utf-8-sig").set_index("annotator")
    assert table.loc["careful-0", "mace_competence"] > table.loc["same-0", "mace_competence"]
    assert table.loc["careful-0", "dawid_skene_reliability"] > table.loc["random-0", "dawid_skene_reliability"]
    assert "mace_competence" not in pd.read_csv(ordinal, encoding="utf-8-sig").columns


def test_disagreements_move_ahead_in_a_review_campaign_opened_by_hand_over_every_scenario(
    engine: Engine, tmp_path: Path, password_hash: str
) -> None:
    """A review campaign opened before the vote holds every scenario in id order: the models' disagreements move
    ahead of the rest (positions below the first, none shared), once."""
    truth = vote(engine, tmp_path, password_hash, load_schemas()["crowd_vote"])
    with write_session(engine) as session:
        create_campaign(session, name="by-hand-review", schema=load_schemas()["expert_review"], actor="admin")
    before = review_order(engine, "by-hand-review")
    assert sorted(before) == sorted(truth)
    with write_session(engine) as session:
        first = aggregate_campaign(session, campaign="vote", actor="curator")
    disagreeing = {sid for sid, (side, _row) in crowd_sides(engine).items() if side.models_disagree}
    order = review_order(engine, "by-hand-review")
    assert first.review_campaign == "by-hand-review" and first.review_items_opened == 0
    assert set(order[: len(disagreeing)]) == disagreeing and sorted(order) == sorted(before)
    assert order[len(disagreeing) :] == [sid for sid in before if sid not in disagreeing]  # the rest keep their order
    with write_session(engine) as session:
        assert aggregate_campaign(session, campaign="vote", actor="curator").changed == 0
    assert review_order(engine, "by-hand-review") == order
