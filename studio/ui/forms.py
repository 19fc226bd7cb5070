"""Gradio form components built from a workflow schema's questions, and the answers read back from them.

One component per question: single choice and pairwise → Radio, rating → Radio over min..max,
multiple choice → CheckboxGroup, number → Number, free text → Textbox. Radios carry the class
``h2h-key-radio`` so the page's keyboard shortcuts (digits) can find them.
"""

from __future__ import annotations

from typing import Any

from studio.schemas import (
    FreeText,
    MultipleChoice,
    NumberRange,
    Pairwise,
    Question,
    Rating,
    SingleChoice,
    WorkflowSchema,
)

KEY_RADIO_CLASS = "h2h-key-radio"


def question_label(question: Question) -> str:
    """The label shown above a question: its prompt, plus when it applies and whether it is optional."""
    label = question.prompt
    if question.when:
        condition = "; ".join(f"{other} = {' or '.join(values)}" for other, values in question.when.items())
        label += f" (only if {condition})"
    if not question.required and "optional" not in question.prompt.lower():
        label += " (optional)"
    return label


def rating_choices(question: Rating) -> list[tuple[str, int]]:
    """Rating options min..max as (label, value); a labelled point reads e.g. ``"1 — unsafe"``."""
    labels = question.labels or {}
    points = range(int(question.min), int(question.max) + 1)
    return [(f"{point} — {labels[point]}" if point in labels else str(point), point) for point in points]


def build_component(question: Question, *, elem_id: str) -> Any:
    """Create (inside the current Gradio layout) the input component for one question."""
    import gradio as gr

    label = question_label(question)
    if isinstance(question, SingleChoice):
        choices = [(option.display, option.value) for option in question.options]
        return gr.Radio(choices=choices, label=label, elem_id=elem_id, elem_classes=[KEY_RADIO_CLASS])
    if isinstance(question, Pairwise):
        choices = [("A is better", "A"), ("B is better", "B")] + ([("Tie", "tie")] if question.allow_tie else [])
        return gr.Radio(choices=choices, label=label, elem_id=elem_id, elem_classes=[KEY_RADIO_CLASS])
    if isinstance(question, Rating):
        return gr.Radio(choices=rating_choices(question), label=label, elem_id=elem_id, elem_classes=[KEY_RADIO_CLASS])
    if isinstance(question, MultipleChoice):
        choices = [(option.display, option.value) for option in question.options]
        return gr.CheckboxGroup(choices=choices, label=label, elem_id=elem_id)
    if isinstance(question, NumberRange):
        step = question.step or 1
        return gr.Number(
            label=label, value=None, elem_id=elem_id, minimum=question.min, maximum=question.max, step=step
        )
    if isinstance(question, FreeText):
        return gr.Textbox(label=label, lines=2, max_length=question.max_length, elem_id=elem_id)
    raise TypeError(f"no form component for question type {type(question).__name__}")


def empty_value(question: Question) -> Any:
    """The value a component is reset to for the next item."""
    if isinstance(question, MultipleChoice):
        return []
    if isinstance(question, FreeText):
        return ""
    return None


def answers_from_form(schema: WorkflowSchema, values: list[Any]) -> dict[str, Any]:
    """Turn form values (in question order) into an answers dict for ``schema.validate_answers``.

    Unanswered questions are left out, and so are questions whose ``when`` condition the other
    answers do not meet (the form shows them all; the schema refuses answers to unasked questions).
    Whole-number values of number questions arrive from the browser as floats and stay numbers.
    """
    if len(values) != len(schema.questions):
        raise ValueError(f"{schema.name}: expected {len(schema.questions)} form values, got {len(values)}")
    answers: dict[str, Any] = {}
    for question, value in zip(schema.questions, values, strict=True):
        if value is None or value == "" or value == []:
            continue
        if question.when and not all(str(answers.get(other)) in allowed for other, allowed in question.when.items()):
            continue
        answers[question.id] = value
    return answers
