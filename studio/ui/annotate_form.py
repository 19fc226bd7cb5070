"""One form of the Annotate tab: its components (a field and an error line per question, the boxes of its
conditional questions, its buttons) and the values that fill them after an event."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from studio.schemas import WorkflowSchema
from studio.ui.annotate_views import field_error_html, shown_questions
from studio.ui.forms import empty_value


@dataclass
class FormParts:
    """One form's components: its column, a field and an error line per question, the boxes of its conditional
    questions (shown only while their ``when`` holds), and its buttons."""

    key: str
    schema: WorkflowSchema
    column: Any
    fields: list[Any] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)
    boxes: dict[str, Any] = field(default_factory=dict)
    submit: Any = None
    skip: Any = None

    def outputs(self) -> list[Any]:
        return [*self.fields, *self.errors, *self.boxes.values()]

    def values(self, shown: list[Any], problems: dict[str, str] | None = None, *, keep: bool = False) -> list[Any]:
        """The outputs' values for field values ``shown`` (kept as they are on the page with ``keep``): each
        question's error from ``problems`` (by id; none: cleared) and each conditional question shown or hidden."""
        import gradio as gr

        fields = [gr.skip()] * len(self.fields) if keep else list(shown)
        errors = [
            gr.HTML(field_error_html(problem), visible=bool(problem))  # an empty error takes no room
            for problem in ((problems or {}).get(question.id) for question in self.schema.questions)
        ]
        visible = shown_questions(self.schema, shown)
        return [*fields, *errors, *(gr.Column(visible=visible[question]) for question in self.boxes)]

    def reset(self) -> list[Any]:
        return self.values([empty_value(question) for question in self.schema.questions])

    def skipped(self) -> list[Any]:
        """Values that leave every output as it is (a layout takes an empty update, not ``gr.skip()``)."""
        import gradio as gr

        return [gr.skip()] * (len(self.fields) + len(self.errors)) + [gr.update() for _ in self.boxes]
