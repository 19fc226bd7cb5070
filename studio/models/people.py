"""People, login tokens and the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from studio.models.types import UTCDateTime, utc_now
from studio.policies import ROLES as ROLES  # re-exported: the roles are written once, in studio.policies
from studio.policies import Role as Role


class UserBase(SQLModel):
    username: str = Field(min_length=1, max_length=64, index=True, unique=True)
    role: str = Field(max_length=16)
    is_active: bool = True


class UserPublic(UserBase):
    id: int
    created_at: datetime


class User(UserBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    password_hash: str
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class AuthTokenBase(SQLModel):
    user_id: int = Field(foreign_key="user.id", index=True)
    expires_at: datetime = Field(sa_type=UTCDateTime)


class AuthToken(AuthTokenBase, table=True):
    """A login token; only its sha256 is stored, so a database leak gives away no live token."""

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class AuditLogBase(SQLModel):
    actor: str = Field(max_length=64)
    action: str = Field(max_length=64, index=True)
    entity: str = Field(max_length=32)
    entity_id: str = Field(max_length=256)
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class AuditLogPublic(AuditLogBase):
    id: int
    at: datetime


class AuditLog(AuditLogBase, table=True):
    __tablename__ = "audit_log"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
