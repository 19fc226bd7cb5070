"""One form of the Annotate tab: its components (a field and an error line per question, its buttons), built by
:func:`build_form`, and the values that fill them after an event. Its conditional questions are shown and hidden
in the page (:mod:`studio.ui.annotate_conditions`), never by the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from studio.ui.annotate_conditions import conditions_html
from studio.ui.annotate_views import field_error_html
from studio.ui.forms import build_component, empty_value
from studio.workflows import WorkflowSchema


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


def build_form(key: str, schema: WorkflowSchema, name: str) -> FormParts:
    """Create (inside the current layout, hidden) the form of ``schema``: its title, instructions and guidelines, a
    field and an error line per question (element ids ``q-<name>-<id>``, ``err-<name>-<id>``, in a box
    ``q-box-<name>-<id>``), its conditional questions' rules for the page, and Submit and Skip."""
    import gradio as gr

    with gr.Column(visible=False, elem_id=f"h2h-form-{name}", elem_classes=["h2h-form"]) as column:
        parts = FormParts(key, schema, column)
        gr.Markdown(f"### {schema.title}\n\n{schema.instructions}")
        if schema.guidelines:
            with gr.Accordion("Guidelines and examples", open=False, elem_id=f"h2h-guidelines-{name}"):
                gr.Markdown(schema.guidelines)
        for question in schema.questions:
            # A conditional question's box is hidden and shown by the page (studio.ui.annotate_conditions).
            with gr.Column(elem_id=f"q-box-{name}-{question.id}"):
                parts.fields.append(build_component(question, elem_id=f"q-{name}-{question.id}"))
                error = gr.HTML(
                    "",
                    elem_id=f"err-{name}-{question.id}",
                    elem_classes=["h2h-field-error-box"],
                    js_on_load=None,
                    padding=False,
                    visible=False,  # shown with its first error (FormParts.values)
                )
                parts.errors.append(error)
        if any(question.when for question in schema.questions):
            gr.HTML(conditions_html(schema, name), visible="hidden", js_on_load=None, padding=False)
        with gr.Row():
            parts.submit = gr.Button("Submit (Enter)", variant="primary", elem_classes=["h2h-submit"])
            parts.skip = gr.Button("Skip (S)", elem_classes=["h2h-skip"])
    return parts
