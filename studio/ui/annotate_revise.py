"""The Annotate tab's "go back" and "show the whole text": list the person's earlier answers, open one into its form
to revise it, and load a text that was cut for display whole.

Layout and wiring only; the use cases (:mod:`studio.usecases.annotate`) authorise the caller on every call and
decide what they may read (their own answers; whole texts of items they were handed).
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from typing import Any

from studio.errors import ServiceError
from studio.ui.annotate_views import answer_choices, refusal_html, revise_panel
from studio.ui.forms import shown_value
from studio.ui.render import render_item, render_item_id, render_message
from studio.ui.shown import ShownItem
from studio.usecases import annotate

NO_ANSWERS = "You have no answers in this campaign yet."


class ReviseParts:
    """The "go back" components of an Annotate tab ``tab`` (a :class:`studio.ui.annotate.AnnotateTab`)."""

    def __init__(self, tab: Any) -> None:
        import gradio as gr

        self.tab = tab
        with (
            gr.Accordion("Go back: revise one of your earlier answers", open=False, elem_id="h2h-revise-box"),
            gr.Row(),
        ):
            self.mine = gr.Dropdown(
                label="Your answers in this campaign (open one to revise it)",
                choices=[],
                value=None,
                elem_id="h2h-mine",
                scale=4,
            )
            self.load = gr.Button("List my answers", elem_id="h2h-mine-load", scale=1)

    def wire(self) -> None:
        tab = self.tab
        self.load.click(
            self.list_handler(), inputs=[tab.campaign], outputs=[self.mine, tab.message], api_visibility="private"
        )
        outputs = [*tab.panel_outputs()]
        for parts in tab.parts.values():
            outputs += parts.outputs()
        self.mine.input(
            self.open_handler(), inputs=[tab.campaign, self.mine], outputs=outputs, api_visibility="private"
        )

    def listed(self, campaign: str, request: Any) -> list[tuple[str, str]]:
        """The caller's answers in ``campaign`` as the picker's (label, item id) choices, read anew; a refusal raises
        ``ServiceError``."""
        with self.tab.open_context(request).reading() as (session, caller):
            mine = annotate.my_answers(session, caller=caller, campaign=campaign)
        return answer_choices(mine.schema, mine.answers, mine.excerpts)

    def choices(self, campaign: str, request: Any) -> Any:
        """The picker of the caller's answers in ``campaign``, read anew (nothing chosen); unchanged if refused."""
        import gradio as gr

        try:
            return gr.Dropdown(choices=self.listed(campaign, request), value=None)
        except ServiceError:
            return gr.skip()

    def list_handler(self) -> Callable[..., list[Any]]:
        import gradio as gr

        def list_answers(campaign: str | None, request: gr.Request) -> list[Any]:
            if not campaign:
                return [gr.Dropdown(choices=[], value=None), render_message("Choose a campaign first.")]
            try:
                choices = self.listed(campaign, request)
            except ServiceError as error:
                return [gr.skip(), refusal_html(error)]
            note = f"{len(choices)} answer(s) listed under “Go back”: open one to revise it." if choices else NO_ANSWERS
            return [gr.Dropdown(choices=choices, value=None), render_message(note)]

        return list_answers

    def open_handler(self) -> Callable[..., list[Any]]:
        import gradio as gr

        tab = self.tab

        def open_answer(campaign: str | None, chosen: str | None, request: gr.Request) -> list[Any]:
            skipped = [part for parts in tab.parts.values() for part in parts.skipped()]
            if not campaign or not chosen:
                return [gr.skip()] * len(tab.panel_outputs()) + skipped
            try:
                with tab.open_context(request).reading() as (session, caller):
                    answered = annotate.answered_item(session, caller=caller, campaign=campaign, item_id=int(chosen))
            except (ServiceError, ValueError) as error:
                refused: list[Any] = tab.error_values(error, form=None)
                return refused + skipped
            panel = revise_panel(campaign, answered)
            values: list[Any] = tab.panel_values(panel)
            for key, parts in tab.parts.items():
                if key != panel.form_key:
                    values += parts.skipped()
                    continue
                given = panel.values or {}
                values += parts.values(
                    [shown_value(question, given.get(question.id)) for question in parts.schema.questions]
                )
            return values

        return open_answer

    def show_all_handler(self) -> Callable[..., list[Any]]:
        import gradio as gr

        tab = self.tab

        def show_all(shown_text: str | None, request: gr.Request) -> list[Any]:
            try:
                shown = ShownItem.from_page(shown_text)
                if shown is None:
                    return [gr.skip(), gr.Button(visible=False), gr.skip()]
                with tab.open_context(request).reading() as (session, caller):
                    whole = annotate.whole_content(
                        session, caller=caller, campaign=shown.campaign, item_id=shown.item_id
                    )
            except ServiceError as error:
                return [gr.skip(), gr.skip(), refusal_html(error)]
            chat = render_item_id(shown.item_id) + render_item(whole)
            return [chat, gr.Button(visible=False), render_message("Showing every text whole.")]

        return show_all


def build_revise(tab: Any) -> ReviseParts:
    """Create the "go back" components inside the current layout (wired later by :meth:`ReviseParts.wire`)."""
    return ReviseParts(tab)
