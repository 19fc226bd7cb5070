"""One form of the Annotate tab: its components (a field and an error line per question, its buttons) and the values
that fill them after an event. Its conditional questions are shown and hidden in the page
(:mod:`studio.ui.annotate_conditions`), never by the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from studio.schemas import WorkflowSchema
from studio.ui.annotate_views import field_error_html
from studio.ui.forms import empty_value


@dataclass
class FormParts:
    """One form's components: its column, a field and an error line per question, and its buttons."""

    key: str
    schema: WorkflowSchema
    column: Any
    fields: list[Any] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)
    submit: Any = None
    skip: Any = None

    def outputs(self) -> list[Any]:
        return [*self.fields, *self.errors]

    def values(self, shown: list[Any], problems: dict[str, str] | None = None, *, keep: bool = False) -> list[Any]:
        """The outputs' values for field values ``shown`` (kept as they are on the page with ``keep``) and each
        question's error from ``problems`` (by id; none: cleared)."""
        import gradio as gr

        fields = [gr.skip()] * len(self.fields) if keep else list(shown)
        errors = [
            gr.HTML(field_error_html(problem), visible=bool(problem))  # an empty error takes no room
            for problem in ((problems or {}).get(question.id) for question in self.schema.questions)
        ]
        return [*fields, *errors]

    def reset(self) -> list[Any]:
        return self.values([empty_value(question) for question in self.schema.questions])

    def skipped(self) -> list[Any]:
        """Values that leave every output as it is."""
        import gradio as gr

        return [gr.skip()] * (len(self.fields) + len(self.errors))
