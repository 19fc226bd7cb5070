"""Who owns a Gradio page session and who may use which cached file — kept in the store, cached in the process.

Several studio processes on one database (``h2h studio --workers N`` behind a reverse proxy) each run a
:class:`studio.web.sessions.GradioGate`; a grant one records (``ui_grant``, ``studio.services.shared_state``) every
other sees, so a stranger's ``session_hash`` or a file URL is refused on every process, not only on the one that
served the page. What a process learned is cached in front (:class:`Owners`, bounded, least
recently used dropped): a known owner costs no query, and since grants are only ever added (a session's owner never
changes), a cached answer never goes stale. A miss asks the store, in a worker thread.

The files themselves stay in the process's own Gradio cache: sticky routing in the proxy keeps a page on the process
that made its files, so a file grant read on another process answers only "not yours" questions consistently.

Grants older than :data:`GRANT_RETENTION` are pruned (at most once an hour per process): Gradio sweeps its cached
files after an hour, and a page left open that long still works on its own process, whose cache remembers it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from datetime import timedelta

from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from studio.models.types import utc_now
from studio.services import shared_state

#: How long a grant is kept in the store.
GRANT_RETENTION = timedelta(days=7)
PRUNE_EVERY_SECONDS = 3600.0


class Owners:
    """Keys (session hashes, file paths) → the usernames they belong to; at most ``size`` keys, LRU dropped."""

    def __init__(self, size: int = 100_000) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._owners: OrderedDict[str, set[str]] = OrderedDict()

    def claim(self, key: str, username: str) -> bool:
        """Record ``username`` as the owner of ``key`` unless someone else already is; whether ``username`` owns it."""
        with self._lock:
            owners = self._owners.setdefault(key, {username})
            self._owners.move_to_end(key)
            self._trim()
            return username in owners

    def grant(self, key: str, username: str) -> None:
        """``username`` may use ``key`` too (a file handed to a second person with the same content)."""
        with self._lock:
            self._owners.setdefault(key, set()).add(username)
            self._owners.move_to_end(key)
            self._trim()

    def owns(self, key: str, username: str) -> bool:
        with self._lock:
            return username in self._owners.get(key, ())

    def holders(self, key: str) -> set[str]:
        with self._lock:
            return set(self._owners.get(key, ()))

    def _trim(self) -> None:
        while len(self._owners) > self.size:
            self._owners.popitem(last=False)


class SharedOwners:
    """Keys of one ``kind`` → their holders, in the store (``engine``; None: this process only) behind a cache.

    ``claim`` makes the first claimant the owner (a page session); ``grant`` adds a holder (a file handed on).
    """

    def __init__(self, kind: str, engine: Engine | None, size: int = 100_000) -> None:
        self.kind = kind
        self.engine = engine
        self.cache = Owners(size)
        self._pruned_at = float("-inf")

    async def claim(self, key: str, username: str) -> bool:
        """Record ``username`` as the owner of ``key`` unless someone else already is; whether ``username`` owns it."""
        if self.engine is None or self.cache.holders(key):
            return self.cache.claim(key, username)
        owner = await run_in_threadpool(self._claim_in_store, key, username)
        self.cache.claim(key, owner)
        return owner == username

    def _claim_in_store(self, key: str, username: str) -> str:
        assert self.engine is not None
        holders = shared_state.grant_holders(self.engine, kind=self.kind, key=key)
        if not holders:
            self._add(key, username)
            # Two processes may claim at once: both rows stand, the first recorded owns the session everywhere.
            holders = shared_state.grant_holders(self.engine, kind=self.kind, key=key)
        return holders[0]

    async def grant(self, key: str, holder: str) -> None:
        """``holder`` may use ``key`` too."""
        if self.engine is not None and not self.cache.owns(key, holder):
            await run_in_threadpool(self._add, key, holder)
        self.cache.grant(key, holder)

    async def owns(self, key: str, holder: str) -> bool:
        """Whether ``holder`` holds ``key`` (here, or as recorded by any process)."""
        if self.engine is None:
            return self.cache.owns(key, holder)
        if self.cache.owns(key, holder):
            return True
        engine = self.engine
        found = await run_in_threadpool(shared_state.holds, engine, kind=self.kind, key=key, holder=holder)
        if found:
            self.cache.grant(key, holder)
        return found

    async def holders(self, key: str) -> set[str]:
        """Everyone holding ``key``."""
        if self.engine is None:
            return self.cache.holders(key)
        engine = self.engine
        return set(await run_in_threadpool(shared_state.grant_holders, engine, kind=self.kind, key=key))

    def _add(self, key: str, holder: str) -> None:
        assert self.engine is not None
        shared_state.add_grant(self.engine, kind=self.kind, key=key, holder=holder)
        now = time.monotonic()
        if now - self._pruned_at >= PRUNE_EVERY_SECONDS:
            self._pruned_at = now
            shared_state.prune_grants(self.engine, before=utc_now() - GRANT_RETENTION)
