"""Assembles the studio's Gradio UI (mounted at ``/ui`` by :func:`studio.web.app.create_app`): the header, the tabs,
and the page-load handler that fills them for the caller."""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from studio.ui.annotate_conditions import CONDITIONS_CSS, CONDITIONS_SCRIPT
from studio.ui.annotate_keys import KEYBOARD_SCRIPT, KEYS_CSS
from studio.ui.calls import OpenContext
from studio.ui.live_views import LIVE_CSS
from studio.ui.pages_css import PAGES_CSS
from studio.ui.render import CHAT_CSS, escape_text
from studio.ui.shown import form_key
from studio.usecases.annotate import AnswerLimits
from studio.workflows import WorkflowSchema, load_schemas

logger = logging.getLogger(__name__)

UI_CSS = (
    CHAT_CSS
    + PAGES_CSS
    + KEYS_CSS
    + CONDITIONS_CSS
    + LIVE_CSS
    + """
#h2h-header { display: flex; justify-content: space-between; align-items: center; }
"""
)

#: The annotate form's keyboard shortcuts and its conditional questions (see :mod:`studio.ui.annotate_keys` and
#: :mod:`studio.ui.annotate_conditions`).
UI_HEAD = KEYBOARD_SCRIPT + CONDITIONS_SCRIPT


def form_schemas(snapshots: Iterable[Mapping[str, Any]] = (), directory: Any = None) -> dict[str, WorkflowSchema]:
    """The workflows to build forms for, by form key: the bundled YAML files and every campaign's ``snapshots``.

    A campaign validates answers against the schema it was created with, so its form is built from that snapshot;
    campaigns of one schema name created from different versions of the file get one form each
    (:func:`studio.ui.shown.form_key`), equal schemas share one.
    """
    schemas = list(load_schemas(directory).values())
    schemas += [WorkflowSchema.model_validate(snapshot) for snapshot in snapshots]
    return {form_key(schema): schema for schema in schemas}


def build_ui(
    *,
    open_context: OpenContext,
    schemas: dict[str, WorkflowSchema],
    limits: AnswerLimits | None = None,
    upload_limit_bytes: int = 32 * 1024 * 1024,
) -> Any:
    """Return the studio's ``gr.Blocks``: a header (who is signed in, sign out), the Annotate tab, and the Live
    sessions (whoever may talk in an open live_session campaign), Curate (curators, admins), Research (researchers,
    curators, admins) and Admin (admins; curators: its import) tabs, shown only to those allowed.

    Hiding a tab is for people; every handler behind the tabs runs use cases that authorise the caller again on
    each call. ``open_context`` gives each event's caller context (see :mod:`studio.ui.calls`);
    ``upload_limit_bytes`` bounds the Admin tab's scenario import.
    """
    import gradio as gr

    from studio.ui.admin import AdminTab
    from studio.ui.annotate import AnnotateTab
    from studio.ui.curate import CurateTab
    from studio.ui.live import LiveTab
    from studio.ui.research import ResearchTab

    annotate = AnnotateTab(open_context, schemas, limits)
    talk = LiveTab(open_context, schemas, limits)
    curate, research = CurateTab(open_context), ResearchTab(open_context)
    admin = AdminTab(open_context, upload_limit_bytes)  # the Admin tab: admins (curators: its import only)
    with gr.Blocks(title="H2HTalk Studio") as blocks:
        with gr.Row(elem_id="h2h-header"):
            gr.Markdown("## H2HTalk Studio")
            who = gr.HTML(elem_id="h2h-who", js_on_load=None)
        with gr.Tabs():
            with gr.Tab("Annotate", elem_id="h2h-tab-annotate"):
                annotate.build()
            talk.build()  # the Live sessions tab
            with gr.Tab("Curate", elem_id="h2h-tab-curate", visible=False) as curate_tab:
                curate.build()
            with gr.Tab("Research", elem_id="h2h-tab-research", visible=False) as research_tab:
                research.build()
            admin.build()
        outputs = [who, annotate.campaign, curate_tab, research_tab, *curate.load_outputs(), *research.load_outputs()]
        outputs += [*admin.load_outputs(), *talk.load_outputs()]
        loader = _page_loader(open_context, annotate, curate, research, admin, talk)
        blocks.load(loader, outputs=outputs, api_visibility="private")
    return blocks


def greeting_html(username: str, role: str) -> str:
    """Who is signed in (escaped), and the sign-out button (a POST form)."""
    return (
        f'Signed in as <b id="h2h-username">{escape_text(username)}</b> ({escape_text(role)}) · '
        '<form method="post" action="/logout" style="display:inline">'
        '<button type="submit" id="h2h-logout">Sign out</button></form>'
    )


def _page_loader(open_context: OpenContext, annotate: Any, curate: Any, research: Any, admin: Any, talk: Any) -> Any:
    """The page-load handler: greet the caller, fill the campaign picker, show the tabs they may use — in one
    read session."""
    import gradio as gr

    from studio.errors import ServiceError
    from studio.policies import CurationPolicy, ResultsPolicy, is_allowed

    def skipped(tab: Any) -> list[Any]:
        return [gr.skip()] * len(tab.load_outputs())

    def on_load(request: gr.Request) -> list[Any]:
        try:
            with open_context(request).reading() as (session, caller):
                curating = is_allowed(caller, CurationPolicy.decide())
                researching = is_allowed(caller, ResultsPolicy.read())
                return [
                    greeting_html(caller.username, caller.role),
                    annotate.campaign_picker(session, caller),
                    gr.Tab(visible=curating),
                    gr.Tab(visible=researching),
                    *(curate.load_values(session, caller) if curating else skipped(curate)),
                    *(research.load_values(session, caller) if researching else skipped(research)),
                    *admin.load_values(session, caller),
                    *talk.load_values(session, caller),
                ]
        except ServiceError:
            return [
                '<a href="/login">Sign in</a>',
                gr.Dropdown(choices=[], value=None),
                gr.Tab(visible=False),
                gr.Tab(visible=False),
                *skipped(curate),
                *skipped(research),
                *admin.hidden_values(),
                *talk.hidden_values(),
            ]

    return on_load
