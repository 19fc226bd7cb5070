"""A real HTTP stand-in for an OpenAI-compatible chat-completions server (tests only).

It listens on 127.0.0.1 on a free port, answers ``POST /v1/chat/completions`` deterministically
from the request, records every request it got and the most requests it held at once, and plays
scripted faults: 429 with Retry-After, 500, a hang longer than the client's timeout, a malformed
JSON body, or a plain 400.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour: ``kind`` is "429", "500", "400", "hang" or "malformed"."""

    kind: str
    retry_after: str | None = None


def default_answer(body: dict[str, Any]) -> str:
    """A deterministic reply derived from the request: model, last user message and a digest of all messages."""
    messages = body.get("messages", [])
    last_user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    digest = hashlib.sha256(json.dumps(messages, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:12]
    return f"[{body.get('model')}] {digest} re: {last_user[:40]}"


class FakeOpenAI:
    """The server and its script; use :meth:`start`/:meth:`stop` (or the pytest fixture)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.faults: deque[Fault] = deque()
        #: Faults played for every request whose messages contain the given text (checked first).
        self.faults_when_contains: dict[str, Fault] = {}
        #: After this many successful answers every further request hangs (None: never).
        self.hang_after: int | None = None
        self.answer: Callable[[dict[str, Any]], str] = default_answer
        self.delay_seconds = 0.0
        self.hang_seconds = 30.0
        self.max_in_flight = 0
        self.answered = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        # a short poll interval keeps shutdown (every test's teardown) quick
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def chat_requests(self) -> list[dict[str, Any]]:
        """Every chat-completions body received, in arrival order."""
        with self._lock:
            return list(self.requests)

    def _fault_for(self, body: dict[str, Any]) -> Fault | None:
        text = json.dumps(body.get("messages", []), ensure_ascii=False)
        for needle, fault in self.faults_when_contains.items():
            if needle in text:
                return fault
        with self._lock:
            if self.faults:
                return self.faults.popleft()
            if self.hang_after is not None and self.answered >= self.hang_after:
                return Fault("hang")
        return None

    def _enter(self, body: dict[str, Any], authorization: str | None) -> None:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def completion_body(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.answer(body)
        prompt_tokens = sum(len(m.get("content", "")) for m in body.get("messages", []))
        with self._lock:
            self.answered += 1
        return {
            "id": f"chatcmpl-{self.answered}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text), "total_tokens": 0},
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Keep test output quiet."""

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if not self.path.endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.fake._enter(body, self.headers.get("Authorization"))
        try:
            self._answer(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing to answer
        finally:
            self.server.fake._leave()

    def _answer(self, body: dict[str, Any]) -> None:
        fake = self.server.fake
        fault = fake._fault_for(body)
        if fault is None:
            if fake.delay_seconds:
                fake._stopping.wait(fake.delay_seconds)
            self._send(200, json.dumps(fake.completion_body(body)).encode())
        elif fault.kind == "hang":
            fake._stopping.wait(fake.hang_seconds)
        elif fault.kind == "malformed":
            self._send(200, b'{"id": "chatcmpl-x", "choices": [{"message": ')
        elif fault.kind == "429":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._send(429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}', headers)
        else:
            message = json.dumps({"error": {"message": f"scripted {fault.kind}"}}).encode()
            self._send(int(fault.kind), message)
