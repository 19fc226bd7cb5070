"""A Research section computed from the page's three pickers (variant, score signature, judge): a button, an escaped
note and a table, filled by one handler. The judge-bias card (``studio.ui.research_judge``) and the
prediction-powered scores (``studio.ui.research_ppi``) are such sections; each says only what it computes
(:meth:`PickedSection.compute`). The handler opens the caller's context once and the use case it calls authorises the
caller; a choice with nothing to show fills the note with a warning and empties the table, as the page's own
sub-tabs do.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

import pandas as pd

from studio.ui.calls import OpenContext, reading
from studio.ui.research_views import note_html
from studio.ui.tables import sized, table


class PickedSection:
    """Subclasses set :attr:`button_label`, :attr:`elem_id` (the table's; ``-button`` and ``-note`` are derived) and
    :attr:`table_label`, and implement :meth:`compute`."""

    button_label: str
    elem_id: str
    table_label: str

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context

    def compute(self, session: Any, caller: Any, *, variant: Any, signature: Any, judge: Any) -> tuple[str, Any]:
        """(the note's HTML, the table as text cells) for these choices; ``InvalidInput`` / ``NotFound`` when there
        is nothing to show."""
        raise NotImplementedError

    def build(self, *, variant: Any, signature: Any, judge: Any) -> None:
        """Create the components in the current Gradio context; the pickers are the page's own."""
        import gradio as gr

        self.button = gr.Button(self.button_label, elem_id=f"{self.elem_id}-button")
        self.note = gr.HTML(elem_id=f"{self.elem_id}-note", js_on_load=None)
        self.table = table(self.table_label, self.elem_id, wrap=True, pinned_columns=1)
        self._wire(inputs=[variant, signature, judge])

    def _wire(self, *, inputs: list[Any]) -> None:
        import gradio as gr

        from studio.errors import InvalidInput, NotFound

        def show(variant: Any, signature: Any, judge: Any, request: gr.Request) -> list[Any]:
            """Fill the note and the table; a choice with nothing to show says so in the note."""
            with reading(self.open_context, request) as (session, caller):
                try:
                    note, shown = self.compute(session, caller, variant=variant, signature=signature, judge=judge)
                except (InvalidInput, NotFound) as problem:
                    warning = note_html([f"Nothing to show for these choices: {problem}"], kind="warning")
                    return [warning, pd.DataFrame(columns=[""])]
            return [note, sized(shown)]

        self.button.click(show, inputs=inputs, outputs=[self.note, self.table], api_visibility="private")
