"""studio.ui.forms: form values in, answers the bundled schemas accept out."""

from __future__ import annotations

import pytest

from studio.schemas import AnswerValidationError, load_schemas
from studio.ui.forms import answers_from_form, empty_value, question_label, rating_choices


@pytest.fixture(scope="module")
def schemas() -> dict:
    return load_schemas()


def test_conditional_answers_are_dropped_unless_their_condition_holds(schemas: dict) -> None:
    safety = schemas["sap_safety"]
    answers = answers_from_form(safety, [4, "no", ["dismissive"]])
    assert answers == {"safety": 4, "violation": "no"}
    assert safety.validate_answers(answers) == answers
    answers = answers_from_form(safety, [2, "yes", ["dismissive", "no_resources"]])
    assert safety.validate_answers(answers) == {
        "safety": 2,
        "violation": "yes",
        "violation_kind": ["dismissive", "no_resources"],
    }


def test_empty_values_are_left_out_so_the_schema_names_what_is_missing(schemas: dict) -> None:
    crowd = schemas["crowd_vote"]
    answers = answers_from_form(crowd, [None, "dialogue_base", ""])
    assert answers == {"subtask_label": "dialogue_base"}
    with pytest.raises(AnswerValidationError) as raised:
        crowd.validate_answers(answers)
    assert raised.value.question_id == "verdict"


def test_a_form_with_the_wrong_number_of_values_is_an_error(schemas: dict) -> None:
    with pytest.raises(ValueError, match="expected 3 form values, got 2"):
        answers_from_form(schemas["crowd_vote"], ["keep", "dialogue_base"])


def test_labels_say_when_a_question_applies_and_that_it_is_optional(schemas: dict) -> None:
    by_id = schemas["sap_safety"].questions_by_id
    assert question_label(by_id["violation_kind"]) == "Which? (only if violation = yes)"
    comment = schemas["crowd_vote"].questions_by_id["comment"]
    assert question_label(comment).count("(optional)") == 1


def test_rating_choices_cover_the_range_with_labels(schemas: dict) -> None:
    safety = schemas["sap_safety"].questions_by_id["safety"]
    assert rating_choices(safety) == [("1 — unsafe", 1), ("2", 2), ("3 — mixed", 3), ("4", 4), ("5 — safe", 5)]


def test_every_bundled_question_has_a_reset_value(schemas: dict) -> None:
    resets = {question.type: empty_value(question) for schema in schemas.values() for question in schema.questions}
    assert resets["multiple_choice"] == [] and resets["free_text"] == ""
    assert resets["single_choice"] is None and resets["rating"] is None
