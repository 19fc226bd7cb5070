"""The audit log, read: who did what, when — filtered by actor, action, entity, and paged, newest first."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session, col

from studio.models import AuditLog
from studio.services.curation import Page

AUDIT_COLUMNS: tuple[str, ...] = ("id", "at", "actor", "action", "entity", "entity_id", "detail")


def list_audit(
    session: Session,
    *,
    actor: str | None = None,
    action: str | None = None,
    entity: str | None = None,
    entity_id: str | None = None,
    page: int = 1,
    page_size: int = 50,
) -> Page:
    """One page of audit entries, newest first. ``actor``, ``entity`` and ``entity_id`` match exactly; ``action``
    matches a prefix (``user.`` finds every account change). Paging arrives checked (``studio.usecases.queries``)."""
    query: Any = select(*(getattr(AuditLog, name) for name in AUDIT_COLUMNS)).order_by(col(AuditLog.id).desc())
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
