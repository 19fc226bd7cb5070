"""The rows several studio processes share: failed sign-ins (``login_failure``) and UI grants (``ui_grant``).

Plain reads and writes, each its own short transaction; the rules built on them live in
``studio.web.security.StoreLoginThrottle`` (the throttle) and ``studio.web.grants.SharedOwners`` (page sessions and
files). Keys are hashed here (:func:`digest`), so callers pass what the key stands for.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import Engine, delete, func
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from studio.db import read_session, write_session
from studio.models.grants import LoginFailure, UiGrant


def digest(key: str) -> str:
    """The stored form of a key: its sha256 (hex); any string, lone surrogates included."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def recent_failures(engine: Engine, *, key: str, since: float, limit: int) -> list[float]:
    """The times (ascending) of the latest ``limit`` failures of ``key`` after ``since``."""
    with read_session(engine) as session:
        rows = session.exec(
            select(col(LoginFailure.failed_at))
            .where(col(LoginFailure.key) == digest(key), col(LoginFailure.failed_at) > since)
            .order_by(col(LoginFailure.failed_at).desc())
            .limit(limit)
        ).all()
    return sorted(rows)


def add_failures(engine: Engine, *, keys: list[str], at: float, prune_before: float | None = None) -> None:
    """Count one failure at ``at`` against each of ``keys``; drop every failure at or before ``prune_before``."""
    with write_session(engine) as session:
        if prune_before is not None:
            session.execute(delete(LoginFailure).where(col(LoginFailure.failed_at) <= prune_before))
        session.add_all([LoginFailure(key=digest(key), failed_at=at) for key in keys])


def forget_failures(engine: Engine, *, key: str) -> None:
    """Drop every failure counted against ``key``."""
    with write_session(engine) as session:
        session.execute(delete(LoginFailure).where(col(LoginFailure.key) == digest(key)))


def count_failures(engine: Engine) -> int:
    """How many failure rows the store holds (all keys)."""
    with read_session(engine) as session:
        return int(session.exec(select(func.count()).select_from(LoginFailure)).one())


def grant_holders(engine: Engine, *, kind: str, key: str) -> list[str]:
    """Who holds ``key`` of ``kind``, first granted first."""
    with read_session(engine) as session:
        return list(
            session.exec(
                select(col(UiGrant.holder))
                .where(col(UiGrant.kind) == kind, col(UiGrant.key) == digest(key))
                .order_by(col(UiGrant.id))
            ).all()
        )


def holds(engine: Engine, *, kind: str, key: str, holder: str) -> bool:
    """Whether ``holder`` holds ``key`` of ``kind``."""
    with read_session(engine) as session:
        found = session.exec(
            select(col(UiGrant.id)).where(
                col(UiGrant.kind) == kind, col(UiGrant.key) == digest(key), col(UiGrant.holder) == holder
            )
        ).first()
    return found is not None


def add_grant(engine: Engine, *, kind: str, key: str, holder: str) -> None:
    """Record that ``holder`` holds ``key`` of ``kind``; nothing when it already does (another process may have
    recorded it a moment before: the unique constraint decides)."""
    try:
        with write_session(engine) as session:
            session.add(UiGrant(kind=kind, key=digest(key), holder=holder))
    except IntegrityError:
        pass


def prune_grants(engine: Engine, *, before: datetime) -> int:
    """Drop the grants made before ``before``; how many."""
    with write_session(engine) as session:
        result = session.execute(delete(UiGrant).where(col(UiGrant.created_at) < before))
    return int(getattr(result, "rowcount", 0) or 0)
