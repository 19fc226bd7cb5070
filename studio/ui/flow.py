"""The annotate page's flow as plain functions: who is calling, which campaigns, next item, submit, skip.

The Gradio wiring in :mod:`studio.ui.annotate` calls these and only moves their results into
components. Every function re-resolves the caller from the session token on each call and goes
through the services, which check the caller's role against the campaign; nothing the browser
holds (hidden components, state) is trusted for authorisation.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from studio.ui.render import render_item, render_message, render_persona, render_progress


@dataclass(frozen=True)
class ItemState:
    """The item on screen, kept server-side (``gr.State``) between the show and the submit."""

    campaign: str
    form_key: str
    item_id: int
    lease_id: str
    submission_id: str
    shown_at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class QueueLimits:
    """The store's settings the flow passes on to the services (see :class:`studio.settings.Settings`)."""

    lease_seconds: int = 600
    max_seconds_spent: float = 3600.0


DEFAULT_LIMITS = QueueLimits()


@dataclass(frozen=True)
class Panel:
    """What the annotate page shows after a call; ``form_key`` picks the form (None: no form)."""

    state: ItemState | None
    chat_html: str
    persona_html: str
    progress_html: str
    message_html: str
    form_key: str | None


def form_key(schema: Any) -> str:
    """The key of the form built for ``schema`` (a ``WorkflowSchema``): its name and a digest of its content.

    Two campaigns of one schema name created from different versions of its YAML file answer different
    questions, so each needs its own form; equal schemas share one.
    """
    digest = hashlib.sha256(schema.model_dump_json().encode("utf-8")).hexdigest()[:12]
    return f"{schema.name}@{digest}"


def current_user(engine: Engine, token: str | None) -> Any:
    """Return the caller (``UserPublic``) for ``token``; ``NotAuthenticated`` when it is missing or dead."""
    from studio.db import read_session
    from studio.services.auth import require_role, user_for_token

    user = None
    if token:
        with read_session(engine) as session:
            user = user_for_token(session, token=token)
    return require_role(user)


def campaign_choices(engine: Engine, token: str | None) -> list[tuple[str, str]]:
    """The open campaigns the caller's role may answer, as (label, name) pairs for a dropdown."""
    from studio.db import read_session
    from studio.services.campaigns import list_campaigns

    user = current_user(engine, token)
    with read_session(engine) as session:
        campaigns = list_campaigns(session, user=user)
    return [
        (f"{campaign.name} ({campaign.schema_name})", campaign.name)
        for campaign in campaigns
        if campaign.status == "open" and user.role in campaign.eligible_roles
    ]


def _progress_html(engine: Engine, campaign: str, user: Any) -> str:
    from studio.db import read_session
    from studio.services.answers import progress

    with read_session(engine) as session:
        counts = progress(session, campaign=campaign, user=user)
    overall = counts["overall"]
    return render_progress(
        mine=counts["mine"]["answers"],
        answers=overall["answers"],
        items=overall["items"],
        complete_items=overall["complete_items"],
    )


def show_next(
    engine: Engine,
    token: str | None,
    campaign: str | None,
    *,
    note: str | None = None,
    limits: QueueLimits = DEFAULT_LIMITS,
) -> Panel:
    """Lease the caller's next item of the campaign named ``campaign`` and return the panel that shows it.

    ``note`` (e.g. "Saved.") is shown above the item. With no campaign chosen, or none left to do,
    the panel carries no state and no form.
    """
    from studio.db import write_session
    from studio.services.queue import campaign_state, next_item

    user = current_user(engine, token)
    if not campaign:
        return Panel(None, "", "", "", render_message("Choose a campaign to start."), None)
    with write_session(engine) as session:
        view = next_item(session, campaign=campaign, user=user, lease_seconds=limits.lease_seconds)
        form = form_key(campaign_state(session, campaign).schema)
    progress = _progress_html(engine, campaign, user)
    prefix = f"{note} " if note else ""
    if view is None:
        message = render_message(prefix + "No more items for you in this campaign — thank you!", kind="done")
        return Panel(None, "", "", progress, message, None)
    content = dict(view.content)
    state = ItemState(
        campaign=campaign,
        form_key=form,
        item_id=view.item_id,
        lease_id=view.lease_id,
        submission_id=uuid.uuid4().hex,
    )
    message = render_message(prefix + "Answer the questions below, then submit.")
    return Panel(state, render_item(content), render_persona(content.get("persona")), progress, message, state.form_key)


def submit(
    engine: Engine,
    token: str | None,
    state: ItemState | None,
    answers: dict[str, Any],
    *,
    limits: QueueLimits = DEFAULT_LIMITS,
) -> Panel:
    """Store the caller's answers to the item on screen (once per submission id), then show the next item.

    The services validate the answers against the campaign's schema and refuse a caller whose role
    may not answer it; such errors propagate as ``ServiceError`` for the page to show.
    """
    from studio.db import write_session
    from studio.services.answers import submit_answer

    user = current_user(engine, token)
    if state is None:
        return show_next(engine, token, None)
    seconds = round(time.monotonic() - state.shown_at, 3)
    with write_session(engine) as session:
        submit_answer(
            session,
            campaign=state.campaign,
            user=user,
            item_id=state.item_id,
            lease_id=state.lease_id,
            submission_id=state.submission_id,
            answers=answers,
            seconds_spent=seconds,
            max_seconds_spent=limits.max_seconds_spent,
        )
    return show_next(engine, token, state.campaign, note="Saved.", limits=limits)


def skip(engine: Engine, token: str | None, state: ItemState | None, *, limits: QueueLimits = DEFAULT_LIMITS) -> Panel:
    """Skip the item on screen (it comes last for this person) and show the next one."""
    from studio.db import write_session
    from studio.services.queue import skip_item

    user = current_user(engine, token)
    if state is None:
        return show_next(engine, token, None)
    with write_session(engine) as session:
        skip_item(session, campaign=state.campaign, user=user, item_id=state.item_id, lease_id=state.lease_id)
    return show_next(engine, token, state.campaign, note="Skipped.", limits=limits)
