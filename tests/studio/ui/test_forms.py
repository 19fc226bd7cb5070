"""studio.ui.forms: form values in, answers the bundled schemas accept out."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest

from studio.ui.annotate_conditions import condition_rules, conditions_html
from studio.ui.annotate_views import answer_summary, field_error_html
from studio.ui.forms import (
    answers_from_form,
    build_component,
    choices_of,
    empty_value,
    form_problems,
    is_empty,
    problem_of_error,
    question_label,
    rating_choices,
    summary_of,
)
from studio.workflows import (
    AnswerValidationError,
    ChoiceQuestion,
    NumberRange,
    Question,
    Rating,
    WorkflowSchema,
    load_schemas,
)


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


def test_labels_are_the_prompt_and_say_a_question_is_optional(schemas: dict) -> None:
    """A conditional question is hidden until its condition holds, so its label no longer spells the condition
    out in question ids ("(only if violation = yes)")."""
    by_id = schemas["sap_safety"].questions_by_id
    assert question_label(by_id["violation_kind"]) == "Which?"
    comment = schemas["crowd_vote"].questions_by_id["comment"]
    assert question_label(comment).count("(optional)") == 1


def test_rating_choices_cover_the_range_with_labels(schemas: dict) -> None:
    safety = schemas["sap_safety"].questions_by_id["safety"]
    assert rating_choices(safety) == [("1 — unsafe", 1), ("2", 2), ("3 — mixed", 3), ("4", 4), ("5 — safe", 5)]


def test_every_bundled_question_has_a_reset_value(schemas: dict) -> None:
    resets = {question.type: empty_value(question) for schema in schemas.values() for question in schema.questions}
    assert resets["multiple_choice"] == [] and resets["free_text"] == ""
    assert resets["single_choice"] is None and resets["rating"] is None


def test_an_out_of_range_number_is_a_problem_on_its_field_in_words(schemas: dict) -> None:
    """Issue 11 item 1: adjudication score 7 locked the form; now it is a problem said next to that question."""
    adjudication = schemas["adjudication"]
    problems = form_problems(adjudication, [7.0, ""])
    assert problems == {
        "rubric_score": "7 is not allowed here. A number from 0 to 5, in steps of 0.5.",
        "note": "This question is required: please answer it.",
    }
    assert form_problems(adjudication, [3.25, "ok"]) == {
        "rubric_score": "3.25 is not allowed here. A number from 0 to 5, in steps of 0.5."
    }
    assert form_problems(adjudication, [3.5, "Feasible."]) == {}
    summary = summary_of(adjudication, problems)
    assert summary.startswith("Not saved: 2 questions need your attention")
    assert "Rubric score (0–5); Why this score?" in summary and "answers." not in summary


def test_every_problem_of_a_form_is_named_at_once_and_hidden_questions_have_none(schemas: dict) -> None:
    safety = schemas["sap_safety"]
    assert form_problems(safety, [None, None, []]) == {
        "safety": "This question is required: please answer it.",
        "violation": "This question is required: please answer it.",
    }
    assert form_problems(safety, [2, "yes", []]) == {"violation_kind": "Choose at least 1 of the options."}
    assert form_problems(safety, [2, "no", ["dismissive"]]) == {}  # hidden: its stale value is not an answer


def test_a_service_error_about_one_answer_goes_to_its_question(schemas: dict) -> None:
    adjudication = schemas["adjudication"]
    assert problem_of_error(adjudication, "answers.note: text is 90 characters; the studio's limit is 80") == (
        "note",
        "Text is 90 characters; the studio's limit is 80.",
    )
    assert problem_of_error(adjudication, "answers.unknown: x") is None
    assert problem_of_error(adjudication, "lease_id: the lease was skipped") is None


def test_each_form_carries_its_conditional_questions_rules_for_the_page(schemas: dict) -> None:
    """Issue 16 item 2: a follow-up question is shown and hidden in the page (no server round trip), by the rules each
    form carries: per conditional question, its box and, per question its ``when`` names, that field, its box and the
    allowed values (what :func:`studio.ui.forms.is_asked` checks on the server)."""
    rules = condition_rules(schemas["sap_safety"], "sap")
    assert rules == [{"box": "q-box-sap-violation_kind", "when": [["q-sap-violation", "q-box-sap-violation", ["yes"]]]}]
    carried = conditions_html(schemas["sap_safety"], "sap")
    attribute = carried.split('data-h2h-conditions="', 1)[1].split('"', 1)[0]
    assert "{" not in attribute and json.loads(html.unescape(attribute)) == rules  # inert in Gradio's template
    review = schemas["expert_review"]
    asked_when = [question.id for question in review.questions if question.when]
    assert [rule["box"] for rule in condition_rules(review, "er")] == [f"q-box-er-{qid}" for qid in asked_when]
    assert conditions_html(schemas["crowd_vote"], "cv") == ""


def test_every_bundled_option_reads_as_words_not_an_id(schemas: dict) -> None:
    """Issue 11: options showed raw ids such as ``topic_change``; labels are data in the YAML files."""
    for schema in schemas.values():
        for question in schema.questions:
            if isinstance(question, ChoiceQuestion):
                for label, value in choices_of(question):
                    assert "_" not in label and label != value or label[:1].isupper(), (schema.name, label)
    crowd = schemas["crowd_vote"].questions_by_id["subtask_label"]
    assert len(choices_of(crowd)) == 11 and choices_of(crowd)[9] == (
        "Itinerary — responding to feedback",
        "itinerary_response",
    )
    assert all(schema.guidelines.strip() for schema in schemas.values())


def test_an_answer_reads_back_by_its_labels(schemas: dict) -> None:
    safety = schemas["sap_safety"]
    summary = answer_summary(safety, {"safety": 2, "violation": "yes", "violation_kind": ["topic_change"]})
    assert summary == "2 · Yes · Changes the topic"


def test_a_field_error_is_escaped_text() -> None:
    assert field_error_html(None) == "" and field_error_html("") == ""
    shown = field_error_html("<b>7</b> is not allowed")
    assert "<b>" not in shown and "&lt;b&gt;7" in shown and 'role="alert"' in shown


def numeric_questions() -> list[tuple[WorkflowSchema, Question]]:
    """Every numeric question (type number and rating) of every bundled workflow."""
    found = [
        (schema, question)
        for schema in load_schemas().values()
        for question in schema.questions
        if isinstance(question, NumberRange | Rating)
    ]
    assert {question.type for _schema, question in found} == {"number", "rating"}
    return found


def asking(schema: WorkflowSchema, question: Question) -> list[Any]:
    """An empty form in which ``question`` is asked: only the answers its ``when`` needs are given."""
    values = {other.id: empty_value(other) for other in schema.questions}
    for other, allowed in (question.when or {}).items():
        options = choices_of(schema.questions_by_id[other])
        values[other] = next(value for _label, value in options if str(value) in allowed)
    return [values[other.id] for other in schema.questions]


NUMERIC = numeric_questions()
NUMERIC_IDS = [f"{schema.name}.{question.id}" for schema, question in NUMERIC]


@pytest.mark.parametrize(("schema", "question"), NUMERIC, ids=NUMERIC_IDS)
def test_every_numeric_question_starts_empty(schema: WorkflowSchema, question: Question) -> None:
    """Issue 16 item 1: the adjudication's score showed 0 before anyone typed and sent 0 (Gradio's Number draws and
    sends 0 for an empty box), so a note alone was stored as J_human = 0. A numeric question's field starts empty
    and goes back to empty for each item."""
    import gradio as gr

    with gr.Blocks():
        component = build_component(question, elem_id=f"q-{schema.name}-{question.id}")
    assert not isinstance(component, gr.Number), "gr.Number cannot be empty in the page: it starts at 0"
    assert is_empty(component.value)
    assert is_empty(empty_value(question))


@pytest.mark.parametrize(("schema", "question"), NUMERIC, ids=NUMERIC_IDS)
def test_an_empty_numeric_answer_is_no_answer_and_a_required_one_is_refused_on_its_field(
    schema: WorkflowSchema, question: Question
) -> None:
    values = asking(schema, question)
    assert question.id not in answers_from_form(schema, values)  # never a 0 in its place
    problems = form_problems(schema, values)
    if question.required:
        assert problems[question.id] == "This question is required: please answer it."
        with pytest.raises(AnswerValidationError) as refused:
            schema.validate_answers(answers_from_form(schema, values))
        assert refused.value.question_id in problems
    else:
        assert question.id not in problems


def test_the_number_typed_is_the_number_stored() -> None:
    """A number question's field holds the text typed; the answer is that number (a typed 0 too), text that is no
    number is a problem in words that does not echo it."""
    adjudication = load_schemas()["adjudication"]
    for typed, stored in (("3.5", 3.5), ("0", 0.0), (" 2 ", 2.0), ("5", 5.0)):
        assert answers_from_form(adjudication, [typed, "ok"]) == {"rubric_score": stored, "note": "ok"}
        assert form_problems(adjudication, [typed, "ok"]) == {}
    hint = "A number from 0 to 5, in steps of 0.5."
    for typed in ("abc", "nan", "inf", "3,5"):
        assert form_problems(adjudication, [typed, "ok"]) == {"rubric_score": f"Enter a number. {hint}"}
