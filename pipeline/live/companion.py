"""The live companion client: chat with a model behind any OpenAI-compatible endpoint, the reply streamed.

Raters hold multi-turn conversations with a companion (``vllm serve``, a hosted model). The prompt is built
exactly as ``h2h generate`` builds it (:func:`live_messages`); :func:`stream_reply` yields the reply's text as it
arrives, :func:`complete_reply` waits for all of it, :func:`probe` checks an endpoint before a session starts.

Every failure is one :class:`CompanionError` whose ``kind`` says what went wrong:

- ``unreachable``: no connection (refused, unknown host, connect timeout), or the connection broke mid-reply;
- ``timeout``: no reply, or no complete reply, within the endpoint's ``timeout_s`` (a whole-reply deadline);
- ``http_error``: HTTP 5xx, 429 or another non-2xx status that is not a refusal, or an error event mid-stream;
- ``refused``: HTTP 4xx other than 429 (bad key, unknown model, bad request), or a model the endpoint does not serve;
- ``malformed``: a body that is not the OpenAI format (bad SSE or JSON, a stream without ``[DONE]``), or an
  empty reply.

Nothing here retries: the page offers the rater a retry. The API key is sent as a Bearer token and never
appears in a repr, an error message or a log line (server text quoted in an error is scrubbed of it).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import re
import socket
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from pipeline.prompts import build_messages
from pipeline.records import Scenario, Variant

logger = logging.getLogger(__name__)

#: Every value of :attr:`CompanionError.kind`.
ERROR_KINDS: tuple[str, ...] = ("unreachable", "timeout", "http_error", "malformed", "refused")
#: How much of a server's error text an error message quotes.
_EXCERPT_CHARS = 300
#: Error bodies are read up to this size (a misbehaving server must not fill memory).
_ERROR_BODY_BYTES = 65_536
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@dataclass(frozen=True)
class CompanionEndpoint:
    """Where the companion is served and how to ask it.

    ``base_url`` ends in the API root (``http://127.0.0.1:8000/v1``); ``api_key`` is sent as a Bearer token and
    left out of the repr; ``timeout_s`` is the deadline for the whole reply, ``connect_timeout_s`` for the
    connection alone; ``seed`` is sent only when set.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    connect_timeout_s: float = 5.0
    max_tokens: int = 512
    temperature: float = 0.7
    seed: int | None = None

    def __post_init__(self) -> None:
        if min(self.timeout_s, self.connect_timeout_s) <= 0 or self.max_tokens < 1:
            raise ValueError("timeout_s and connect_timeout_s must be positive, max_tokens at least 1")

    def url(self, path: str) -> str:
        """``base_url`` joined with ``path`` (``/models``, ``/chat/completions``)."""
        return self.base_url.rstrip("/") + path


class CompanionError(Exception):
    """A request to the companion failed; ``kind`` is one of :data:`ERROR_KINDS`, ``status`` the HTTP status
    where there was one. ``str(error)`` is a plain technical message for logs, never holding the API key."""

    def __init__(self, kind: str, detail: str, *, status: int | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown CompanionError kind {kind!r}; expected one of {', '.join(ERROR_KINDS)}")
        self.kind = kind
        self.detail = detail
        self.status = status
        super().__init__(kind, detail, status)

    def __str__(self) -> str:
        status = f" (HTTP {self.status})" if self.status is not None else ""
        return f"companion {self.kind}{status}: {self.detail}"


@dataclass(frozen=True)
class Reply:
    """One complete reply. Token counts are the server's usage, or estimates (``usage_estimated``) where it sent
    none; ``latency_ms`` runs from the request's start to the last byte, ``first_token_ms`` to the first text
    (None for a reply that was not streamed)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    latency_ms: float
    first_token_ms: float | None


def estimate_tokens(*, text: str) -> int:
    """A rough token count for a server that reports no usage: one per CJK character, one per four other
    characters (the usual rule of thumb for BPE vocabularies)."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def live_messages(*, scenario: Scenario, variant: Variant, turns: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The chat messages of a live conversation: exactly ``h2h generate``'s prompt for ``scenario`` without its
    ``user_input`` (system prompt with the SAP block for ``with_sap``, then the scenario's history), followed by
    ``turns`` in order, each ``(role, text)`` with role ``user`` or ``assistant``. With the single turn
    ``("user", scenario.user_input)`` this equals :func:`pipeline.prompts.build_messages`."""
    messages = build_messages(scenario.model_copy(update={"user_input": ""}), variant)
    for role, text in turns:
        if role not in ("user", "assistant"):
            raise ValueError(f"a turn's role must be 'user' or 'assistant', not {role!r}")
        messages.append({"role": role, "content": text})
    return messages


def _fail(endpoint: CompanionEndpoint, kind: str, detail: str, *, status: int | None = None) -> CompanionError:
    """A :class:`CompanionError` whose detail is scrubbed of the API key (servers sometimes quote it back)."""
    if endpoint.api_key:
        detail = detail.replace(endpoint.api_key, "[api key]")
    error = CompanionError(kind, detail, status=status)
    logger.info("%s", error)
    return error


class _Watchdog:
    """The whole-reply deadline. httpx has no total timeout (its read timeout restarts with every byte), so at
    the deadline this shuts the response's socket down, which wakes a read blocked on a stalled server."""

    def __init__(self, endpoint: CompanionEndpoint) -> None:
        self.endpoint = endpoint
        self.deadline = time.monotonic() + endpoint.timeout_s
        self.fired = False
        self._timer: threading.Timer | None = None

    def arm(self, response: httpx.Response) -> None:
        self._timer = threading.Timer(max(self.deadline - time.monotonic(), 0.0), self._fire, args=(response,))
        self._timer.daemon = True
        self._timer.start()

    def _fire(self, response: httpx.Response) -> None:
        self.fired = True
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):  # already closed: the reply ended as the deadline passed
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def check(self) -> None:
        """Raise the timeout error once the deadline has passed."""
        if self.fired or time.monotonic() > self.deadline:
            self.fired = True
            raise _fail(self.endpoint, "timeout", f"no complete reply within {self.endpoint.timeout_s:g} s")


@contextlib.contextmanager
def _mapped_errors(watchdog: _Watchdog, url: str) -> Iterator[None]:
    """Turn httpx's exceptions into :class:`CompanionError` (a broken read after the deadline is a timeout)."""
    endpoint = watchdog.endpoint
    try:
        yield
    except httpx.ConnectTimeout as error:
        raise _fail(
            endpoint, "unreachable", f"no connection to {url} within {endpoint.connect_timeout_s:g} s"
        ) from error
    except httpx.TimeoutException as error:
        raise _fail(endpoint, "timeout", f"no reply from {url} within {endpoint.timeout_s:g} s") from error
    except (httpx.TransportError, httpx.InvalidURL) as error:
        if watchdog.fired:
            raise _fail(endpoint, "timeout", f"no complete reply within {endpoint.timeout_s:g} s") from error
        what = "cannot connect to" if isinstance(error, httpx.ConnectError) else "the connection broke with"
        raise _fail(endpoint, "unreachable", f"{what} {url}: {error or type(error).__name__}") from error


def _server_message(body: bytes) -> str:
    """The message of an error body: OpenAI's ``error.message``, FastAPI's ``detail``, else the text itself."""
    text = body.decode("utf-8", errors="replace")
    with contextlib.suppress(ValueError):
        parsed = json.loads(text)
        if isinstance(parsed, dict):
            error = parsed.get("error")
            found = error.get("message") if isinstance(error, dict) else error or parsed.get("detail")
            text = found if isinstance(found, str) else json.dumps(found if found is not None else parsed)
    text = " ".join(text.split())
    return text[:_EXCERPT_CHARS] + ("…" if len(text) > _EXCERPT_CHARS else "")


def _check_status(endpoint: CompanionEndpoint, response: httpx.Response, url: str) -> None:
    """Raise for a non-2xx status: ``refused`` for 4xx but 429, ``http_error`` otherwise."""
    status = response.status_code
    if 200 <= status < 300:
        return
    body = b"".join(itertools.islice(response.iter_bytes(chunk_size=4096), _ERROR_BODY_BYTES // 4096))
    kind = "refused" if 400 <= status < 500 and status != 429 else "http_error"
    raise _fail(endpoint, kind, f"{url} answered HTTP {status}: {_server_message(body)}", status=status)


@contextlib.contextmanager
def _opened(watchdog: _Watchdog, *, method: str, path: str, body: dict[str, Any] | None) -> Iterator[httpx.Response]:
    """Send one request and yield its streaming 2xx response; closed (and the watchdog stopped) on exit."""
    endpoint = watchdog.endpoint
    url = endpoint.url(path)
    logger.debug("companion: %s %s (model %s)", method, url, endpoint.model)
    timeout = httpx.Timeout(endpoint.timeout_s, connect=endpoint.connect_timeout_s)
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    with httpx.Client(timeout=timeout, headers=headers) as client:
        with _mapped_errors(watchdog, url):
            response = client.send(client.build_request(method, url, json=body), stream=True)
        try:
            with _mapped_errors(watchdog, url):
                _check_status(endpoint, response, url)
            watchdog.arm(response)
            yield response
        finally:
            watchdog.cancel()
            response.close()


def _chat_body(endpoint: CompanionEndpoint, messages: list[dict[str, str]], *, stream: bool) -> dict[str, Any]:
    body = {"model": endpoint.model, "messages": messages, "max_tokens": endpoint.max_tokens, "stream": stream}
    body |= {"temperature": endpoint.temperature} | ({} if endpoint.seed is None else {"seed": endpoint.seed})
    return body | ({"stream_options": {"include_usage": True}} if stream else {})


def _sse_payloads(endpoint: CompanionEndpoint, lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON object of each ``data:`` event, up to ``data: [DONE]``; an error event raises ``http_error``."""
    for line in lines:
        name, _, value = line.partition(":")
        if not line or name in ("", "event", "id", "retry"):  # blank separators, comments, fields we need not read
            continue
        if name != "data":
            raise _fail(endpoint, "malformed", f"not a server-sent event line: {line[:80]!r}")
        value = value.removeprefix(" ")
        if value.strip() == "[DONE]":
            return
        try:
            payload = json.loads(value)
        except ValueError:
            raise _fail(endpoint, "malformed", f"an event's data is not JSON: {value[:80]!r}") from None
        if not isinstance(payload, dict):
            raise _fail(endpoint, "malformed", f"an event's data is not a JSON object: {value[:80]!r}")
        if "error" in payload:  # vLLM reports a failure mid-stream this way
            raise _fail(endpoint, "http_error", f"error event mid-reply: {_server_message(value.encode())}")
        yield payload
    raise _fail(endpoint, "malformed", "the stream ended without 'data: [DONE]' (a cut-off reply)")


def _choice_text(endpoint: CompanionEndpoint, payload: dict[str, Any], key: str) -> str:
    """``choices[0][key].content`` (``key`` is ``delta`` or ``message``); "" where there is none."""
    choices = payload.get("choices")
    if not choices:
        return ""  # the usage chunk has no choices
    part = choices[0].get(key) if isinstance(choices, list) and isinstance(choices[0], dict) else None
    content = part.get("content") if isinstance(part, dict) else 0
    if not isinstance(content, str | None):
        raise _fail(endpoint, "malformed", f"no text in choices[0].{key}: {json.dumps(payload)[:120]}")
    return content or ""


def _usage(payload: dict[str, Any]) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` of the payload's usage; None where it has none."""
    usage = payload.get("usage")
    found: dict[str, Any] = usage if isinstance(usage, dict) else {}
    prompt, completion = found.get("prompt_tokens"), found.get("completion_tokens")
    return (prompt, completion) if isinstance(prompt, int) and isinstance(completion, int) else None


def _reply(
    *, messages: list[dict[str, str]], text: str, usage: tuple[int, int] | None, started: float, first: float | None
) -> Reply:
    """The :class:`Reply`; token counts estimated where the server sent no usage."""
    estimate = (sum(estimate_tokens(text=m["content"]) for m in messages), estimate_tokens(text=text))
    prompt, completion = usage or estimate
    latency_ms, first_ms = (time.monotonic() - started) * 1000, None if first is None else (first - started) * 1000
    return Reply(text, prompt, completion, usage is None, latency_ms, first_ms)


class ReplyStream:
    """Iterate to get text deltas (str) as they arrive; after the iteration ends, ``.reply`` is the :class:`Reply`.

    Nothing is sent before the first ``next()``. Raises :class:`CompanionError` during iteration on any failure
    (connect, HTTP status, timeout incl. the whole-reply deadline, malformed SSE/JSON, empty reply). Closing early
    (``.close()``, leaving a ``with`` block, or dropping the stream after ``break``) closes the HTTP response.
    """

    def __init__(self, *, endpoint: CompanionEndpoint, messages: list[dict[str, str]]) -> None:
        # The generator must not hold the stream (no reference cycle): dropping the stream then finalises the
        # generator at once, which closes the response, rather than at the next garbage collection.
        self._done: list[Reply] = []
        self._deltas = _streamed(endpoint=endpoint, messages=messages, done=self._done)

    def __iter__(self) -> ReplyStream:
        return self

    def __next__(self) -> str:
        return next(self._deltas)

    def __enter__(self) -> ReplyStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def reply(self) -> Reply:
        """The complete reply; a RuntimeError before the iteration has ended."""
        if not self._done:
            raise RuntimeError("the reply is not complete yet: iterate the stream to its end first")
        return self._done[0]

    def close(self) -> None:
        """Stop reading and close the HTTP response (a no-op once finished)."""
        self._deltas.close()


def _streamed(
    *, endpoint: CompanionEndpoint, messages: list[dict[str, str]], done: list[Reply]
) -> Generator[str, None, None]:
    """Yield the reply's deltas; append the :class:`Reply` to ``done`` at the end."""
    started, watchdog = time.monotonic(), _Watchdog(endpoint)
    parts: list[str] = []
    usage: tuple[int, int] | None = None
    first: float | None = None
    body = _chat_body(endpoint, messages, stream=True)
    with _opened(watchdog, method="POST", path="/chat/completions", body=body) as response:
        with _mapped_errors(watchdog, endpoint.url("/chat/completions")):
            for payload in _sse_payloads(endpoint, response.iter_lines()):
                watchdog.check()
                usage = _usage(payload) or usage
                delta = _choice_text(endpoint, payload, "delta")
                if delta:
                    first = time.monotonic() if first is None else first
                    parts.append(delta)
                    yield delta
        watchdog.check()
    if not "".join(parts).strip():
        raise _fail(endpoint, "malformed", "the model sent an empty reply")
    reply = _reply(messages=messages, text="".join(parts), usage=usage, started=started, first=first)
    logger.info("companion: streamed %d characters in %.0f ms", len(reply.text), reply.latency_ms)
    done.append(reply)


def stream_reply(*, endpoint: CompanionEndpoint, messages: list[dict[str, str]]) -> ReplyStream:
    """Stream the companion's reply to ``messages``: ``POST {base_url}/chat/completions`` with ``stream`` and
    ``stream_options.include_usage``. No retries. See :class:`ReplyStream`."""
    return ReplyStream(endpoint=endpoint, messages=messages)


def _request_json(
    endpoint: CompanionEndpoint, *, method: str, path: str, body: dict[str, Any] | None
) -> dict[str, Any]:
    """One request whose 2xx answer is a JSON object (read whole, within the deadline)."""
    watchdog = _Watchdog(endpoint)
    with _opened(watchdog, method=method, path=path, body=body) as response:
        with _mapped_errors(watchdog, endpoint.url(path)):
            raw = response.read()
        watchdog.check()
    try:
        payload = json.loads(raw)
    except ValueError:
        raise _fail(endpoint, "malformed", f"{endpoint.url(path)} answered non-JSON: {raw[:80]!r}") from None
    if not isinstance(payload, dict):
        raise _fail(endpoint, "malformed", f"{endpoint.url(path)} answered JSON that is not an object")
    return payload


def complete_reply(*, endpoint: CompanionEndpoint, messages: list[dict[str, str]]) -> Reply:
    """The companion's whole reply to ``messages`` in one non-streamed request (no retries); a
    :class:`CompanionError` as for :func:`stream_reply`."""
    started = time.monotonic()
    body = _chat_body(endpoint, messages, stream=False)
    payload = _request_json(endpoint, method="POST", path="/chat/completions", body=body)
    text = _choice_text(endpoint, payload, "message")
    if not text.strip():
        raise _fail(endpoint, "malformed", "the model sent an empty reply")
    return _reply(messages=messages, text=text, usage=_usage(payload), started=started, first=None)


def probe(*, endpoint: CompanionEndpoint) -> None:
    """Check that the endpoint is up, accepts the key and serves ``endpoint.model``; one clear
    :class:`CompanionError` otherwise. Reads ``GET {base_url}/models`` (the error names the served models); where
    that is 404, sends a ``max_tokens=1`` chat completion instead (any text, even none, passes)."""
    try:
        payload = _request_json(endpoint, method="GET", path="/models", body=None)
    except CompanionError as error:
        if error.status != 404:
            raise
        tiny = replace(endpoint, max_tokens=1)
        body = _chat_body(tiny, [{"role": "user", "content": "Hi"}], stream=False)
        _request_json(tiny, method="POST", path="/chat/completions", body=body)
        return
    data = payload.get("data")
    if not isinstance(data, list):
        raise _fail(endpoint, "malformed", f"{endpoint.url('/models')} answered without a 'data' list")
    served = [str(model.get("id")) for model in data if isinstance(model, dict)]
    if endpoint.model not in served:
        names = ", ".join(served) or "none"
        raise _fail(
            endpoint, "refused", f"model {endpoint.model!r} is not served at {endpoint.base_url}; served: {names}"
        )
