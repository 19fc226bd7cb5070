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

:class:`LoginThrottle` counts failed sign-ins in a sliding window per (address, username) pair and per
address, and refuses further attempts — before the password is hashed — by the rule its docstring states: no
stranger can lock a person out, and a refusal says when to try again. The studio uses :class:`StoreLoginThrottle`,
the same rule over failures kept in the store: several studio processes on one database (``h2h studio --workers N``)
count each other's failures, so spreading guesses over the processes gains nothing.

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
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from studio.services.shared_state import add_failures, forget_failures, recent_failures
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
    or subdomain of the same site. Browsers send ``Origin`` on every cross-origin POST, so comparing its scheme,
    host and port with the request's own (:func:`origin_matches`) closes that gap. A request without ``Origin``
    (scripts, curl) passes: it carries no ambient browser credentials an attacker's page could borrow.
    """

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in self.SAFE_METHODS or _same_origin(scope):
            await self.app(scope, receive, send)
            return
        body = b"request refused: it came from another site (Origin does not match this site's scheme, host and port)"
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
    return origin_matches(headers.get("origin"), scheme=str(scope.get("scheme", "http")), host=headers.get("host", ""))


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_tuple(scheme: str, netloc: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) with the scheme's default port filled in; None when ``netloc`` is not host[:port]."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:  # a port that is not a number, or out of range
        return None
    if not parts.hostname or parts.username is not None or parts.password is not None or parts.netloc != netloc:
        return None
    return scheme, parts.hostname, port if port is not None else _DEFAULT_PORTS.get(scheme)


def origin_matches(origin: str | None, *, scheme: str, host: str) -> bool:
    """Whether a request's ``Origin`` header names the site it was sent to: the same scheme, host and port.

    ``scheme`` is the request's own (``http``/``https``) as uvicorn reports it — from ``X-Forwarded-Proto`` only when
    the request came through a proxy in ``Settings.forwarded_allow_ips`` — and ``host`` its ``Host`` header; a missing
    port is the scheme's default, so ``https://host`` matches ``host:443`` and never ``http://host``. No ``Origin`` at
    all matches (scripts, curl: no ambient browser credentials); ``null`` and anything unparsable do not.
    """
    if origin is None:
        return True
    sent = urlsplit(origin)
    if sent.scheme not in _DEFAULT_PORTS or sent.path or sent.query or sent.fragment:
        return False
    theirs = _origin_tuple(sent.scheme, sent.netloc)
    return theirs is not None and theirs == _origin_tuple(scheme.lower(), host)


class LoginThrottled(Exception):
    """Too many failed sign-ins; ``retry_after`` is the number of seconds until the next attempt is allowed."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = max(1, int(retry_after + 0.999))
        super().__init__(
            f"too many failed sign-ins for this username from this address: try again in {self.retry_after} s"
        )


@dataclass
class LoginThrottle:
    """Sliding-window limits on failed sign-ins, counted per (address, username) and per address — never per
    username alone, so no one can lock a person out from somewhere else.

    The rule (``window_seconds``, default 300 s):

    - **pair**: after ``per_pair`` (5) failures of one username from one address, that username is refused from that
      address until the oldest of them leaves the window. The same name from another address is untouched.
    - **address**: once an address has ``per_address`` (30) failures in the window, over any names, it is refused
      for every username that has *failed there* in the window — one guess per name per window for someone spraying
      many names — while a username with no failure there is still checked: another person behind the same address
      (a shared office or NAT) signs in with their correct password whatever a stranger there did. The refusal lasts
      until the address drops below its limit or the name's own failures there leave the window, whichever is first.

    A success forgets its pair's failures (the address count stays). A refusal names the seconds until the next
    attempt is allowed (:class:`LoginThrottled`). ``clock`` returns seconds (monotonic); ``max_keys`` bounds memory
    under a flood of distinct names.
    """

    per_pair: int = 5
    per_address: int = 30
    window_seconds: float = 300.0
    max_keys: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _failures: OrderedDict[tuple[str, str], deque[float]] = field(default_factory=OrderedDict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @staticmethod
    def _pair_key(username: str, address: str) -> tuple[str, str]:
        return ("pair", f"{throttle_key(username)}\x00{address}")

    def _recent(self, key: tuple[str, str], now: float) -> deque[float]:
        times = self._failures.get(key)
        if times is None:
            return deque()
        while times and times[0] <= now - self.window_seconds:
            times.popleft()
        if not times:
            del self._failures[key]
        return times

    def _wait(self, times: Sequence[float], limit: int, now: float) -> float:
        """Seconds until ``times`` holds fewer than ``limit`` failures of the window (0.0: it does now)."""
        return max(0.0, times[len(times) - limit] + self.window_seconds - now) if len(times) >= limit else 0.0

    def _rule(self, pair: Sequence[float], by_address: Callable[[], Sequence[float]], now: float) -> float:
        """The class's rule: seconds to wait, given the pair's failures in the window and (asked only when the pair
        has failed) the address's latest ones."""
        wait = self._wait(pair, self.per_pair, now)
        if pair:  # this name failed here: the address limit applies to it, until its own failures age out
            address_wait = self._wait(by_address(), self.per_address, now)
            wait = max(wait, min(address_wait, pair[-1] + self.window_seconds - now))
        return wait

    def retry_after(self, *, username: str, address: str) -> float:
        """Seconds until this sign-in may be tried (0.0: it may be tried now); see the class for the rule."""
        now = self.clock()
        with self._lock:
            pair = self._recent(self._pair_key(username, address), now)
            return self._rule(pair, lambda: self._recent(("address", address), now), now)

    def record_failure(self, *, username: str, address: str) -> None:
        """Count one failed sign-in against its (address, username) pair and its address."""
        now = self.clock()
        with self._lock:
            for key in (self._pair_key(username, address), ("address", address)):
                self._recent(key, now)
                self._failures.setdefault(key, deque()).append(now)
                self._failures.move_to_end(key)
            while len(self._failures) > self.max_keys:
                self._failures.popitem(last=False)

    def record_success(self, *, username: str, address: str) -> None:
        """Forget the failures of this (address, username) pair; the address count stays."""
        with self._lock:
            self._failures.pop(self._pair_key(username, address), None)

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


@dataclass
class StoreLoginThrottle(LoginThrottle):
    """:class:`LoginThrottle`'s rule over failures kept in the store (``login_failure``), so every studio process on
    one database counts the others' failures: a guess refused on one is refused on all.

    ``clock`` is wall-clock seconds (``time.time``: processes, even machines, compare their times); failures older
    than the window are pruned as new ones are recorded (at most once a ``prune_every`` seconds per process), so the
    table holds about one window of failures and no key bound (``max_keys``) is needed.
    """

    engine: Any = None
    clock: Callable[[], float] = time.time
    prune_every: float = 60.0
    _pruned_at: float = field(default=float("-inf"), init=False, repr=False)

    @staticmethod
    def _stored_key(key: tuple[str, str]) -> str:
        return f"{key[0]}\x00{key[1]}"

    def _latest(self, key: tuple[str, str], now: float, limit: int) -> list[float]:
        since = now - self.window_seconds
        return recent_failures(self.engine, key=self._stored_key(key), since=since, limit=limit)

    def retry_after(self, *, username: str, address: str) -> float:
        now = self.clock()
        # The rule reads a pair's latest ``per_pair`` failures (and its newest), an address's latest ``per_address``.
        pair = self._latest(self._pair_key(username, address), now, self.per_pair)
        return self._rule(pair, lambda: self._latest(("address", address), now, self.per_address), now)

    def record_failure(self, *, username: str, address: str) -> None:
        now = self.clock()
        prune = now - self._pruned_at >= self.prune_every
        keys = [self._stored_key(key) for key in (self._pair_key(username, address), ("address", address))]
        add_failures(self.engine, keys=keys, at=now, prune_before=now - self.window_seconds if prune else None)
        if prune:
            self._pruned_at = now

    def record_success(self, *, username: str, address: str) -> None:
        forget_failures(self.engine, key=self._stored_key(self._pair_key(username, address)))


def client_address(request: Any) -> str:
    """The caller's address: the connection's, or the client a trusted proxy names (``forwarded_allow_ips``)."""
    client = getattr(request, "client", None)
    return client.host if client is not None and client.host else "unknown"
