"""Gradio form components built from a workflow schema's questions, the answers read back from them, and the
problems of a filled form in words for people, by question.

One component per question: single choice and pairwise → Radio, rating → Radio over min..max,
multiple choice → CheckboxGroup, number → a one-line Textbox, free text → Textbox. Radios carry the class
``h2h-key-radio`` and checkbox groups ``h2h-key-check`` so the page's keyboard shortcuts (digits) can find them.

A number question is a text box, not ``gr.Number``: Gradio 6.31's Number sets an empty value to 0 as it mounts
(``props.value ??= 0`` in its frontend), so it shows 0 before anyone types and sends 0 for "nothing typed" — an
adjudication with only a note was stored as a rubric score of 0. The text box starts (and is reset to) empty, and
:func:`form_value` reads the number typed (:func:`read_number`); the range is checked here and said next to the
field (Gradio's own bound check would fail the whole event with red overlays over the form).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from studio.workflows import (
    AnswerValidationError,
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
KEY_CHECK_CLASS = "h2h-key-check"
#: A rating whose options are their own numbers from 1: its labels already show the keys (no "1 · 1 — unsafe").
KEYS_SHOWN_CLASS = "h2h-keys-shown"
#: A number question's text box (Enter in it submits the form, see :mod:`studio.ui.annotate_keys`).
NUMBER_CLASS = "h2h-number"
PAIRWISE_CHOICES = [("A is better", "A"), ("B is better", "B"), ("Tie", "tie")]
#: A service error about one answer starts ``answers.<question id>:``.
_ANSWER_ERROR = re.compile(r"^answers\.([a-z][a-z0-9_]*): (.*)$", re.DOTALL)


def question_label(question: Question) -> str:
    """The label shown above a question: its prompt, and "(optional)" when it may stay unanswered."""
    label = question.prompt
    if not question.required and "optional" not in question.prompt.lower():
        label += " (optional)"
    return label


def rating_choices(question: Rating) -> list[tuple[str, int]]:
    """Rating options min..max as (label, value); a labelled point reads e.g. ``"1 — unsafe"``."""
    labels = question.labels or {}
    points = range(int(question.min), int(question.max) + 1)
    return [(f"{point} — {labels[point]}" if point in labels else str(point), point) for point in points]


def number_hint(question: NumberRange) -> str:
    """The range of a number question in words, e.g. ``A number from 0 to 5, in steps of 0.5.``"""
    steps = f", in steps of {question.step:g}" if question.step else ""
    return f"A number from {question.min:g} to {question.max:g}{steps}."


def build_component(question: Question, *, elem_id: str) -> Any:
    """Create (inside the current Gradio layout) the input component for one question."""
    import gradio as gr

    label, info = question_label(question), question.help
    if isinstance(question, SingleChoice | Pairwise | Rating):
        classes = [KEY_RADIO_CLASS]
        if isinstance(question, Rating) and question.min == 1:
            classes.append(KEYS_SHOWN_CLASS)
        return gr.Radio(choices=choices_of(question), label=label, info=info, elem_id=elem_id, elem_classes=classes)
    if isinstance(question, MultipleChoice):
        return gr.CheckboxGroup(
            choices=choices_of(question), label=label, info=info, elem_id=elem_id, elem_classes=[KEY_CHECK_CLASS]
        )
    if isinstance(question, NumberRange):
        hint = number_hint(question) + (f" {info}" if info else "")
        placeholder = f"{question.min:g}–{question.max:g}"
        return gr.Textbox(
            value="",
            label=label,
            info=hint,
            placeholder=placeholder,
            lines=1,
            max_lines=1,
            elem_id=elem_id,
            elem_classes=[NUMBER_CLASS],
        )
    if isinstance(question, FreeText):
        return gr.Textbox(label=label, info=info, lines=2, max_length=question.max_length, elem_id=elem_id)
    raise TypeError(f"no form component for question type {type(question).__name__}")


def choices_of(question: Question) -> list[tuple[str, Any]]:
    """The (label, value) options of a choice, pairwise or rating question (labels from the schema's data)."""
    if isinstance(question, SingleChoice | MultipleChoice):
        return [(option.display, option.value) for option in question.options]
    if isinstance(question, Pairwise):
        return PAIRWISE_CHOICES if question.allow_tie else PAIRWISE_CHOICES[:2]
    if isinstance(question, Rating):
        return list(rating_choices(question))
    return []


def empty_value(question: Question) -> Any:
    """The value a component is reset to for the next item (nothing chosen, nothing typed)."""
    if isinstance(question, MultipleChoice):
        return []
    if isinstance(question, FreeText | NumberRange):
        return ""
    return None


def read_number(text: Any) -> Any:
    """The number typed into a number question's text box: None when nothing is typed, a float when the text is a
    finite number (``" 2 "`` → 2.0, a typed ``0`` → 0.0), else the value as it came (refused as "Enter a number";
    a crafted event's number stays a number)."""
    if not isinstance(text, str):
        return text
    if not text.strip():
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def form_value(question: Question, value: Any) -> Any:
    """A component's value as the answer it gives (a number question's text read as a number)."""
    return read_number(value) if isinstance(question, NumberRange) else value


def shown_value(question: Question, value: Any) -> Any:
    """An answer as its component shows it (a number in a number question's text box: ``3.5``, ``2``)."""
    if value is None:
        return empty_value(question)
    if isinstance(question, NumberRange) and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}" if float(value).is_integer() else repr(float(value))
    return value


def is_empty(value: Any) -> bool:
    return value is None or value == "" or value == []


def is_asked(question: Question, answers: Mapping[str, Any]) -> bool:
    """Whether ``question`` is asked given the other ``answers``: its ``when`` condition holds (or it has none)."""
    return all(str(answers.get(other)) in allowed for other, allowed in (question.when or {}).items())


def answers_from_form(schema: WorkflowSchema, values: list[Any]) -> dict[str, Any]:
    """Turn form values (in question order) into an answers dict for ``schema.validate_answers``.

    Unanswered questions are left out (an empty number box is no answer, never a 0), and so are questions whose
    ``when`` condition the other answers do not meet (the page hides them; a value left in a hidden field is not an
    answer). A number question's text is read as a number (:func:`read_number`).
    """
    if len(values) != len(schema.questions):
        raise ValueError(f"{schema.name}: expected {len(schema.questions)} form values, got {len(values)}")
    answers: dict[str, Any] = {}
    for question, raw in zip(schema.questions, values, strict=True):
        value = form_value(question, raw)
        if is_empty(value) or not is_asked(question, answers):
            continue
        answers[question.id] = value
    return answers


def problem_in_words(question: Question, value: Any) -> str | None:
    """What is wrong with ``value`` as the answer to an asked ``question``, said for the person filling the form;
    None when it is a valid answer."""
    if is_empty(value):
        if not question.required:
            return None
        if isinstance(question, MultipleChoice):
            return f"Choose at least {max(1, question.min_selected)} of the options."
        return "This question is required: please answer it."
    try:
        question.check(value)
    except AnswerValidationError as error:
        del error  # its text quotes the value; the words below do not
        return _reworded(question, value)
    return None


def _reworded(question: Question, value: Any) -> str:
    if isinstance(question, NumberRange):
        if isinstance(value, float | int) and not isinstance(value, bool):
            return f"{value:g} is not allowed here. {number_hint(question)}"
        return f"Enter a number. {number_hint(question)}"  # a crafted request's text is not echoed back
    if isinstance(question, Rating):
        return f"Choose a rating from {question.min:g} to {question.max:g}."
    if isinstance(question, MultipleChoice):
        upper = question.max_selected if question.max_selected is not None else len(question.options)
        return f"Choose between {question.min_selected} and {upper} of the options."
    if isinstance(question, FreeText):
        if not isinstance(value, str):
            return "Enter text."
        return f"Please shorten this to {question.max_length:,} characters (it has {len(value):,})."
    return "Choose one of the options."


def form_problems(schema: WorkflowSchema, values: list[Any]) -> dict[str, str]:
    """Every problem of a filled form at once, by question id, in words for people (empty: it can be submitted).
    Hidden questions (their ``when`` condition unmet) have none."""
    return checked_form(schema.questions, values)[1]


def checked_form(questions: Sequence[Question], values: Sequence[Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A filled form's valid answers (unanswered and hidden questions left out) and each problem by question id, in
    words for people; one value per question, in question order."""
    problems: dict[str, str] = {}
    given: dict[str, Any] = {}
    for question, raw in zip(questions, values, strict=True):
        value = form_value(question, raw)
        if not is_asked(question, given):
            continue
        problem = problem_in_words(question, value)
        if problem is not None:
            problems[question.id] = problem
        elif not is_empty(value):
            given[question.id] = value
    return given, problems


def problem_of_error(schema: WorkflowSchema, message: str) -> tuple[str, str] | None:
    """A service error about one answer (``answers.<id>: problem``, e.g. the studio's text limit) as (question id,
    words for people); None when it names no question of ``schema``."""
    match = _ANSWER_ERROR.match(message)
    if match is None or match.group(1) not in schema.questions_by_id:
        return None
    problem = match.group(2)
    return match.group(1), problem[:1].upper() + problem[1:] + ("" if problem.endswith(".") else ".")


def summary_of(schema: WorkflowSchema, problems: Mapping[str, str]) -> str:
    """The line above the form for ``problems``: what was not saved and which questions to look at, by prompt."""
    prompts = [schema.questions_by_id[question_id].prompt for question_id in problems]
    count = "1 question needs" if len(prompts) == 1 else f"{len(prompts)} questions need"
    return f"Not saved: {count} your attention (marked below): " + "; ".join(prompts)
