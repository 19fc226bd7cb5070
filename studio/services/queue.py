"""The work queue (ARCHITECTURE.md "Rules every workflow obeys").

Next item = one still short of its quota (stored answers + live leases < people per item), not yet
answered by this person, in the campaign's ``assignment`` order — ``fill`` (the default): the item closest to its
quota first, so a small team completes items (and has agreement figures) before it starts new ones; ``spread``: the
least-answered first — in a stable order; items this person skipped come
after all others. Handing an item out takes a lease; an expired lease frees its slot; a person with
a live lease gets the same item back. Every function here runs inside the caller's write session
(one transaction). Handing out and skipping run one at a time per person (``studio.db.lock_person``); handing out
locks the item it picks (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, items others are taking or answering passed over)
and inserts the lease only while the item still has a free slot as committed (``lease_rows.claim_lease``), so
nothing campaign-wide serialises annotators. The rows themselves are read and written by
:mod:`studio.services.queue_rows` (SQL Core: this is the answering hot path).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Select, bindparam, select
from sqlmodel import Session, col

from studio.db import lock_campaign, lock_person
from studio.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from studio.models import Campaign, Skip, UserPublic, utc_now
from studio.services.content import DISPLAY_CHARS, build_item_content
from studio.services.lease_rows import claim_lease, lease_row, live_lease_of, release_lease
from studio.services.queue_rows import (
    CampaignState,
    campaign_row,
    candidate_item,
    item_row,
    parsed_schema,
    response_row,
    scenario_row,
    score_row,
)
from studio.services.targets import TARGETS, target_kind
from studio.services.text import is_unicode, safe_text
from studio.workflows import WorkflowSchema

DEFAULT_LEASE_SECONDS = 600
#: How many items handing out tries before it gives up with a ``Conflict`` (each try that fails found an item filled
#: by a commit that landed while it looked; more than a couple in a row means something is wrong).
MAX_CLAIMS = 20
_CAMPAIGNS_BY_NAME = "h2h_campaigns_by_name"  # key in ``Session.info``: the campaigns this session looked up
_CAMPAIGN_STATES = "h2h_campaign_states"  # key in ``Session.info``: the campaign states this session read
Found = TypeVar("Found")


class ItemView(BaseModel):
    """One item as its annotator sees it: never model names, variants, scores or others' answers."""

    item_id: int
    lease_id: str
    expires_at: datetime
    title: str
    instructions: str
    questions: list[dict[str, Any]]
    content: dict[str, Any]


@lru_cache(maxsize=1)
def _campaign_by_name_query() -> Select[Campaign]:
    return select(Campaign).where(col(Campaign.name) == bindparam("name"))


def get_campaign(session: Session, name: str) -> Campaign:
    """The campaign called ``name``; ``NotFound`` otherwise.

    Looked up once per session: a request asks for its campaign several times (checks, then the
    answer as shown), and a second SELECT would hand back the very same identity-mapped object
    anyway. Campaigns are never renamed or deleted, so the name keeps pointing at that row.
    """

    def load(known: str) -> Campaign | None:
        return session.execute(_campaign_by_name_query(), {"name": known}).scalars().first()

    return _once_per_session(session, _CAMPAIGNS_BY_NAME, name, load, still_valid=lambda found: found in session)


def campaign_schema(campaign: Campaign) -> WorkflowSchema:
    """The workflow schema frozen into the campaign when it was created (a frozen model: do not modify it)."""
    return parsed_schema(json.dumps(campaign.schema_snapshot, sort_keys=True))


def campaign_state(
    session: Session, name: str, *, locking_person: int | None = None, holding_item: int | None = None
) -> CampaignState:
    """What answering needs of the campaign called ``name`` (plain columns, parsed schema); ``NotFound`` otherwise.

    Read once per session, like :func:`get_campaign`; the next session reads the status again. Where this is the
    session's first read of it, on PostgreSQL the read may also take person ``locking_person``'s lock, or lock and
    read item ``holding_item`` (:func:`queue_rows.campaign_row`) — for a request that will do so anyway.
    """
    return _once_per_session(
        session,
        _CAMPAIGN_STATES,
        name,
        lambda known: campaign_row(session, known, locking_person=locking_person, holding_item=holding_item),
    )


def _once_per_session(
    session: Session,
    slot: str,
    name: str,
    load: Callable[[str], Found | None],
    still_valid: Callable[[Found], bool] = lambda _found: True,
) -> Found:
    """``load(name)`` the first time this session asks for ``name`` in ``slot``, the same object after that."""
    if not is_unicode(name):
        raise NotFound(f"campaign: no campaign {safe_text(name)!r}")
    known: dict[str, Found] = session.info.setdefault(slot, {})
    found = known.get(name)
    if found is None or not still_valid(found):
        found = load(name)
        if found is None:
            raise NotFound(f"campaign: no campaign {name!r}")
        known[name] = found
    return found


def require_open(campaign: Campaign | CampaignState) -> None:
    """``PermissionDenied`` when the campaign is closed (no next items, submits, skips or revisions then).

    Who may answer a campaign is a policy (``studio.policies.CampaignPolicy.answer``), checked by the use case
    before it calls the queue; that the campaign is open is the queue's own rule, for every caller alike.
    """
    if campaign.status != "open":
        raise PermissionDenied(f"campaign: {campaign.name!r} is closed")


def open_campaign(
    session: Session, name: str, *, whole_campaign: bool = True, user_id: int | None = None
) -> CampaignState:
    """Look the campaign up, check it is open, and take its lock: the whole campaign's (``whole_campaign``: for a
    decision that must see every other decision of the campaign done, e.g. a live session's balanced variant), or
    else person ``user_id``'s (their own requests one at a time)."""
    campaign = campaign_state(session, name)
    require_open(campaign)
    if whole_campaign:
        lock_campaign(session, campaign.id)
    elif user_id is not None:
        lock_person(session, user_id)
    return campaign


def pair_order(campaign: Campaign | CampaignState, user_id: int, item: Any) -> tuple[int, int]:
    """The (A, B) response ids this person sees for a pairwise ``item`` (an ``Item`` or an item row)."""
    first, second = TARGETS["response_pair"].shown_response_ids(
        item=item, pair_seed=campaign.pair_seed, user_id=user_id
    )
    return first, second


def _response_with_score(session: Session, response_id: int) -> tuple[Any, Any]:
    response = response_row(session, response_id)
    if response is None:
        raise NotFound(f"item: response {response_id} is gone")
    return response, score_row(session, response_id)


def item_content(
    session: Session, campaign: CampaignState, item: Any, user_id: int, *, display_chars: int | None = DISPLAY_CHARS
) -> dict[str, Any]:
    """The whitelisted content of ``item`` (an item row) as person ``user_id`` sees it (pairs in their A/B order),
    long texts cut to ``display_chars`` (None: whole; see :func:`studio.services.content.build_item_content`)."""
    scenario = scenario_row(session, item.scenario_id)
    if scenario is None:
        raise NotFound(f"item: scenario {item.scenario_id!r} is gone")
    kind = target_kind(campaign.schema.target)
    response_ids = kind.shown_response_ids(item=item, pair_seed=campaign.pair_seed, user_id=user_id)
    responses = [_response_with_score(session, response_id) for response_id in response_ids]
    reveal = list(campaign.schema.reveal)
    return build_item_content(scenario=scenario, responses=responses, reveal=reveal, display_chars=display_chars)


@dataclass(frozen=True, slots=True)
class Handout:
    """A person's lease on an item, with the campaign state and the item row as the leasing transaction read them
    (the item under the queue lock; the campaign just before it, for the fields that never change: its schema,
    pair seed and quota)."""

    lease_id: str
    user_id: int
    expires_at: datetime
    campaign: CampaignState
    item: Any  # the item row (queue_rows columns)

    @property
    def item_id(self) -> int:
        return int(self.item.id)


def take_lease(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    now: datetime | None = None,
    whole_campaign: bool = False,
) -> Handout | None:
    """The queue decision alone: the caller's live lease, or a new lease on their next item, or None.

    Run it in a write session; :func:`view_of` builds the view from the handout (in that session or any other).
    ``whole_campaign`` holds the campaign's lock until the transaction ends (see :func:`open_campaign`); otherwise
    only the caller's own requests are serialised.
    """
    now = now or utc_now()
    found = open_campaign(session, campaign, whole_campaign=whole_campaign, user_id=user.id)
    live = live_lease_of(session, found.id, user.id, now)
    if live is not None:
        item = item_row(session, live.item_id)
        if item is None:
            raise NotFound(f"lease_id: the item of lease {live.id!r} is gone")
        return Handout(lease_id=live.id, user_id=user.id, expires_at=live.expires_at, campaign=found, item=item)
    lease_id, expires_at = secrets.token_urlsafe(16), now + timedelta(seconds=lease_seconds)
    for _attempt in range(MAX_CLAIMS):
        item = candidate_item(session, found, user.id, now, skipped=False) or candidate_item(
            session, found, user.id, now, skipped=True
        )
        if item is None:
            return None
        claim = {"campaign": found, "item_id": item.id, "user_id": user.id, "issued_at": now}
        if claim_lease(session, id=lease_id, expires_at=expires_at, **claim):
            return Handout(lease_id=lease_id, user_id=user.id, expires_at=expires_at, campaign=found, item=item)
        # Filled (or stopped) by a transaction that committed after this one's candidate query began: the next
        # statement sees that commit, so the same item is not found open again.
    raise Conflict("campaign: the queue is changing too fast to hand out an item; ask for the next item again")


def view_of(session: Session, handout: Handout) -> ItemView:
    """The item of ``handout`` as its holder sees it (whitelisted content, public questions)."""
    schema = handout.campaign.schema
    return ItemView(
        item_id=handout.item.id,
        lease_id=handout.lease_id,
        expires_at=handout.expires_at,
        title=schema.title,
        instructions=schema.instructions,
        questions=schema.public_questions(),
        content=item_content(session, handout.campaign, handout.item, handout.user_id),
    )


def next_item(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    now: datetime | None = None,
) -> ItemView | None:
    """Hand this person their next item under a lease, or None when nothing is left for them.

    A person holding a live lease in the campaign gets that same item back (no hoarding).
    """
    if not target_kind(campaign_state(session, campaign).schema.target).answered_in_queue:
        raise InvalidInput(f"campaign: {campaign!r} is a live-session campaign: open a live session instead")
    handout = take_lease(session, campaign=campaign, user=user, lease_seconds=lease_seconds, now=now)
    return None if handout is None else view_of(session, handout)


def own_lease(session: Session, campaign: CampaignState, user: UserPublic, item_id: int, lease_id: str) -> Any:
    """The caller's lease row ``lease_id`` on ``item_id``: 404 unknown, 403 someone else's, 409 for another item."""
    return checked_own_lease(lease_row(session, lease_id), campaign, user, item_id, lease_id)


def checked_own_lease(lease: Any, campaign: CampaignState, user: UserPublic, item_id: int, lease_id: str) -> Any:
    """:func:`own_lease` on a lease row read already (None: not found)."""
    if lease is None or lease.campaign_id != campaign.id:
        raise NotFound(f"lease_id: no lease {lease_id!r} in campaign {campaign.name!r}")
    if lease.user_id != user.id:
        raise PermissionDenied("lease_id: the lease belongs to someone else")
    if lease.item_id != item_id:
        raise Conflict(f"lease_id: the lease is for another item than item_id {item_id}")
    return lease


def campaign_item(session: Session, campaign: CampaignState, item_id: int, *, locked: bool = False) -> Any:
    """The row of item ``item_id`` of the campaign; ``NotFound`` when the campaign has no such item. ``locked``: read
    as committed and locked until the transaction ends (PostgreSQL, :func:`queue_rows.item_row`)."""
    item = item_row(session, item_id, locked=locked)
    if item is None or item.campaign_id != campaign.id:
        raise NotFound(f"item_id: no item {item_id} in campaign {campaign.name!r}")
    return item


def skip_item(
    session: Session, *, campaign: str, user: UserPublic, item_id: int, lease_id: str, now: datetime | None = None
) -> bool:
    """Release the caller's lease and put the item after all others for them; True when skipped.

    False, with nothing written, when the item was answered on this lease before the skip arrived (Enter then S).
    """
    now = now or utc_now()
    found = open_campaign(session, campaign, whole_campaign=False, user_id=user.id)
    campaign_item(session, found, item_id)
    lease = own_lease(session, found, user, item_id, lease_id)
    if not release_lease(session, lease.id, at=now, outcome="skipped"):  # only if still open: the UPDATE says so
        # Read after the release, which waited for a submit's row lock: on PostgreSQL too it sees what that committed.
        released = lease_row(session, lease_id)
        if released is not None and released.outcome == "answered":
            return False  # the answer was stored first: nothing was skipped, and no Skip row reorders the queue
    skip = (
        session.execute(select(Skip).where(col(Skip.item_id) == item_id, col(Skip.user_id) == user.id))
        .scalars()
        .first()
    )
    if skip is None:
        session.add(Skip(campaign_id=found.id, item_id=item_id, user_id=user.id, skipped_at=now))
    else:
        skip.skipped_at = now
    session.flush()
    return True
