"""The curator's decision panel: accept, edit-and-accept or reject the scenario the page shows, or apply the crowd's
subtask where the workflow's classification rule flagged it (the status stays as it is).

The decision names the scenario on screen and the revision it was rendered at (the hidden ``#h2h-curate-shown``
field, written with the scenario; see ``studio.usecases.curate.ShownScenario``): never the id typed in the "Scenario
id" box, which only opens scenarios. A refusal (no reason, a field the Scenario record refuses, a scenario that
changed since it was opened) is a message beside the form, with the field's own error under it; the form keeps what
the curator typed and stays usable. Only a caller who may not decide at all gets ``gr.Error``.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from typing import Any

from studio.errors import Conflict, InvalidInput, NotFound, ServiceError
from studio.services.curation_decisions import FORM_CONTEXT_LISTS, FORM_FIELDS, EditProblem
from studio.ui.calls import OpenContext, reading, toast_text
from studio.ui.curate_views import decision_message
from studio.ui.render import escape_text, render_message
from studio.usecases import curate

#: The edit form's labels, by field (``studio.services.curation_decisions.FORM_FIELDS``).
FIELD_LABELS: dict[str, str] = {
    "persona": "Persona",
    "user_input": "User input (the message to answer)",
    "reference": "Reference response",
    "context.memories": "Context: memories (one a line)",
    "context.schedule": "Context: schedule (one a line)",
    "context.hobbies": "Context: hobbies (one a line)",
    "context.routine": "Context: routine",
    "context.feedback": "Context: feedback",
    "context.date": "Context: date",
    "context.location": "Context: location",
}
#: Focus the first field with an error (after the decision's values arrived).
FOCUS_FIRST_ERROR_JS = """() => {
  const error = [...document.querySelectorAll('.h2h-field-error')].find((node) => node.innerText.trim());
  const box = error && error.closest('.h2h-edit-field')?.querySelector('textarea, input');
  if (box) box.focus();
}"""
#: (detail values of the scenario shown) given the session, the caller and the scenario id.
DetailValues = Callable[[Any, Any, str], list[Any]]


def field_elem_id(field: str) -> str:
    return "h2h-edit-" + field.replace(".", "-").replace("_", "-")


def field_error(problem: str | None) -> Any:
    """A field's error line: the problem (escaped), or hidden when there is none (no empty band in the form)."""
    import gradio as gr

    if not problem:
        return gr.HTML("", visible="hidden")
    return gr.HTML(f'<div class="h2h-message h2h-error" role="alert">{escape_text(problem)}</div>', visible=True)


class DecisionPanel:
    """The decision form (action, edit fields, reason) and its handler."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context
        self.fields: dict[str, Any] = {}
        self.errors: dict[str, Any] = {}

    def build(self) -> None:
        import gradio as gr

        with gr.Group(elem_id="h2h-decision"):
            self.target = gr.HTML(render_message("Open a scenario to decide on it."), elem_id="h2h-decide-target")
            self.action = gr.Radio(
                [
                    ("Accept", "accept"),
                    ("Edit and accept", "edit"),
                    ("Reject", "reject"),
                    ("Apply the crowd's subtask (the status stays)", "relabel"),
                ],
                value="accept",
                label="Decision (Edit and accept: the edited scenario is accepted in one step)",
                elem_id="h2h-action",
            )
            with gr.Column(visible=False, elem_id="h2h-edit-form") as self.edit_form:
                for field in FORM_FIELDS:
                    with gr.Column(elem_classes=["h2h-edit-field"], min_width=0):
                        lines = 3 if field.removeprefix("context.") in FORM_CONTEXT_LISTS or "." not in field else 1
                        self.fields[field] = gr.Textbox(
                            label=FIELD_LABELS[field], lines=lines, elem_id=field_elem_id(field)
                        )
                        self.errors[field] = gr.HTML(
                            "",
                            visible="hidden",
                            elem_id=field_elem_id(field) + "-error",
                            elem_classes=["h2h-field-error"],
                        )
            self.reason = gr.Textbox(label="Reason (required)", elem_id="h2h-reason")
            self.reason_error = gr.HTML(
                "", visible="hidden", elem_id="h2h-reason-error", elem_classes=["h2h-field-error"]
            )
            self.decide = gr.Button("Save decision", variant="primary", elem_id="h2h-decide")
        self.message = gr.HTML(elem_id="h2h-decision-message", js_on_load=None)
        self.action.change(self._on_action(), inputs=[self.action], outputs=[self.edit_form], api_visibility="private")

    def _on_action(self) -> Any:
        import gradio as gr

        def on_action(action: str | None, request: gr.Request) -> Any:
            # Even showing the edit form asks who is calling: every handler checks the caller (policies.py).
            with reading(self.open_context, request) as (session, caller):
                curate.may_decide(session, caller=caller)
            return gr.Column(visible=action == "edit")

        return on_action

    def form_outputs(self) -> list[Any]:
        """What opening a scenario fills here: the target line and the edit form's fields (then the errors)."""
        return [self.target, *self.fields.values(), self.reason_error, *self.errors.values()]

    @staticmethod
    def form_values(shown_id: str, form: dict[str, str]) -> list[Any]:
        """Values of :meth:`form_outputs` for the scenario ``shown_id`` whose form values are ``form``."""
        target = f"Your decision applies to {shown_id} (the scenario shown above)."
        no_errors = [field_error(None) for _ in range(len(FORM_FIELDS) + 1)]
        return [render_message(target), *(form[field] for field in FORM_FIELDS), *no_errors]

    def wire(self, *, shown: Any, detail_outputs: list[Any], detail_values: DetailValues) -> Any:
        """Wire the Save button: decide on ``shown`` and refill ``detail_outputs``; return the event (to chain)."""
        outputs = [self.message, self.reason, self.reason_error, *self.errors.values(), *detail_outputs]
        decided = self.decide.click(
            self._on_decide(shown, detail_values, len(detail_outputs)),
            inputs={shown, self.action, self.reason, *self.fields.values()},
            outputs=outputs,
            trigger_mode="once",
            show_progress_on=[self.message],
            api_visibility="private",
        )
        decided.then(None, js=FOCUS_FIRST_ERROR_JS)
        return decided

    def _refused(self, problem: ServiceError, n_detail: int) -> list[Any]:
        """The outputs of a refused decision: the message, the field's error; everything typed stays."""
        import gradio as gr

        field, field_problem = (problem.field, problem.problem) if isinstance(problem, EditProblem) else (None, "")
        reason_error = str(problem) if str(problem).startswith("reason:") else ""
        errors = [field_error(field_problem if name == field else None) for name in FORM_FIELDS]
        message = render_message(f"Not saved — {problem}", kind="error")
        return [message, gr.skip(), field_error(reason_error), *errors, *([gr.skip()] * n_detail)]

    def _on_decide(self, shown: Any, detail_values: DetailValues, n_detail: int) -> Any:
        import gradio as gr

        # Inputs given as a set: Gradio passes one dict, component → value (ten form fields need no ten parameters).
        def on_decide(values: dict[Any, Any], request: gr.Request) -> list[Any]:
            context = self.open_context(request)
            form = {field: values.get(box) for field, box in self.fields.items()}
            try:
                with context.writing() as (session, caller):
                    scenario, status = curate.decide_shown(
                        session,
                        caller=caller,
                        shown=values.get(shown),
                        action=values.get(self.action) or "",
                        reason=values.get(self.reason),
                        form=form,
                    )
                    refreshed = detail_values(session, caller, scenario.scenario_id)
            except Conflict as problem:  # the scenario changed since it was shown: show it as it is now
                with context.reading() as (session, caller):
                    current = curate.ShownScenario.from_page(values.get(shown)).scenario_id
                    return [*self._refused(problem, n_detail)[:-n_detail], *detail_values(session, caller, current)]
            except (InvalidInput, NotFound) as problem:
                return self._refused(problem, n_detail)
            except ServiceError as error:  # not signed in, or not allowed to decide at all
                raise gr.Error(toast_text(error), duration=10, print_exception=False) from None
            saved = decision_message(scenario.scenario_id, str(values.get(self.action)), status)
            cleared = [field_error(None) for _ in range(len(FORM_FIELDS) + 1)]
            return [render_message(saved, kind="done"), "", *cleared, *refreshed]

        return on_decide
