"""The Annotate tab: layout, wiring, and the use cases' results turned into component values.

One form per distinct workflow schema (:func:`studio.ui.shown.form_key`) is built up front (hidden); choosing a
campaign shows its item and the form of the schema it was created with. The item on screen is written into the page
(:class:`studio.ui.shown.ShownItem`, a hidden field) and every submit and skip sends it back, so an event names the
item the rater saw, never the one the server moved on to meanwhile. Every handler takes ``gr.Request`` and runs
``studio.usecases.annotate`` in one session, which authorises the caller on every call: an annotator calling an
expert campaign's handler through ``/gradio_api/*`` is refused there, not by a hidden component.

Beside the chat, a side panel shows the persona and the scenario's context (memories, schedule, date, place); the
item's id is above the chat. A submit checks the whole form first (:func:`studio.ui.forms.form_problems`) and says
each problem under its question, leaving the form as it was; a follow-up question (``when``) is shown and hidden in
the page (:mod:`studio.ui.annotate_conditions`). "Go back" lists the person's earlier answers; opening one shows that
item with its answer in the form, and Submit revises it (:func:`studio.usecases.annotate.revise`, as ``PUT`` does;
the same answer again stores nothing and says so). A sign-in that ended meanwhile (an admin deactivated the person,
reset their password or ended their sessions) leaves the page as it is, what was typed too, and says "You were
signed out — sign in again".
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from typing import Any

from studio.errors import Conflict, InvalidInput, NotAuthenticated, ServiceError
from studio.services.answers_mine import NOTHING_CHANGED
from studio.services.text import visible_text
from studio.ui.annotate_form import FormParts, build_form
from studio.ui.annotate_keys import SHORTCUTS_HELP
from studio.ui.annotate_views import Panel, panel_of, refusal_html
from studio.ui.calls import OpenContext
from studio.ui.forms import answers_from_form, form_problems, problem_of_error, summary_of
from studio.ui.render import render_message
from studio.ui.shown import ShownItem
from studio.usecases import annotate
from studio.usecases.annotate import AnswerLimits, Offer, Revision, Submission
from studio.workflows import WorkflowSchema

__all__ = ["NO_FORM_YET", "AnnotateTab", "FormParts", "campaign_choices", "panel_of"]

NO_FORM_YET = (
    "This campaign was created after the studio started, from a schema it has no form for yet. "
    "Ask an administrator to restart the studio."
)
#: A submit refused because its lease no longer holds the item (skipped or answered meanwhile, or expired and handed
#: on): the page moves on to the rater's next item and says so.
NOT_SAVED = "Not saved ({}). Nothing was stored for that item; the item shown now is your next one."
#: S pressed after the item's answer was saved (Enter then S): the skip named that item, whose answer stays.
ANSWERED_BEFORE_SKIP = "Saved. Your answer was stored before the skip arrived, so nothing was skipped."
#: Where the panel's outputs sit in every handler's output list (tests index by them too).
SHOWN, CHAT, PERSONA, PROGRESS, MESSAGE, CONTEXT, SHOW_ALL = range(7)


def campaign_choices(campaigns: list[Any]) -> list[tuple[str, str]]:
    """Campaigns as (label, name) pairs for the picker."""
    return [(visible_text(f"{campaign.name} ({campaign.schema_name})"), campaign.name) for campaign in campaigns]


class AnnotateTab:
    """The components of the Annotate tab and the handlers that fill them."""

    def __init__(
        self, open_context: OpenContext, schemas: dict[str, WorkflowSchema], limits: AnswerLimits | None = None
    ) -> None:
        self.open_context = open_context
        self.limits = limits or AnswerLimits()
        self.schemas = schemas
        self.parts: dict[str, FormParts] = {}
        self.elem_names: dict[str, str] = {}  # form key -> the name in its element ids

    @property
    def forms(self) -> dict[str, Any]:
        return {key: parts.column for key, parts in self.parts.items()}

    @property
    def fields(self) -> dict[str, list[Any]]:
        return {key: parts.fields for key, parts in self.parts.items()}

    def build(self) -> None:
        """Create the tab's components inside the current ``gr.Blocks`` and wire their events."""
        import gradio as gr

        from studio.ui.annotate_revise import build_revise

        with gr.Row():
            self.campaign = gr.Dropdown(label="Campaign", choices=[], value=None, elem_id="h2h-campaign", scale=4)
            self.refresh = gr.Button("Refresh campaigns", elem_id="h2h-refresh", scale=1)
        self.progress = gr.HTML(elem_id="h2h-progress", js_on_load=None)
        self.message = gr.HTML(render_message("Choose a campaign to start."), elem_id="h2h-message", js_on_load=None)
        # The item and lease on screen, sent back with every submit and skip (see studio.ui.shown).
        self.shown = gr.Textbox(value="", visible="hidden", interactive=False, elem_id="h2h-shown-item")
        self.revise = build_revise(self)
        with gr.Row(elem_id="h2h-item"):
            with gr.Column(scale=3):
                self.chat = gr.HTML(elem_id="h2h-chat", js_on_load=None)
                self.show_all = gr.Button("Show the whole text", visible=False, elem_id="h2h-show-all", size="sm")
            with gr.Column(scale=2, elem_id="h2h-side"):
                with gr.Accordion("Persona (the companion's character sheet)", open=True, elem_id="h2h-persona-box"):
                    self.persona = gr.HTML(elem_id="h2h-persona", js_on_load=None)
                with gr.Accordion(
                    "What the companion knew (memories, schedule, date, place)", elem_id="h2h-context-box"
                ):
                    self.context = gr.HTML(elem_id="h2h-context", js_on_load=None)
        for key, schema in self.schemas.items():
            self._build_form(key, schema)
        gr.Markdown(SHORTCUTS_HELP, elem_id="h2h-shortcuts")
        self._wire()
        self.revise.wire()

    def _build_form(self, key: str, schema: WorkflowSchema) -> None:
        # Element ids name the schema; a second version of one schema adds its digest so ids stay unique.
        name = schema.name if schema.name not in self.elem_names.values() else key.replace("@", "-")
        self.elem_names[key] = name
        self.parts[key] = build_form(key, schema, name)

    def panel_outputs(self) -> list[Any]:
        return [
            self.shown,
            self.chat,
            self.persona,
            self.progress,
            self.message,
            self.context,
            self.show_all,
            *self.forms.values(),
        ]

    def panel_values(self, panel: Panel) -> list[Any]:
        """``panel`` as values of :meth:`panel_outputs`."""
        import gradio as gr

        visibility = [gr.Column(visible=(key == panel.form_key)) for key in self.parts]
        message = panel.message_html
        if panel.form_key is not None and panel.form_key not in self.parts:
            # Forms are built when the studio starts: a campaign created since with a new schema version has none.
            message = render_message(NO_FORM_YET, kind="error")
        shown = panel.shown.to_page() if panel.shown is not None else ""
        progress = gr.skip() if panel.progress_html is None else panel.progress_html
        return [
            shown,
            panel.chat_html,
            panel.persona_html,
            progress,
            message,
            panel.context_html,
            gr.Button(visible=panel.has_cuts),
            *visibility,
        ]

    def error_values(self, error: Exception | str, *, form: str | None) -> list[Any]:
        """Show why the event failed (a ServiceError's text is safe to show). With ``form`` (the form the event came
        from) the item stays on screen, its answers untouched; without, the page shows no item. A sign-in that has
        ended leaves the whole page as it is and says so (:func:`studio.ui.annotate_views.refusal_html`)."""
        import gradio as gr

        message = refusal_html(error)
        if isinstance(error, NotAuthenticated):  # signed out meanwhile: the page stays as it is, what was typed too
            return [gr.skip()] * 4 + [message, gr.skip(), gr.skip(), *(gr.update() for _ in self.parts)]
        # Layouts cannot take gr.skip(): their visibility is restated instead.
        visibility = [gr.Column(visible=(key == form)) for key in self.parts]
        if form is not None:
            return [gr.skip()] * 4 + [message, gr.skip(), gr.skip(), *visibility]
        return ["", "", "", gr.skip(), message, "", gr.Button(visible=False), *visibility]

    def _wire(self) -> None:
        self.refresh.click(
            self._load_campaigns(), inputs=[self.campaign], outputs=[self.campaign], api_visibility="private"
        )
        # `input` (a person's choice), not `change`: the page-load handler fills the picker, which Gradio reports as a
        # change — a second round trip after each load, whose blur closed a list a person had just opened.
        shown = self.campaign.input(
            self._choose(),
            inputs=[self.campaign],
            outputs=[*self.panel_outputs(), self.revise.mine],
            api_visibility="private",
        )
        # Blur the dropdown once the item is shown, so the keyboard shortcuts work without an extra click.
        shown.then(None, js="() => { if (document.activeElement) document.activeElement.blur(); }")
        self.show_all.click(
            self.revise.show_all_handler(),
            inputs=[self.shown],
            outputs=[self.chat, self.show_all, self.message],
            api_visibility="private",
        )
        for parts in self.parts.values():
            self._wire_form(parts)

    def _wire_form(self, parts: FormParts) -> None:
        outputs = [*self.panel_outputs(), *parts.outputs()]
        # A set of inputs reaches the handler as one {component: value} dict, which leaves room for the `request`
        # parameter Gradio injects (it cannot follow a *values parameter).
        parts.submit.click(
            self._submit_handler(parts),
            inputs={self.shown, *parts.fields},
            outputs=[*outputs, self.revise.mine],  # the earlier answers listed anew after a revision
            api_visibility="private",
            trigger_mode="once",
        )
        parts.skip.click(
            self._skip_handler(parts),
            inputs=[self.shown],
            outputs=outputs,
            api_visibility="private",
            trigger_mode="once",
        )
        # A question's error goes as soon as the rater changes its answer (in the page: no server call); before, it
        # stayed under a question already answered until the next Submit.
        for answer, error in zip(parts.fields, parts.errors, strict=True):
            answer.input(None, js="() => ''", outputs=[error])

    def campaign_picker(self, session: Any, caller: Any, chosen: str | None = None) -> Any:
        """The campaign picker's choices for the caller (the open campaigns they may answer), ``chosen`` kept chosen
        while it is among them."""
        import gradio as gr

        # A live_session campaign is talked in on the Live sessions tab (studio.ui.live), not answered item by item.
        found = annotate.visible_campaigns(session, caller=caller)
        choices = campaign_choices([campaign for campaign in found if campaign.target_kind != "live_session"])
        kept = chosen if chosen in {name for _label, name in choices} else None
        return gr.Dropdown(choices=choices, value=kept)

    def _load_campaigns(self) -> Callable[..., Any]:
        import gradio as gr

        from studio.ui.calls import reading

        def load_campaigns(chosen: str | None, request: gr.Request) -> Any:
            with reading(self.open_context, request) as (session, caller):
                return self.campaign_picker(session, caller, chosen)

        return load_campaigns

    def offer(self, campaign: str, request: Any, before: Callable[[Any, Any], None] | None = None) -> Offer:
        """In one write session: ``before(session, caller)`` (a submit, a skip), then the caller's next item."""
        with self.open_context(request).writing() as (session, caller):
            if before is not None:
                before(session, caller)
            return annotate.offer_next(
                session, caller=caller, campaign=campaign, lease_seconds=self.limits.lease_seconds
            )

    def _moved_on(self, campaign: str, why: str, request: Any, form: str) -> list[Any]:
        """The rater's next item, led by ``why`` as an error; if even that fails, the error alone."""
        try:
            panel = panel_of(campaign, self.offer(campaign, request))
        except ServiceError as error:
            return self.error_values(ServiceError(f"{why} ({error})"), form=form)
        values = self.panel_values(panel)
        values[MESSAGE] = render_message(why, kind="error")
        return values

    def _choose(self) -> Callable[..., list[Any]]:
        import gradio as gr

        def choose(campaign: str | None, request: gr.Request) -> list[Any]:
            cleared = gr.Dropdown(choices=[], value=None)  # the earlier answers listed were another campaign's
            try:
                offer = self.offer(campaign, request) if campaign else None
                return [*self.panel_values(panel_of(campaign, offer)), cleared]
            except ServiceError as error:
                return [*self.error_values(error, form=None), cleared]

        return choose

    def _refused(self, parts: FormParts, values: list[Any], problems: dict[str, str]) -> list[Any]:
        """The form kept as it is, each problem under its question and a summary above."""
        message = summary_of(parts.schema, problems)
        return self.error_values(message, form=parts.key) + parts.values(values, problems, keep=True)

    def _sign_in_ended(self, request: Any) -> NotAuthenticated | None:
        """``NotAuthenticated`` when the event's sign-in has ended (else None: a valid submit goes straight on to its
        write session, which resolves the caller anyway)."""
        try:
            with self.open_context(request).reading():
                return None
        except NotAuthenticated as error:
            return error
        except ServiceError:
            return None

    def _store(self, parts: FormParts, shown: ShownItem, values: list[Any], request: Any) -> tuple[Offer, str]:
        """Submit (or, for an answer opened to revise, revise) the form's answers, then the caller's next item; and
        the note saying what was stored ("Saved.", or for a revision that changes nothing, that nothing was)."""
        answers = answers_from_form(parts.schema, values)
        notes = ["Saved."]

        def store(session: Any, caller: Any) -> None:
            if shown.revising:
                revision = Revision(answers=answers, seconds_spent=shown.seconds_on_screen())
                revised = annotate.revise(
                    session,
                    caller=caller,
                    campaign=shown.campaign,
                    item_id=shown.item_id,
                    revision=revision,
                    limits=self.limits,
                )
                notes.append("Saved your revised answer." if revised.changed else NOTHING_CHANGED)
                return
            submission = Submission(
                item_id=shown.item_id,
                lease_id=shown.lease_id or "",
                submission_id=shown.submission_id,
                answers=answers,
                seconds_spent=shown.seconds_on_screen(),
            )
            annotate.submit(session, caller=caller, campaign=shown.campaign, submission=submission, limits=self.limits)

        return self.offer(shown.campaign, request, store), notes[-1]

    def _submit_handler(self, parts: FormParts) -> Callable[..., list[Any]]:
        import gradio as gr

        def on_submit(data: dict[Any, Any], request: gr.Request) -> list[Any]:
            values, revised_in = self._submitted(parts, data, request)
            # After a revision the "go back" list is read anew (its labels show the answers as they were).
            listed = self.revise.choices(revised_in, request) if revised_in else gr.skip()
            return [*values, listed]

        return on_submit

    def _submitted(self, parts: FormParts, data: dict[Any, Any], request: Any) -> tuple[list[Any], str | None]:
        """The panel and form values after a submit, and the campaign whose answer was revised (else None)."""
        values = [data[component] for component in parts.fields]
        kept = parts.values(values, keep=True)
        try:
            shown = ShownItem.from_page(data[self.shown])
        except ServiceError as error:
            return self.error_values(error, form=parts.key) + kept, None
        if shown is None:  # a late second press after the last item: nothing is on screen to answer
            return self.error_values(ServiceError("Nothing to submit."), form=None) + kept, None
        problems = form_problems(parts.schema, values)
        if problems:  # said under the questions, unless the person was signed out meanwhile (that first)
            ended = self._sign_in_ended(request)
            if ended is not None:
                return self.error_values(ended, form=parts.key) + kept, None
            return self._refused(parts, values, problems), None
        try:
            offer, note = self._store(parts, shown, values, request)
        except Conflict as error:  # nothing was stored: move on to the rater's next item, saying why
            return self._moved_on(shown.campaign, NOT_SAVED.format(error), request, parts.key) + parts.reset(), None
        except InvalidInput as error:  # a limit only the server knows (the studio's text limit)
            about = problem_of_error(parts.schema, str(error))
            if about is not None:
                return self._refused(parts, values, dict([about])), None
            return self.error_values(error, form=parts.key) + kept, None
        except ServiceError as error:
            return self.error_values(error, form=parts.key) + kept, None
        values = self.panel_values(panel_of(shown.campaign, offer, note=note)) + parts.reset()
        return values, shown.campaign if shown.revising else None

    def _skip_handler(self, parts: FormParts) -> Callable[..., list[Any]]:
        import gradio as gr

        def on_skip(shown_text: str | None, request: gr.Request) -> list[Any]:
            kept = parts.skipped()
            try:
                shown = ShownItem.from_page(shown_text)
            except ServiceError as error:
                return self.error_values(error, form=parts.key) + kept
            if shown is None:
                return self.error_values(ServiceError("Nothing to skip."), form=None) + kept
            campaign, item_id, lease_id = shown.campaign, shown.item_id, shown.lease_id

            skipped = [not shown.revising]

            def release(session: Any, caller: Any) -> None:
                if lease_id is not None:  # an answer opened to revise holds no lease: going back changes nothing
                    skipped[0] = annotate.skip(
                        session, caller=caller, campaign=campaign, item_id=item_id, lease_id=lease_id
                    )

            try:
                offer = self.offer(campaign, request, release)
            except ServiceError as error:
                return self.error_values(error, form=parts.key) + kept
            # S pressed right after Enter names the item just answered: its answer stays, and no skip is claimed.
            note = "Skipped." if skipped[0] else "Nothing changed." if shown.revising else ANSWERED_BEFORE_SKIP
            return self.panel_values(panel_of(campaign, offer, note=note)) + parts.reset()

        return on_skip
