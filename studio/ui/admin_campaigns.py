"""The Admin tab's Campaigns part: every campaign's progress, creating one over a target filter, closing and
reopening, and saying which roles may work on it. Handlers call ``studio.usecases.admin``, which authorises each call
(``AdminPolicy.manage_campaigns``)."""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

from studio.policies import ROLES
from studio.services.campaigns import ASSIGNMENTS
from studio.ui import admin_views as views
from studio.ui.calls import OpenContext, reading, says_refusals, writing
from studio.ui.tables import labelled, table
from studio.usecases import admin

PRIVATE: dict[str, Any] = {"api_visibility": "private"}


class CampaignsPanel:
    """The components of the Campaigns part and the handlers that fill them."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context

    def build(self) -> None:
        import gradio as gr

        self.campaigns_refresh = gr.Button("Refresh", elem_id="h2h-campaigns-refresh")
        self.campaigns = table("Campaigns and their progress", "h2h-campaigns", views.CAMPAIGN_COLUMNS)
        with gr.Group():
            gr.Markdown("**Create a campaign**")
            with gr.Row():
                self.campaign_name = gr.Textbox(label="Name", elem_id="h2h-campaign-name")
                self.campaign_schema = gr.Dropdown([], label="Workflow", elem_id="h2h-campaign-schema")
                # A text box, not gr.Number: a Number starts at 0 and sends 0 for "empty", which no campaign takes.
                self.campaign_people = gr.Textbox(
                    label="People per item (empty: the workflow's)",
                    placeholder="the workflow's",
                    elem_id="h2h-campaign-people",
                )
            with gr.Row():
                self.subtasks = gr.Dropdown([], multiselect=True, label="Subtasks (any)", elem_id="h2h-subtasks")
                self.languages = gr.Dropdown([], multiselect=True, label="Languages (any)", elem_id="h2h-languages")
                self.models = gr.Dropdown([], multiselect=True, label="Models (any)", elem_id="h2h-models")
                self.variants = gr.Dropdown([], multiselect=True, label="Variants (any)", elem_id="h2h-variants")
            with gr.Row():
                self.high_risk = gr.Checkbox(label="High-risk scenarios only", elem_id="h2h-high-risk")
                self.flagged = gr.Checkbox(label="Flagged for adjudication only", elem_id="h2h-flagged-only")
                self.new_roles = gr.CheckboxGroup(
                    list(ROLES), label="Who may work on it (none ticked: the workflow's roles)", elem_id="h2h-new-roles"
                )
            self.assignment = gr.Radio(
                [(f"{name}: {words}", name) for name, words in ASSIGNMENTS.items()],
                value="fill",
                label="Queue order",
                elem_id="h2h-assignment",
            )
            self.create = gr.Button("Create campaign", variant="primary", elem_id="h2h-create-campaign")
        with gr.Group():
            gr.Markdown("**Manage a campaign**")
            with gr.Row():
                self.managed = gr.Dropdown([], label="Campaign", elem_id="h2h-managed-campaign")
                self.close = gr.Button("Close", variant="stop", elem_id="h2h-close-campaign")
                self.reopen = gr.Button("Reopen", elem_id="h2h-open-campaign")
            # What closing now does to the items below quota, said before the admin closes (filled on choosing).
            self.quota = gr.HTML(elem_id="h2h-closing-quota", js_on_load=None)
            self.decide_below = gr.Checkbox(
                label="When closing: decide the items below quota on the answers they have (recorded; "
                "unticked, they stay undecided)",
                value=False,
                elem_id="h2h-decide-below-quota",
            )
            with gr.Row():
                self.assigned = gr.CheckboxGroup(list(ROLES), label="Who may work on it", elem_id="h2h-assign-roles")
                self.assign = gr.Button("Save who may work on it", elem_id="h2h-assign")
        self.campaigns_message = gr.HTML(elem_id="h2h-campaigns-message", js_on_load=None)

    def wire(self) -> None:
        listed = [self.campaigns, self.managed]
        self.campaigns_refresh.click(self._on_campaigns(), outputs=listed, **PRIVATE)
        spec = [
            self.campaign_name,
            self.campaign_schema,
            self.campaign_people,
            self.subtasks,
            self.languages,
            self.models,
            self.variants,
            self.high_risk,
            self.flagged,
            self.new_roles,
            self.assignment,
        ]
        shown = [self.campaigns_message, *listed]
        self.create.click(self._on_create(), inputs=spec, outputs=shown, trigger_mode="once", **PRIVATE)
        for button, status in ((self.close, "closed"), (self.reopen, "open")):
            button.click(self._on_status(status), inputs=[self.managed, self.decide_below], outputs=shown, **PRIVATE)
        self.assign.click(self._on_assign(), inputs=[self.managed, self.assigned], outputs=shown, **PRIVATE)
        self.managed.change(self._on_managed(), inputs=[self.managed], outputs=[self.assigned, self.quota], **PRIVATE)

    def values(self, session: Any, caller: Any, chosen: str | None = None) -> list[Any]:
        import gradio as gr

        overviews = admin.campaign_overviews(session, caller=caller)
        names = [overview.name for overview in overviews]
        kept = chosen if chosen in names else None
        return [views.campaigns_frame(overviews), gr.Dropdown(choices=labelled(names), value=kept)]

    def _on_campaigns(self) -> Any:
        import gradio as gr

        def on_campaigns(request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                return self.values(session, caller)

        return on_campaigns

    def _on_create(self) -> Any:
        import gradio as gr

        @says_refusals(3)
        def on_create(
            name: str | None,
            schema: str | None,
            people: str | float | None,
            subtasks: list[str] | None,
            languages: list[str] | None,
            models: list[str] | None,
            variants: list[str] | None,
            high_risk: bool,
            flagged: bool,
            roles: list[str] | None,
            assignment: str | None,
            request: gr.Request,
        ) -> list[Any]:
            with writing(self.open_context, request) as (session, caller):
                created = admin.create_campaign(
                    session,
                    caller=caller,
                    name=name,
                    schema_name=schema or "",
                    people_per_item=views.people_per_item(people),
                    subtasks=subtasks,
                    languages=languages,
                    models=models,
                    variants=variants,
                    high_risk_only=bool(high_risk),
                    flagged_only=bool(flagged),
                    roles=roles,
                    assignment=assignment,
                )
                values = self.values(session, caller, created.name)
            message = (
                f"Created {created.name} ({created.schema_name}, {created.people_per_item} per item, "
                f"queue: {created.assignment})."
            )
            return [views.message_html(message), *values]

        return on_create

    def _on_status(self, status: str) -> Any:
        import gradio as gr

        @says_refusals(3)
        def on_status(name: str | None, decide_below: bool, request: gr.Request) -> list[Any]:
            with writing(self.open_context, request) as (session, caller):
                changed = admin.set_campaign_status(
                    session,
                    caller=caller,
                    name=name or "",
                    status=status,
                    decide_below_quota=bool(decide_below) and status == "closed",
                )
                values = self.values(session, caller, changed.name)
            return [views.message_html(f"{changed.name} is {changed.status}. {changed.message}"), *values]

        return on_status

    def _on_assign(self) -> Any:
        import gradio as gr

        @says_refusals(3)
        def on_assign(name: str | None, roles: list[str] | None, request: gr.Request) -> list[Any]:
            with writing(self.open_context, request) as (session, caller):
                changed = admin.assign_roles(session, caller=caller, name=name or "", roles=roles)
                values = self.values(session, caller, changed.name)
            who = ", ".join(changed.eligible_roles)
            return [views.message_html(f"{changed.name}: {who} may work on it."), *values]

        return on_assign

    def _on_managed(self) -> Any:
        import gradio as gr

        def on_managed(name: str | None, request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                overviews = admin.campaign_overviews(session, caller=caller)
                chosen = next((overview for overview in overviews if overview.name == name), None)
                if chosen is None:
                    return [[], ""]
                quota = admin.closing_preview(session, caller=caller, name=chosen.name)
            said = views.message_html(views.closing_preview(chosen.name, quota), kind="info")
            return [[role for role in ROLES if role in chosen.eligible_roles], said]

        return on_managed

    def load_outputs(self) -> list[Any]:
        """The components :meth:`load_values` fills."""
        return [
            self.campaigns,
            self.managed,
            self.campaign_schema,
            self.subtasks,
            self.languages,
            self.models,
            self.variants,
        ]

    def load_values(self, session: Any, caller: Any) -> list[Any]:
        """The campaigns table and the create form's choices (workflows, subtasks, languages, models, variants)."""
        import gradio as gr

        choices = admin.target_choices(session, caller=caller)
        workflows = sorted(admin.workflows(caller=caller))
        return [
            *self.values(session, caller),
            gr.Dropdown(choices=workflows, value=workflows[0] if workflows else None),
            *(gr.Dropdown(choices=labelled(values), value=[]) for values in (choices.subtasks, choices.languages)),
            *(gr.Dropdown(choices=labelled(values), value=[]) for values in (choices.models, choices.variants)),
        ]
