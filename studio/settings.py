"""Studio settings, read from ``H2H_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///h2h-studio.sqlite"


class Settings(BaseSettings):
    """Everything the store, services and API need to know; ``H2H_DATABASE_URL`` etc. override the defaults.

    The README's configuration table lists every field (``tests/test_docs.py`` keeps the two equal).
    """

    model_config = SettingsConfigDict(env_prefix="H2H_", extra="ignore")

    #: SQLAlchemy URL: a SQLite file by default, ``postgresql+psycopg://...`` for teams.
    database_url: str = DEFAULT_DATABASE_URL
    #: How long a handed-out item stays reserved for its annotator.
    lease_seconds: int = Field(default=600, gt=0)
    #: How long a login token stays valid.
    token_ttl_seconds: int = Field(default=7 * 24 * 3600, gt=0)
    #: Client-reported time per item above this is capped (a tab left open overnight is not work).
    max_seconds_spent: float = Field(default=3600.0, gt=0)
    #: Longest free-text answer accepted, in characters, on top of each workflow's own ``max_length`` (both front
    #: doors: ``studio.services.answers`` refuses a longer one with 422 ``answers.<question>: ...``).
    max_text_chars: int = Field(default=4000, gt=0)
    #: Largest request body the REST API reads; a bigger one answers 413 before anything is parsed. Set above
    #: the 5.5 MB bodies tests/studio/web/test_api_hostile_input.py expects a 422 for (answers over max_text_chars).
    max_request_bytes: int = Field(default=8 * 1024 * 1024, gt=0)
    #: How long SQLite waits for the write lock before giving up.
    sqlite_busy_timeout_ms: int = Field(default=30_000, ge=0)
    #: SQLite's ``PRAGMA synchronous``: FULL (default) puts every commit (every acknowledged answer) on disk before it
    #: is acknowledged; NORMAL is faster per commit in WAL mode but a power loss may drop the last acknowledged ones.
    sqlite_synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"
    #: Mark the session cookie ``Secure`` (and send HSTS): True behind HTTPS (also when a proxy ends TLS),
    #: False never; None follows the request's own scheme.
    cookie_secure: bool | None = None
    #: Addresses of the reverse proxies whose ``X-Forwarded-For`` / ``X-Forwarded-Proto`` headers are believed
    #: (comma-separated IPs or networks, ``*`` for any; uvicorn's ``--forwarded-allow-ips``). None: no proxy header
    #: is believed, from any address, loopback included — the login throttle counts the connection's own address.
    forwarded_allow_ips: str | None = None
    #: Largest upload the admin page's scenario import takes (all its files together, in bytes); the studio takes no
    #: other upload. The REST import is bounded by ``max_request_bytes`` as every API body is.
    max_upload_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    #: ``h2h studio``: how long a client may take to send a request's head (request line and headers), counted from
    #: when it connected or its previous answer; then 408 and the connection is closed.
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    #: How long a request body may pause between two of its pieces; then 408 and the connection is closed.
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    #: ``h2h studio``: how many connections one client address may hold open at once; one more is answered 429 and
    #: closed (the reverse proxies of ``forwarded_allow_ips`` are not counted).
    max_connections_per_address: int = Field(default=64, gt=0)
    #: How many requests' handlers one studio process runs at once (anyio's worker threads: the REST routes' and the
    #: pages' handlers, which do the store work); the others wait their turn. More threads than this only contend for
    #: Python's one interpreter lock: at anyio's default of 40 an answering cycle cost 10–15% more CPU on PostgreSQL
    #: (``benchmarks/README.md``, "Worker threads"). At most 60: the store's pool has 40 connections and 20 more
    #: for bursts (``studio.db.POOL_SIZE``), and a handler beyond them would hold its thread waiting for one.
    worker_threads: int = Field(default=16, gt=0, le=60)


def get_settings(**overrides: Any) -> Settings:
    """Return settings from the environment with ``overrides`` (field name → value) applied on top."""
    return Settings(**overrides)
