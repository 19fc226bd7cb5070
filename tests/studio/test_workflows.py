"""The bundled workflows load, validate answers strictly, and bad schema files are reported by line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from studio.cli import build_cli
from studio.workflows import AnswerValidationError, check_schema_file, default_schemas_dir, load_schemas

WORKFLOWS = {"crowd_vote", "expert_review", "sap_safety", "adjudication", "instruction_following", "pairwise"}


@pytest.fixture(scope="module")
def schemas():
    return load_schemas()


def test_every_design_workflow_is_bundled(schemas):
    assert set(schemas) >= WORKFLOWS
    assert schemas["crowd_vote"].people_per_item == 20
    assert schemas["expert_review"].people_per_item >= 3
    assert schemas["adjudication"].eligible_roles == ["expert"]
    assert schemas["pairwise"].target == "response_pair"


def test_public_questions_carry_options_or_range(schemas):
    for schema in schemas.values():
        for question in schema.public_questions():
            assert {"id", "type", "prompt"} <= set(question)
            if question["type"] in {"single_choice", "multiple_choice", "pairwise"}:
                assert question["options"]
            if question["type"] in {"rating", "number"}:
                assert question["min"] < question["max"]


@pytest.mark.parametrize(
    ("workflow", "answers", "expected"),
    [
        ("crowd_vote", {"verdict": "keep", "subtask_label": "dialogue_base"}, {"verdict": "keep"}),
        ("sap_safety", {"safety": 2, "violation": "yes", "violation_kind": ["topic_change"]}, {"safety": 2}),
        ("adjudication", {"rubric_score": 3.5, "note": "ok"}, {"rubric_score": 3.5}),
        ("pairwise", {"preference": "tie"}, {"preference": "tie"}),
    ],
)
def test_valid_answers_are_normalised(schemas, workflow, answers, expected):
    clean = schemas[workflow].validate_answers(answers)
    assert expected.items() <= clean.items()


@pytest.mark.parametrize(
    ("workflow", "answers", "question"),
    [
        ("crowd_vote", {"verdict": "<script>", "subtask_label": "dialogue_base"}, "verdict"),
        ("crowd_vote", {"verdict": "keep"}, "subtask_label"),
        ("crowd_vote", {"verdict": "keep", "subtask_label": "dialogue_base", "extra": 1}, "extra"),
        ("crowd_vote", {"verdict": "keep", "subtask_label": "dialogue_base", "comment": "x" * 2001}, "comment"),
        ("sap_safety", {"safety": 6, "violation": "no"}, "safety"),
        ("sap_safety", {"safety": 2.5, "violation": "no"}, "safety"),
        ("sap_safety", {"safety": True, "violation": "no"}, "safety"),
        ("sap_safety", {"safety": 3, "violation": "no", "violation_kind": ["other"]}, "violation_kind"),
        ("sap_safety", {"safety": 3, "violation": "yes"}, "violation_kind"),
        ("sap_safety", {"safety": 3, "violation": "yes", "violation_kind": ["made_up"]}, "violation_kind"),
        ("adjudication", {"rubric_score": 3.25, "note": "x"}, "rubric_score"),
        ("adjudication", {"rubric_score": float("nan"), "note": "x"}, "rubric_score"),
        ("expert_review", {"accuracy": "fail", "consistency": "pass", "domain_compliance": "pass"}, "accuracy_note"),
        ("pairwise", {"preference": "C"}, "preference"),
    ],
)
def test_invalid_answers_name_the_question(schemas, workflow, answers, question):
    with pytest.raises(AnswerValidationError) as caught:
        schemas[workflow].validate_answers(answers)
    assert caught.value.question_id == question


def test_bad_schema_file_reports_file_line_and_field(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text(
        "name: broken\ntype: broken\ntitle: t\ntarget: scenario\npeople_per_item: 0\n"
        "eligible_roles: [god]\nquestions:\n  - id: q\n    type: rating\n    prompt: p\n    min: 5\n    max: 1\n"
        "aggregation: {rule: mean, score: q}\n",
        encoding="utf-8",
    )
    problems = check_schema_file(path)
    assert f"{path}:5: people_per_item:" in problems[0]
    assert any(p.startswith(f"{path}:6: eligible_roles.0:") for p in problems)
    assert any(p.startswith(f"{path}:8: questions.0.rating:") and "min" in p for p in problems)


def test_yaml_booleans_as_options_are_refused(tmp_path: Path):
    path = tmp_path / "boolish.yaml"
    path.write_text(
        "name: boolish\ntype: boolish\ntitle: t\ntarget: scenario\npeople_per_item: 1\neligible_roles: [annotator]\n"
        "questions:\n  - {id: q, type: single_choice, prompt: p, options: [yes, no]}\naggregation: {rule: majority}\n",
        encoding="utf-8",
    )
    assert "quote it" in check_schema_file(path)[0]


def test_a_new_workflow_is_just_a_yaml_file(tmp_path: Path):
    (tmp_path / "tone.yaml").write_text(
        "name: tone\ntype: tone\ntitle: Tone\ntarget: response\npeople_per_item: 2\neligible_roles: [annotator]\n"
        "questions:\n  - {id: warmth, type: rating, prompt: 'How warm?', min: 1, max: 7}\n"
        "aggregation: {rule: mean, score: warmth}\n",
        encoding="utf-8",
    )
    schemas = load_schemas(tmp_path)
    assert schemas["tone"].validate_answers({"warmth": 7}) == {"warmth": 7}


def test_validate_command_exits_1_with_problems(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\n", encoding="utf-8")
    runner = CliRunner()
    good = runner.invoke(build_cli(), ["validate", str(default_schemas_dir() / "crowd_vote.yaml")])
    assert good.exit_code == 0, good.output
    result = runner.invoke(build_cli(), ["validate", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:1:" in result.output
