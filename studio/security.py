"""Web-facing protections of the studio: security headers, a same-origin check on writes, a login throttle.

:class:`SecurityHeadersMiddleware` is a plain ASGI middleware: it adds ``X-Content-Type-Options``,
``X-Frame-Options``, ``Referrer-Policy``, ``Cross-Origin-Opener-Policy`` and a Content-Security-Policy
to every HTTP response that does not already set them. The default policy is one Gradio's UI runs
under (checked in Chromium by ``tests/browser/test_security_ui.py``): Gradio needs inline scripts and
styles and ``eval``-style compilation, so the policy's value is in what it forbids — loading or
sending anything to another origin (``connect-src``/``img-src``/``form-action``), plugins, ``<base>``
rewriting, and framing by other sites (clickjacking).

:class:`SameOriginMiddleware` refuses a POST/PUT/DELETE whose ``Origin`` names another site: Gradio's
event routes act on the session cookie and have no CSRF token of their own.

:class:`LoginThrottle` counts failed sign-ins in a sliding window per (username, address) pair, per
address and per username, and refuses further attempts — before the password is hashed — while any
count is over its limit. Counts live in the process: each studio replica throttles on its own, which
bounds guessing per replica without a shared store.

The address is the connection's own unless ``Settings.forwarded_allow_ips`` names the reverse proxies to believe:
``studio.web.app.create_app`` then adds uvicorn's ``ProxyHeadersMiddleware``, which takes the client's address (and
scheme) from ``X-Forwarded-For`` / ``X-Forwarded-Proto`` of requests from those addresses only. ``h2h studio`` runs
uvicorn with its own proxy-header handling off: uvicorn's default believes these headers from loopback, so anyone on
the machine (or a local proxy passing client headers on) could name a new address with each guess.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from studio.services.usernames import throttle_key

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

T = TypeVar("T")

#: A Content-Security-Policy the Gradio UI works under (see the module docstring for why it allows inline code).
DEFAULT_CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "media-src 'self' data: blob:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def security_headers(*, csp: str = DEFAULT_CSP, hsts: bool = False) -> dict[str, str]:
    """The headers :class:`SecurityHeadersMiddleware` adds; ``hsts`` adds Strict-Transport-Security (HTTPS only)."""
    headers = {
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Content-Security-Policy": csp,
    }
    if hsts:
        headers["Strict-Transport-Security"] = "max-age=31536000; includeSubDomains"
    return headers


class SecurityHeadersMiddleware:
    """ASGI middleware adding ``headers`` (default :func:`security_headers`) to every HTTP response.

    A header the application already set on a response is left as it is; WebSocket and lifespan
    traffic passes through untouched.
    """

    def __init__(self, app: ASGIApp, headers: Mapping[str, str] | None = None) -> None:
        self.app = app
        chosen = security_headers() if headers is None else headers
        self.headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in chosen.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                added = [(name, value) for name, value in self.headers if name not in present]
                message["headers"] = [*message.get("headers", []), *added]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class SameOriginMiddleware:
    """ASGI middleware refusing (403) a state-changing request whose ``Origin`` is another site's.

    Gradio's event routes (``/ui/gradio_api/queue/join``, ``/upload``, ...) act on the session cookie and take
    no CSRF token; SameSite=Lax keeps the cookie off cross-*site* POSTs, but not off POSTs from another port
    or subdomain of the same site. Browsers send ``Origin`` on every cross-origin POST, so comparing it with
    ``Host`` closes that gap. A request without ``Origin`` (scripts, curl) passes: it carries no ambient
    browser credentials an attacker's page could borrow.
    """

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in self.SAFE_METHODS or _same_origin(scope):
            await self.app(scope, receive, send)
            return
        body = b"request refused: it came from another site (Origin does not match Host)"
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _same_origin(scope: Scope) -> bool:
    headers: dict[str, str] = {
        name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])
    }
    origin = headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == headers.get("host", "") and origin != "null"


class LoginThrottled(Exception):
    """Too many failed sign-ins; ``retry_after`` is the number of seconds until the next attempt is allowed."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = max(1, int(retry_after + 0.999))
        super().__init__(f"too many failed sign-ins: try again in {self.retry_after} s")


@dataclass
class LoginThrottle:
    """Sliding-window limits on failed sign-ins: per (username, address), per address and per username.

    The per-username limit is looser than the pair limit, so a stranger guessing one person's password
    from many addresses is slowed without locking that person out after a handful of tries. ``clock``
    returns seconds (monotonic); ``max_keys`` bounds memory under a flood of distinct names.
    """

    per_pair: int = 5
    per_address: int = 30
    per_username: int = 20
    window_seconds: float = 300.0
    max_keys: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _failures: OrderedDict[tuple[str, str], deque[float]] = field(default_factory=OrderedDict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _keys(self, username: str, address: str) -> list[tuple[tuple[str, str], int]]:
        name = throttle_key(username)
        return [
            (("pair", f"{name}\x00{address}"), self.per_pair),
            (("address", address), self.per_address),
            (("username", name), self.per_username),
        ]

    def _recent(self, key: tuple[str, str], now: float) -> deque[float]:
        times = self._failures.get(key)
        if times is None:
            return deque()
        while times and times[0] <= now - self.window_seconds:
            times.popleft()
        if not times:
            del self._failures[key]
        return times

    def retry_after(self, *, username: str, address: str) -> float:
        """Seconds until this sign-in may be tried (0.0: it may be tried now)."""
        now = self.clock()
        wait = 0.0
        with self._lock:
            for key, limit in self._keys(username, address):
                times = self._recent(key, now)
                if len(times) >= limit:
                    wait = max(wait, times[len(times) - limit] + self.window_seconds - now)
        return wait

    def record_failure(self, *, username: str, address: str) -> None:
        """Count one failed sign-in against every key of this attempt."""
        now = self.clock()
        with self._lock:
            for key, _limit in self._keys(username, address):
                self._recent(key, now)
                self._failures.setdefault(key, deque()).append(now)
                self._failures.move_to_end(key)
            while len(self._failures) > self.max_keys:
                self._failures.popitem(last=False)

    def record_success(self, *, username: str, address: str) -> None:
        """Forget the failures of this (username, address) pair; address and username counts stay."""
        with self._lock:
            self._failures.pop(self._keys(username, address)[0][0], None)

    def attempt(
        self, *, username: str, address: str, sign_in: Callable[[], T], failures: Iterable[type[BaseException]]
    ) -> T:
        """Run ``sign_in`` unless throttled (then raise :class:`LoginThrottled`); count a raise of ``failures``.

        ``sign_in`` (which hashes the password) is not called at all while throttled, so a flood of
        guesses costs the server no argon2 work.
        """
        wait = self.retry_after(username=username, address=address)
        if wait > 0:
            raise LoginThrottled(wait)
        try:
            result = sign_in()
        except tuple(failures):
            self.record_failure(username=username, address=address)
            raise
        self.record_success(username=username, address=address)
        return result


def client_address(request: Any) -> str:
    """The caller's address: the connection's, or the client a trusted proxy names (``forwarded_allow_ips``)."""
    client = getattr(request, "client", None)
    return client.host if client is not None and client.host else "unknown"
