"""The connections of ``h2h studio``: a request head must arrive in time, and one address may hold only so many.

Uvicorn times out an idle keep-alive connection, but not one that opens and sends nothing, or dribbles its request
line and headers a byte at a time: 300 such connections from one client hold 300 sockets forever. Its HTTP protocol
is therefore served in a subclass made by :func:`guarded_protocol` (passed as uvicorn's ``http``), which adds:

- a **head timeout**: a request's head must be complete within ``Settings.header_timeout_seconds`` of the connection
  opening (or of the previous answer on it, once the client starts the next request); else the client gets
  ``408 Request Timeout`` (nothing, if it sent nothing) and the connection is closed. Bodies have their own timeout
  (``Settings.body_timeout_seconds``, :mod:`studio.web.bodies`), and streams held open by strangers are refused
  before they open (every route's sign-in check);
- a **cap per address** (:class:`ConnectionCap`): past ``Settings.max_connections_per_address`` open connections from
  one client address, the next one is answered ``429 Too Many Requests`` as soon as it sends its request, and
  closed. The reverse proxies named in ``Settings.forwarded_allow_ips`` are not counted (every client behind them
  shares their address).

Connection-level, so the cap and the head timeout cost nothing per request and work before any request exists.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from typing import Any

logger = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def raw_response(status: int, reason: str, detail: str) -> bytes:
    """A whole HTTP/1.1 answer ``{"detail": detail}`` that closes the connection, as bytes."""
    body = json.dumps({"detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def too_many_connections(limit: int) -> bytes:
    detail = f"connections: more than {limit} open from your address at once; close some and retry"
    return raw_response(429, "Too Many Requests", detail)


def head_too_slow(seconds: float) -> bytes:
    return raw_response(408, "Request Timeout", f"request: its head did not arrive within {seconds:g} s; send it again")


class ConnectionCap:
    """Open connections counted per client address: at most ``per_address`` each, but for ``exempt`` addresses
    (``forwarded_allow_ips``' syntax: comma-separated addresses or networks, ``*`` for any; None: none).

    One per server; used by its event loop only (no lock).
    """

    def __init__(self, *, per_address: int, exempt: str | None = None) -> None:
        self.per_address = per_address
        self._everyone_exempt = exempt is not None and "*" in [part.strip() for part in exempt.split(",")]
        self._exempt = _networks(exempt)
        self._open: dict[str, int] = {}

    def admit(self, address: str | None) -> bool:
        """Count a new connection from ``address``; False (not counted) when the address already holds its share."""
        if address is None or self._is_exempt(address):
            return True
        held = self._open.get(address, 0)
        if held >= self.per_address:
            return False
        self._open[address] = held + 1
        return True

    def release(self, address: str | None) -> None:
        """A connection ``admit`` counted has closed."""
        if address is None or address not in self._open:
            return
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]

    def _is_exempt(self, address: str) -> bool:
        if self._everyone_exempt:
            return True
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self._exempt)


def _networks(spec: str | None) -> list[Network]:
    networks = []
    for part in (spec or "").split(","):
        try:
            networks.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            continue  # "*" or a host name: not an address this check can match
    return networks


class _GuardedConnection(asyncio.Protocol):
    """The head timeout and the address cap, mixed in before uvicorn's own HTTP protocol (see the module docstring).

    Uses only what both of uvicorn's protocols share: ``cycle`` (the request being answered, None before the first)
    and its ``response_complete``.
    """

    header_seconds: float
    cap: ConnectionCap

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._guard_transport: Any = transport
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_begun = False
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else None
        self._refused = not self.cap.admit(address)
        self._counted = None if self._refused else address
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._refused:  # over the cap: answer its request at once, without parsing it
            self._close_with(too_many_connections(self.cap.per_address))
            return
        super().data_received(data)
        if self._answering():
            self._disarm()  # the head is complete: the body, if any, has its own timeout
        else:
            self._head_begun = self._head_begun or bool(data)
            if self._head_timer is None:  # the next request's head has begun on a kept-alive connection
                self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.cap.release(self._counted)
        self._counted = None
        super().connection_lost(exc)

    def _answering(self) -> bool:
        cycle = getattr(self, "cycle", None)
        return cycle is not None and not cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = asyncio.get_running_loop().call_later(self.header_seconds, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        handed_on = self._guard_transport.get_protocol() is not self  # upgraded (a WebSocket): not HTTP any more
        if handed_on or self._answering() or self._guard_transport.is_closing():
            return
        if self._refused or not self._head_begun:
            self._guard_transport.close()  # it said nothing: nothing to answer
            return
        logger.info("closing a connection whose request head took over %g s", self.header_seconds)
        self._close_with(head_too_slow(self.header_seconds))

    def _close_with(self, answer: bytes) -> None:
        self._disarm()
        if not self._guard_transport.is_closing():
            self._guard_transport.write(answer)
            self._guard_transport.close()


def guarded_protocol(*, header_seconds: float, cap: ConnectionCap, base: type[asyncio.Protocol] | None = None) -> type:
    """Uvicorn's HTTP protocol (``base``; default: the one its ``http="auto"`` picks) with a head timeout of
    ``header_seconds`` and the address cap ``cap`` — for ``uvicorn.Config(http=...)``."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        base = AutoHTTPProtocol
    attributes = {"header_seconds": header_seconds, "cap": cap}
    return type(f"Guarded{base.__name__}", (_GuardedConnection, base), attributes)


def guarded_config(app: Any, *, host: str, port: int, settings: Any, **options: Any) -> Any:
    """A ``uvicorn.Config`` serving ``app`` with :func:`guarded_protocol` set from ``settings`` (a ``Settings``);
    ``options`` go to uvicorn as they are."""
    import uvicorn

    cap = ConnectionCap(per_address=settings.max_connections_per_address, exempt=settings.forwarded_allow_ips)
    protocol = guarded_protocol(header_seconds=settings.header_timeout_seconds, cap=cap)
    return uvicorn.Config(app, host=host, port=port, http=protocol, **options)
