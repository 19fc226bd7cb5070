"""The audit log, read: who did what, when — filtered by actor, action, entity, and paged, newest first.

Every query here and in ``studio.services.curation.list_audit_entries`` takes ``visible``, the entities the caller may
see (``studio.policies.AuditPolicy.visible_entities``; None: all), as a required argument and applies it in SQL, so
totals and pages never count or show an entry the caller may not read.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session, col

from studio.models import AuditLog
from studio.services.curation import Page, only_visible

AUDIT_COLUMNS: tuple[str, ...] = ("id", "at", "actor", "action", "entity", "entity_id", "detail")


def list_audit(
    session: Session,
    *,
    visible: Collection[str] | None,
    actor: str | None = None,
    action: str | None = None,
    entity: str | None = None,
    entity_id: str | None = None,
    page: int = 1,
    page_size: int = 50,
) -> Page:
    """One page of the audit entries of the ``visible`` entities (None: all), newest first. ``actor``, ``entity``
    and ``entity_id`` match exactly; ``action`` matches a prefix (``user.`` finds every account change). Paging
    arrives checked (``studio.services.listing``)."""
    query: Any = select(*(getattr(AuditLog, name) for name in AUDIT_COLUMNS)).order_by(col(AuditLog.id).desc())
    query = only_visible(query, visible)
    if actor:
        query = query.where(col(AuditLog.actor) == actor)
    if action:
        query = query.where(col(AuditLog.action).startswith(action, autoescape=True))
    if entity:
        query = query.where(col(AuditLog.entity) == entity)
    if entity_id:
        query = query.where(col(AuditLog.entity_id) == entity_id)
    total = session.execute(select(func.count()).select_from(query.order_by(None).subquery())).scalar_one()
    rows = [dict(row._mapping) for row in session.execute(query.offset((page - 1) * page_size).limit(page_size))]
    return Page(total=int(total), page=page, page_size=page_size, rows=rows)
