"""The Admin tab: people and their accounts, the audit log, campaigns, scenario imports — layout and wiring.

The tab (and each part of it) is shown only to those the policies allow — admins see all of it, curators only the
import — but that is for people: every handler opens the caller's context (one session per event) and calls
``studio.usecases.admin`` / ``imports``, which authorise on every call, so a crafted call from anyone else is refused
(``gr.Error``) and changes nothing. Tables are text (``gr.Dataframe``, ``datatype="str"``), messages escaped HTML.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

from studio.policies import ROLES, AdminPolicy, is_allowed
from studio.ui import admin_views as views
from studio.ui.admin_campaigns import CampaignsPanel
from studio.ui.admin_imports import ImportsPanel
from studio.ui.calls import OpenContext, reading, says_refusals, writing
from studio.ui.tables import table
from studio.usecases import admin

PRIVATE: dict[str, Any] = {"api_visibility": "private"}


class AdminTab:
    """The components of the Admin tab and the handlers that fill them."""

    def __init__(self, open_context: OpenContext, upload_limit_bytes: int) -> None:
        self.open_context = open_context
        self.campaigns = CampaignsPanel(open_context)
        self.imports = ImportsPanel(open_context, upload_limit_bytes)

    def build(self) -> None:
        """Create the Admin tab (hidden until the page loader shows it) inside the current ``gr.Tabs``."""
        import gradio as gr

        with gr.Tab("Admin", elem_id="h2h-tab-admin", visible=False) as self.tab, gr.Tabs() as self.parts:
            self.users_tab = gr.Tab("Users", id="users", elem_id="h2h-admin-users", visible=False)
            with self.users_tab:
                self._build_users()
            self.audit_tab = gr.Tab("Audit log", id="audit", elem_id="h2h-admin-audit", visible=False)
            with self.audit_tab:
                self._build_audit()
            self.campaigns_tab = gr.Tab("Campaigns", id="campaigns", elem_id="h2h-admin-campaigns", visible=False)
            with self.campaigns_tab:
                self.campaigns.build()
            self.imports_tab = gr.Tab("Import scenarios", id="imports", elem_id="h2h-admin-imports", visible=False)
            with self.imports_tab:
                self.imports.build()
        self._wire_users()
        self.campaigns.wire()
        self.imports.wire()

    # ---------------------------------------------------------------- users and the audit log

    def _build_users(self) -> None:
        import gradio as gr

        # The forms first and the people under them: what a form says (a generated password above all) stays on
        # the screen beside its button however long the list grows.
        with gr.Group():
            gr.Markdown("**Add a person**")
            with gr.Row():
                self.new_username = gr.Textbox(label="Username", elem_id="h2h-new-username")
                self.new_role = gr.Dropdown(list(ROLES), value=ROLES[0], label="Role", elem_id="h2h-new-role")
                self.new_password = gr.Textbox(
                    label="Password (empty: generate one)", type="password", elem_id="h2h-new-password"
                )
                self.add_user = gr.Button("Add", variant="primary", elem_id="h2h-add-user")
            # What adding said, and a generated password, right under the form (where the admin is looking).
            self.add_message = gr.HTML(elem_id="h2h-add-message", js_on_load=None)
            self.new_one_time = one_time_password("h2h-one-time-password")
        with gr.Group():
            gr.Markdown("**Change an account**")
            with gr.Row():
                self.account = gr.Textbox(label="Username", elem_id="h2h-account-username")
                self.account_role = gr.Dropdown(list(ROLES), value=None, label="New role", elem_id="h2h-account-role")
                self.change_role = gr.Button("Change role", elem_id="h2h-change-role")
            with gr.Row():
                self.deactivate = gr.Button("Deactivate", variant="stop", elem_id="h2h-deactivate")
                self.activate = gr.Button("Reactivate", elem_id="h2h-activate")
                self.revoke = gr.Button("Sign out everywhere", elem_id="h2h-revoke-sessions")
            with gr.Row():
                self.reset_text = gr.Textbox(
                    label="New password (empty: generate one)", type="password", elem_id="h2h-reset-text"
                )
                self.reset = gr.Button("Reset password", elem_id="h2h-reset-password")
            self.users_message = gr.HTML(elem_id="h2h-users-message", js_on_load=None)
            self.reset_one_time = one_time_password("h2h-reset-one-time-password")
        self.users_refresh = gr.Button("Refresh the list", elem_id="h2h-users-refresh")
        self.users = table("People (select a row to fill in the name above)", "h2h-users", views.USER_COLUMNS)

    def _build_audit(self) -> None:
        import gradio as gr

        with gr.Row():
            self.audit_actor = gr.Textbox(label="Who (actor)", elem_id="h2h-audit-actor")
            self.audit_action = gr.Textbox(label="Action starts with (e.g. user.)", elem_id="h2h-audit-action")
            self.audit_entity = gr.Dropdown(
                [("any", ""), "user", "campaign", "scenario", "import", "dataset_version"],
                value="",
                label="Entity",
                elem_id="h2h-audit-entity",
            )
            self.audit_entity_id = gr.Textbox(label="Entity id", elem_id="h2h-audit-entity-id")
            self.audit_page = gr.Number(label="Page", value=1, precision=0, minimum=1, elem_id="h2h-audit-page")
            self.audit_search = gr.Button("Search", variant="primary", elem_id="h2h-audit-search")
        self.audit_summary = gr.Markdown(elem_id="h2h-audit-summary")
        self.audit = table("Audit log (newest first)", "h2h-admin-audit-log", views.AUDIT_COLUMNS)

    def _wire_users(self) -> None:
        self.users_refresh.click(self._on_users(), outputs=[self.users], **PRIVATE)
        self.users.select(self._on_pick(), outputs=[self.account], **PRIVATE)
        # The typed password is emptied once it is set (not left ready for the next person).
        self.add_user.click(
            self._on_add(),
            inputs=[self.new_username, self.new_role, self.new_password],
            outputs=[self.add_message, self.new_one_time, self.users, self.new_password, self.reset_one_time],
            **PRIVATE,
        )
        shown = [self.users_message, self.reset_one_time, self.users]
        for button, change in (
            (self.change_role, "role"),
            (self.deactivate, "deactivate"),
            (self.activate, "activate"),
            (self.revoke, "revoke"),
            (self.reset, "reset"),
        ):
            inputs = [self.account, self.account_role if change == "role" else self.reset_text]
            outputs = [*shown, self.reset_text, self.new_one_time]
            button.click(self._on_account(change), inputs=inputs, outputs=outputs, trigger_mode="once", **PRIVATE)
        filters = [self.audit_actor, self.audit_action, self.audit_entity, self.audit_entity_id, self.audit_page]
        self.audit_search.click(
            self._on_audit(), inputs=filters, outputs=[self.audit, self.audit_summary, self.audit_page], **PRIVATE
        )

    def _on_users(self) -> Any:
        import gradio as gr

        def on_users(request: gr.Request) -> Any:
            with reading(self.open_context, request) as (session, caller):
                return views.users_frame(admin.list_users(session, caller=caller))

        return on_users

    def _on_pick(self) -> Any:
        import gradio as gr

        def on_pick(event: gr.SelectData, request: gr.Request) -> str:
            # The row's name as shown (hidden characters written out) back to the name as stored — matched by the
            # name, never by the row's position, which a person added meanwhile would shift.
            shown = str((event.row_value or [""])[0])
            with reading(self.open_context, request) as (session, caller):
                matches = [row.username for row in admin.list_users(session, caller=caller) if row.shown_name == shown]
            return matches[0] if len(matches) == 1 else ""

        return on_pick

    def _on_add(self) -> Any:
        import gradio as gr

        @says_refusals(5)
        def on_add(username: str | None, role: str | None, password: str | None, request: gr.Request) -> list[Any]:
            with writing(self.open_context, request) as (session, caller):
                outcome = admin.add_user(
                    session, caller=caller, username=username or "", role=role or "", password=password
                )
                listed = views.users_frame(admin.list_users(session, caller=caller))
            message, shown = views.password_message(outcome, f"Added {outcome.user.username} ({outcome.user.role})")
            # Only the password just generated is on the page: the other form's one goes.
            return [
                message,
                gr.Textbox(value=shown or "", visible=shown is not None),
                listed,
                "",
                gr.Textbox(value="", visible=False),
            ]

        return on_add

    def _account_change(self, session: Any, caller: Any, change: str, name: str, value: Any) -> tuple[str, Any]:
        """Run one account change; the message, and the generated password (or None)."""
        if change == "role":
            user = admin.change_role(session, caller=caller, username=name, role=value or "")
            return views.message_html(f"{user.username} is now {user.role}."), None
        if change in ("deactivate", "activate"):
            user = admin.set_active(session, caller=caller, username=name, active=change == "activate")
            state = "active" if user.is_active else "deactivated: their sessions ended, they cannot sign in"
            return views.message_html(f"{user.username} is {state}."), None
        if change == "revoke":
            revoked = admin.revoke_sessions(session, caller=caller, username=name)
            return views.message_html(f"{name}: {revoked} session(s) ended."), None
        outcome = admin.reset_password(session, caller=caller, username=name, password=value)
        return views.password_message(outcome, f"New password set for {outcome.user.username}; their sessions ended")

    def _on_account(self, change: str) -> Any:
        import gradio as gr

        @says_refusals(5)
        def on_account(username: str | None, value: Any, request: gr.Request) -> list[Any]:
            with writing(self.open_context, request) as (session, caller):
                message, shown = self._account_change(session, caller, change, username or "", value)
                listed = views.users_frame(admin.list_users(session, caller=caller))
            typed = "" if change == "reset" else gr.skip()
            return [
                message,
                gr.Textbox(value=shown or "", visible=shown is not None),
                listed,
                typed,
                gr.Textbox(value="", visible=False),
            ]

        return on_account

    def _on_audit(self) -> Any:
        import gradio as gr

        def on_audit(
            actor: str | None,
            action: str | None,
            entity: str | None,
            entity_id: str | None,
            page: float | None,
            request: gr.Request,
        ) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                found = admin.audit_log(
                    session,
                    caller=caller,
                    actor=actor,
                    action=action,
                    entity=entity,
                    entity_id=entity_id,
                    page=max(1, int(page or 1)),
                    page_size=50,
                )
            shown = views.audit_page(found)
            return [shown.frame, shown.summary, shown.page]

        return on_audit

    # ---------------------------------------------------------------- the page loader's part

    def load_outputs(self) -> list[Any]:
        """The components :meth:`load_values` fills."""
        tabs = [self.tab, self.users_tab, self.audit_tab, self.campaigns_tab, self.imports_tab]
        return [*tabs, self.parts, self.users, *self.campaigns.load_outputs()]

    def hidden_values(self) -> list[Any]:
        """The tab and its parts hidden, nothing filled (no caller, or one allowed none of it)."""
        import gradio as gr

        return [gr.Tab(visible=False)] * 5 + [gr.skip()] * (len(self.load_outputs()) - 5)  # the 5 tabs, then values

    def load_values(self, session: Any, caller: Any) -> list[Any]:
        """Which parts of the tab the caller sees, and their tables and choices, in the page loader's session."""
        import gradio as gr

        users = is_allowed(caller, AdminPolicy.manage_users())
        audit = is_allowed(caller, AdminPolicy.read_audit())
        running = is_allowed(caller, AdminPolicy.manage_campaigns())
        importing = is_allowed(caller, AdminPolicy.import_scenarios())
        if not (users or audit or running or importing):
            return self.hidden_values()
        parts = {"users": users, "audit": audit, "campaigns": running, "imports": importing}
        tabs = [gr.Tab(visible=True), *(gr.Tab(visible=shown) for shown in parts.values())]
        first = gr.Tabs(selected=next(part for part, shown in parts.items() if shown))  # the first part they may use
        listed = views.users_frame(admin.list_users(session, caller=caller)) if users else gr.skip()
        campaigns = self.campaigns.load_values(session, caller) if running else [gr.skip()] * 7
        return [*tabs, first, listed, *campaigns]


def one_time_password(elem_id: str) -> Any:
    """Where a generated password is shown, once, with a copy button: hidden until there is one."""
    import gradio as gr

    return gr.Textbox(
        label="Generated password (shown once: copy it now)",
        interactive=False,
        visible=False,
        buttons=["copy"],
        elem_id=elem_id,
    )
