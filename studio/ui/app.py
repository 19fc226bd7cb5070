"""Assembles the studio's Gradio UI (mounted at ``/ui`` by :func:`studio.app.create_app`)."""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
import logging
from typing import Any

from sqlalchemy import Engine

from studio.schemas import WorkflowSchema, load_schemas
from studio.ui.render import CHAT_CSS, escape_text

logger = logging.getLogger(__name__)

UI_CSS = (
    CHAT_CSS
    + """
#h2h-header { display: flex; justify-content: space-between; align-items: center; }
"""
)

#: Keyboard shortcuts of the annotate form (documented on the page): digits pick an option of the
#: first unanswered radio question of the visible form, Enter submits, S skips. Keys typed into text
#: fields are left alone.
UI_HEAD = """
<script>
document.addEventListener('keydown', function (event) {
  const target = event.target || {};
  const tag = (target.tagName || '').toLowerCase();
  const typing = tag === 'textarea' || tag === 'select' || target.isContentEditable ||
    (tag === 'input' && !['radio', 'checkbox', 'button', 'submit'].includes(target.type));
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const form = Array.from(document.querySelectorAll('.h2h-form')).find((el) => el.offsetParent !== null);
  if (!form) return;
  if (/^[1-9]$/.test(event.key)) {
    const groups = Array.from(form.querySelectorAll('.h2h-key-radio')).filter((el) => el.offsetParent !== null);
    const open = groups.find((group) => !group.querySelector('input[type=radio]:checked, input[aria-checked=true]'));
    const input = open ? open.querySelectorAll('input[type=radio]')[Number(event.key) - 1] : null;
    if (input) { input.click(); event.preventDefault(); }
  } else if (event.key === 'Enter') {
    const button = form.querySelector('.h2h-submit');
    if (button) { button.click(); event.preventDefault(); }
  } else if (event.key === 's' || event.key === 'S') {
    const button = form.querySelector('.h2h-skip');
    if (button) { button.click(); event.preventDefault(); }
  }
});
</script>
"""


def form_schemas(engine: Engine, directory: Any = None) -> dict[str, WorkflowSchema]:
    """The workflows to build forms for, by form key: the bundled YAML files and every campaign's snapshot.

    A campaign validates answers against the schema it was created with, so its form is built from
    that snapshot; campaigns of one schema name created from different versions of the file get one
    form each (``studio.ui.flow.form_key``), equal schemas share one.
    """
    from sqlmodel import select

    from studio.db import read_session
    from studio.models import Campaign
    from studio.ui.flow import form_key

    schemas = list(load_schemas(directory).values())
    with read_session(engine) as session:
        for campaign in session.exec(select(Campaign).order_by(Campaign.id)).all():
            if campaign.schema_snapshot:
                schemas.append(WorkflowSchema.model_validate(campaign.schema_snapshot))
    return {form_key(schema): schema for schema in schemas}


def build_ui(engine: Engine, *, schemas: dict[str, WorkflowSchema] | None = None, limits: Any = None) -> Any:
    """Return the studio's ``gr.Blocks``: a header (who is signed in, sign out), the Annotate tab, and the Curate
    (curators, admins) and Research (researchers, curators, admins) tabs, shown only to those roles.

    Hiding a tab is for people; every handler behind the tabs checks the caller's role again on each call.
    ``schemas`` defaults to :func:`form_schemas`; ``limits`` (a :class:`studio.ui.flow.QueueLimits`)
    to the services' defaults.
    """
    import gradio as gr

    from studio.ui.annotate import AnnotateTab
    from studio.ui.curate import CurateTab
    from studio.ui.flow import DEFAULT_LIMITS
    from studio.ui.research import ResearchTab

    annotate = AnnotateTab(engine, schemas if schemas is not None else form_schemas(engine), limits or DEFAULT_LIMITS)
    curate, research = CurateTab(engine), ResearchTab(engine)
    with gr.Blocks(title="H2HTalk Studio") as blocks:
        with gr.Row(elem_id="h2h-header"):
            gr.Markdown("## H2HTalk Studio")
            who = gr.HTML(elem_id="h2h-who", js_on_load=None)
        with gr.Tabs():
            with gr.Tab("Annotate", elem_id="h2h-tab-annotate"):
                annotate.build()
            with gr.Tab("Curate", elem_id="h2h-tab-curate", visible=False) as curate_tab:
                curate.build()
            with gr.Tab("Research", elem_id="h2h-tab-research", visible=False) as research_tab:
                research.build()
        outputs = [who, annotate.campaign, curate_tab, research_tab, *curate.load_outputs(), *research.load_outputs()]
        blocks.load(_page_loader(engine, annotate, curate, research), outputs=outputs, api_visibility="private")
    return blocks


def _page_loader(engine: Engine, annotate: Any, curate: Any, research: Any) -> Any:
    """The page-load handler: greet the caller, fill the campaign picker, show the tabs their role may use."""
    import gradio as gr

    from studio.app import token_from_request
    from studio.services.errors import ServiceError
    from studio.ui.curate_flow import CURATE_ROLES
    from studio.ui.flow import campaign_choices, current_user
    from studio.ui.research_flow import RESEARCH_ROLES

    hidden = [gr.skip()] * (len(curate.load_outputs()) + len(research.load_outputs()))

    def on_load(request: gr.Request) -> list[Any]:
        token = token_from_request(request)
        try:
            user = current_user(engine, token)
        except ServiceError:
            return [
                '<a href="/login">Sign in</a>',
                gr.Dropdown(choices=[], value=None),
                gr.Tab(visible=False),
                gr.Tab(visible=False),
                *hidden,
            ]
        greeting = (
            f'Signed in as <b id="h2h-username">{escape_text(user.username)}</b> ({escape_text(user.role)}) · '
            '<form method="post" action="/logout" style="display:inline">'
            '<button type="submit" id="h2h-logout">Sign out</button></form>'
        )
        curating, researching = user.role in CURATE_ROLES, user.role in RESEARCH_ROLES
        curate_values = curate.load_values(token) if curating else [gr.skip()] * len(curate.load_outputs())
        research_values = research.load_values(token) if researching else [gr.skip()] * len(research.load_outputs())
        return [
            greeting,
            gr.Dropdown(choices=campaign_choices(engine, token), value=None),
            gr.Tab(visible=curating),
            gr.Tab(visible=researching),
            *curate_values,
            *research_values,
        ]

    return on_load
