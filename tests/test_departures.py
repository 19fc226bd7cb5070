"""The README's "Where this project departs from the paper, and why" table is the registry
(:mod:`pipeline.departures`), and every choice it offers exists with the default it states."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from pipeline.commands.score import score_command, score_pairs_command
from pipeline.departures import departures, markdown_table
from pipeline.scoring.combine import combine_j
from studio.rules import MajorityRule, MeanRule
from studio.workflows import load_schemas
from tests.repo import REPO_ROOT

HEADING = "### Where this project departs from the paper, and why"


def readme_section() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert HEADING in readme
    return readme.split(HEADING, 1)[1].split("\n#", 1)[0]


def test_the_readme_table_is_the_registry_verbatim() -> None:
    assert markdown_table() in readme_section()


def test_every_departure_row_says_what_the_paper_says_and_why() -> None:
    for item in departures():
        assert item.topic and item.paper and item.here and item.why, item


def test_the_stated_figures_are_the_ones_the_formulas_give() -> None:
    rows = {item.topic: item for item in departures()}
    assert "at most 2.6 < τ = 3.5" in rows["Eq. 3's scale"].why
    assert combine_j(0.1, 5.0) == pytest.approx(2.3)
    assert "J_final ≈ 2.3" in rows["J_human and J_final"].why


@pytest.mark.parametrize("command", [score_command, score_pairs_command], ids=["score", "score-pairs"])
def test_the_rouge_choice_is_an_option_defaulting_to_f(command: click.Command) -> None:
    help_text = CliRunner().invoke(command, ["--help"]).output
    assert "--rouge-measure [f|recall]" in help_text and "default: f" in help_text


def test_the_bundled_workflows_hold_the_defaults_the_table_states() -> None:
    schemas = load_schemas()
    crowd, safety = schemas["crowd_vote"].aggregation, schemas["sap_safety"].aggregation
    assert isinstance(crowd, MajorityRule) and crowd.min_agreement is None and crowd.on_tie == "expert_review"
    assert isinstance(safety, MeanRule) and safety.violation_tie == "not_violation"
    # and the stricter / safety-first readings are one setting away
    assert MajorityRule.model_validate({"rule": "majority", "min_agreement": 0.5}).min_agreement == 0.5
    assert MeanRule.model_validate({"rule": "mean", "score": "s", "violation_tie": "violation"}).violation_tie == (
        "violation"
    )
