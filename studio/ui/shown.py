"""What the annotate page shows: the item and lease it rendered, written into the page with the item.

The page keeps no "current item" on the server. Every render writes a :class:`ShownItem` into a hidden field of the
page, and every submit and skip sends that field back with the answers: so an event always names the item and lease
the rater saw when they pressed the key, even when an earlier event (a skip pressed 50 ms before) has moved the
server on. The server checks the lease (the caller's own, for that item, still held) and refuses a mismatch — a
lease skipped or answered meanwhile is a ``Conflict`` — instead of storing the answers on an item nobody saw.

The field is not trusted for authorisation: the lease it names must be the caller's (``studio.services.queue``).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from studio.errors import InvalidInput
from studio.models.types import StoredId
from studio.services.queue import ItemView
from studio.workflows import WorkflowSchema


class ShownItem(BaseModel):
    """The item on screen: its campaign, item and lease, the submission id its answers go under, when it was shown.

    ``submission_id`` is drawn once per render: a submit sent twice from one render (a double press, a replayed
    event) is one submission, stored once. ``revising``: the item is one the person answered before, opened to
    revise their answer (no lease; a submit revises, a skip goes back to their next item).
    """

    campaign: str = Field(min_length=1, max_length=256)
    item_id: StoredId
    lease_id: str | None = Field(default=None, min_length=1, max_length=64)
    submission_id: str = Field(min_length=1, max_length=128)
    shown_at: float  # seconds since the epoch (the server's clock when it rendered the item)
    revising: bool = False

    @model_validator(mode="after")
    def _leased_unless_revising(self) -> ShownItem:
        if not self.revising and self.lease_id is None:
            raise ValueError("an item shown to answer names its lease")
        return self

    @classmethod
    def of(cls, campaign: str, view: ItemView) -> ShownItem:
        return cls(
            campaign=campaign,
            item_id=view.item_id,
            lease_id=view.lease_id,
            submission_id=uuid.uuid4().hex,
            shown_at=time.time(),
        )

    @classmethod
    def to_revise(cls, campaign: str, item_id: int) -> ShownItem:
        """An answered item opened to revise the person's answer."""
        return cls(
            campaign=campaign, item_id=item_id, submission_id=uuid.uuid4().hex, shown_at=time.time(), revising=True
        )

    @classmethod
    def from_page(cls, text: Any) -> ShownItem | None:
        """The item a page event names; None when the page shows none; ``InvalidInput`` when the field is garbled."""
        if text is None or (isinstance(text, str) and not text.strip()):
            return None
        try:
            return cls.model_validate_json(text if isinstance(text, str | bytes) else str(text))
        except ValidationError:
            raise InvalidInput("item: the page did not say which item it answers; reload the page") from None

    def to_page(self) -> str:
        return self.model_dump_json()

    def seconds_on_screen(self) -> float:
        """How long the item has been shown (the server caps it by the lease's own clock)."""
        return round(max(0.0, time.time() - self.shown_at), 3)


def form_key(schema: WorkflowSchema) -> str:
    """The key of the form built for ``schema``: its name and a digest of its content.

    Two campaigns of one schema name created from different versions of its YAML file answer different
    questions, so each needs its own form; equal schemas share one.
    """
    digest = hashlib.sha256(schema.model_dump_json().encode("utf-8")).hexdigest()[:12]
    return f"{schema.name}@{digest}"
