"""The live companion client (``pipeline.live.companion``) against real HTTP servers on 127.0.0.1: the stand-in
companion, and tiny raw servers that misbehave in ways the stand-in does not (garbage SSE, no /models, an error
body quoting the key)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipeline.dataset import load_scenarios
from pipeline.live.companion import (
    CompanionEndpoint,
    CompanionError,
    complete_reply,
    live_messages,
    probe,
    stream_reply,
)
from pipeline.live.standin import StandinCompanion
from pipeline.paths import demo_dir
from pipeline.prompts import build_messages

MESSAGES = [{"role": "system", "content": "You are kind."}, {"role": "user", "content": "I baked bread today"}]
SECRET = "sk-test-very-secret-0123456789"


@pytest.fixture
def standin() -> Iterator[StandinCompanion]:
    with StandinCompanion(token_delay_s=0.001) as companion:
        yield companion


def endpoint_of(companion: StandinCompanion, **options: object) -> CompanionEndpoint:
    return CompanionEndpoint(base_url=companion.base_url, model=companion.model, **options)  # type: ignore[arg-type]


Answer = tuple[str, bytes, str]
JSON = "application/json"


@contextmanager
def raw_server(answers: dict[tuple[str, str], Answer]) -> Iterator[str]:
    """A server answering ``(method, path)`` with the status, body and content type given (404 otherwise), as is;
    yields its base URL. The placeholder ``{auth}`` in a body is replaced with the request's Authorization header."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
            pass

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body, content_type = answers.get((self.command, self.path), ("404 Not Found", b"", "text/plain"))
            self.wfile.write(
                http(status, body.replace(b"{auth}", self.headers.get("Authorization", "").encode()), content_type)
            )
            self.close_connection = True

        do_GET = do_POST = _answer  # noqa: N815 - the stdlib's names

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def http(status: str, body: bytes, content_type: str = JSON) -> bytes:
    """A raw HTTP/1.1 response that closes its connection."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    return head.encode() + b"\r\n" + body


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def failure(call: object) -> CompanionError:
    """The CompanionError ``call()`` raises (a stream is read to its end)."""
    with pytest.raises(CompanionError) as caught:
        result = call()  # type: ignore[operator]
        if hasattr(result, "__next__"):
            list(result)
    return caught.value


def test_the_streamed_deltas_join_to_the_whole_reply_and_carry_the_servers_usage(standin: StandinCompanion) -> None:
    endpoint = endpoint_of(standin, seed=7)
    stream = stream_reply(endpoint=endpoint, messages=MESSAGES)
    deltas = list(stream)
    whole = complete_reply(endpoint=endpoint, messages=MESSAGES)
    assert len(deltas) > 3
    assert "".join(deltas) == stream.reply.text == whole.text
    assert "baked bread" in whole.text
    assert not stream.reply.usage_estimated and not whole.usage_estimated
    assert stream.reply.completion_tokens == whole.completion_tokens == -(-len(whole.text) // 2)
    assert stream.reply.prompt_tokens == whole.prompt_tokens > 0
    assert stream.reply.first_token_ms is not None and 0 < stream.reply.first_token_ms <= stream.reply.latency_ms
    assert whole.first_token_ms is None
    streamed, plain = standin.requests
    assert streamed["stream"] is True and streamed["stream_options"] == {"include_usage": True}
    assert plain["stream"] is False and plain["seed"] == 7 and plain["max_tokens"] == 512
    assert streamed["messages"] == MESSAGES


def test_the_reply_is_not_there_before_the_stream_ends(standin: StandinCompanion) -> None:
    stream = stream_reply(endpoint=endpoint_of(standin), messages=MESSAGES)
    assert standin.requests == []  # nothing sent before the first next()
    next(stream)
    with pytest.raises(RuntimeError, match="not complete"):
        _ = stream.reply
    stream.close()


def test_usage_is_estimated_when_the_server_sends_none(standin: StandinCompanion) -> None:
    standin.send_usage = False
    stream = stream_reply(endpoint=endpoint_of(standin), messages=MESSAGES)
    text = "".join(stream)
    whole = complete_reply(endpoint=endpoint_of(standin), messages=MESSAGES)
    for reply in (stream.reply, whole):
        assert reply.usage_estimated
        assert reply.text == text
        assert reply.completion_tokens == -(-len(text) // 4)  # no CJK: four characters a token
        assert reply.prompt_tokens > 0


def wait_for_cancelled(companion: StandinCompanion, count: int) -> int:
    deadline = time.monotonic() + 3
    while companion.cancelled < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return companion.cancelled


def test_closing_a_stream_early_closes_the_http_response(standin: StandinCompanion) -> None:
    standin.token_delay_s = 0.05
    with stream_reply(endpoint=endpoint_of(standin), messages=MESSAGES) as stream:
        next(stream)
    assert wait_for_cancelled(standin, 1) == 1
    for _ in stream_reply(endpoint=endpoint_of(standin), messages=MESSAGES):
        break  # the stream is dropped here: its response is closed with it
    assert wait_for_cancelled(standin, 2) == 2
    explicit = stream_reply(endpoint=endpoint_of(standin), messages=MESSAGES)
    next(explicit)
    explicit.close()
    assert wait_for_cancelled(standin, 3) == 3
    assert list(explicit) == []


def test_a_closed_port_is_unreachable() -> None:
    endpoint = CompanionEndpoint(base_url=f"http://127.0.0.1:{closed_port()}/v1", model="m")
    for call in (lambda: stream_reply(endpoint=endpoint, messages=MESSAGES),
                 lambda: complete_reply(endpoint=endpoint, messages=MESSAGES)):  # fmt: skip
        error = failure(call)
        assert error.kind == "unreachable" and error.status is None
        assert "127.0.0.1" in str(error)


def test_server_errors_are_http_errors_and_client_errors_refusals(standin: StandinCompanion) -> None:
    standin.fail_next = [500, 429, 400]
    endpoint = endpoint_of(standin)
    statuses = [failure(lambda: stream_reply(endpoint=endpoint, messages=MESSAGES)) for _ in range(3)]
    assert [(error.kind, error.status) for error in statuses] == [
        ("http_error", 500), ("http_error", 429), ("refused", 400)
    ]  # fmt: skip
    assert "scripted failure 500" in str(statuses[0])  # the server's own message is quoted
    magic = [*MESSAGES[:1], {"role": "user", "content": "please [[500]]"}]
    error = failure(lambda: complete_reply(endpoint=endpoint, messages=magic))
    assert (error.kind, error.status) == ("http_error", 500)
    assert "".join(stream_reply(endpoint=endpoint, messages=MESSAGES))  # the script is used up: answers again


def test_a_wrong_key_is_refused_and_the_key_is_sent_as_a_bearer_token(standin: StandinCompanion) -> None:
    standin.api_key = SECRET
    error = failure(lambda: complete_reply(endpoint=endpoint_of(standin, api_key="sk-wrong"), messages=MESSAGES))
    assert (error.kind, error.status) == ("refused", 401)
    assert "Incorrect API key" in str(error)
    assert complete_reply(endpoint=endpoint_of(standin, api_key=SECRET), messages=MESSAGES).text
    assert standin.authorizations == ["Bearer sk-wrong", f"Bearer {SECRET}"]


def test_the_key_never_shows_in_errors_reprs_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    echo = ("401 Unauthorized", b'{"error": {"message": "Incorrect API key provided: {auth}"}}', JSON)
    caplog.set_level(logging.DEBUG)
    with raw_server({("POST", "/v1/chat/completions"): echo, ("GET", "/v1/models"): echo}) as base_url:
        endpoint = CompanionEndpoint(base_url=base_url, model="m", api_key=SECRET)
        errors = [
            failure(lambda: stream_reply(endpoint=endpoint, messages=MESSAGES)),
            failure(lambda: complete_reply(endpoint=endpoint, messages=MESSAGES)),
            failure(lambda: probe(endpoint=endpoint)),
        ]
    for error in errors:
        assert (error.kind, error.status) == ("refused", 401)
        assert "Incorrect API key provided: Bearer [api key]" in str(error)  # the server did quote it
        assert SECRET not in str(error) and SECRET not in repr(error) and SECRET not in error.detail
    assert SECRET not in repr(endpoint) and "api_key" not in repr(endpoint)
    assert caplog.records and SECRET not in caplog.text


def test_a_stalled_stream_times_out_at_the_whole_reply_deadline(standin: StandinCompanion) -> None:
    standin.stall_after_chars = 10
    stream = stream_reply(endpoint=endpoint_of(standin, timeout_s=1.0), messages=MESSAGES)
    received: list[str] = []
    started = time.monotonic()
    with pytest.raises(CompanionError) as caught:
        received.extend(stream)
    assert caught.value.kind == "timeout"
    assert 0.9 < time.monotonic() - started < 3
    assert len("".join(received)) >= 10  # the text before the stall did arrive


def test_a_slow_trickle_cannot_outlast_the_deadline(standin: StandinCompanion) -> None:
    standin.token_delay_s = 0.3  # each token well inside a read timeout, the whole reply not inside the deadline
    started = time.monotonic()
    error = failure(lambda: stream_reply(endpoint=endpoint_of(standin, timeout_s=1.0), messages=MESSAGES))
    assert error.kind == "timeout"
    assert time.monotonic() - started < 2.5


def test_a_late_answer_times_out(standin: StandinCompanion) -> None:
    standin.delay_s = 5
    endpoint = endpoint_of(standin, timeout_s=0.5)
    for call in (lambda: stream_reply(endpoint=endpoint, messages=MESSAGES),
                 lambda: complete_reply(endpoint=endpoint, messages=MESSAGES)):  # fmt: skip
        started = time.monotonic()
        assert failure(call).kind == "timeout"
        assert time.monotonic() - started < 2


SSE = "text/event-stream"
CHUNK = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (CHUNK + b"data: {not json\n\n", SSE, "not JSON"),
        (CHUNK + b"<html>oops</html>\n\n", SSE, "not a server-sent event line"),
        (CHUNK + b"data: [1, 2]\n\n", SSE, "not a JSON object"),
        (b'data: {"choices": [{"delta": {"content": 5}}]}\n\ndata: [DONE]\n\n', SSE, "no text in choices[0].delta"),
        (CHUNK, SSE, "without 'data: [DONE]'"),
        (b'data: {"choices": [{"delta": {"content": " "}}]}\n\ndata: [DONE]\n\n', SSE, "empty reply"),
        (b'{"choices": [{"message": {"content": "hi"}}]}', JSON, "not a server-sent event line"),
    ],
)
def test_malformed_streams_are_malformed(body: bytes, content_type: str, expected: str) -> None:
    with raw_server({("POST", "/v1/chat/completions"): ("200 OK", body, content_type)}) as base_url:
        stream = stream_reply(endpoint=CompanionEndpoint(base_url=base_url, model="m"), messages=MESSAGES)
        error = failure(lambda: stream)
    assert error.kind == "malformed"
    assert expected in str(error)


def test_an_error_event_mid_stream_is_an_http_error() -> None:
    body = CHUNK + b'data: {"error": {"message": "engine died", "code": 500}}\n\n'
    with raw_server({("POST", "/v1/chat/completions"): ("200 OK", body, SSE)}) as base_url:
        stream = stream_reply(endpoint=CompanionEndpoint(base_url=base_url, model="m"), messages=MESSAGES)
        assert next(stream) == "hi"
        error = failure(lambda: stream)
    assert error.kind == "http_error" and "engine died" in str(error)


@pytest.mark.parametrize(
    ("body", "expected"),
    [(b"<html>", "non-JSON"), (b'{"choices": []}', "empty reply"), (b'{"choices": [{"text": "x"}]}', "no text")],
)
def test_malformed_whole_replies_are_malformed(body: bytes, expected: str) -> None:
    with raw_server({("POST", "/v1/chat/completions"): ("200 OK", body, JSON)}) as base_url:
        error = failure(
            lambda: complete_reply(endpoint=CompanionEndpoint(base_url=base_url, model="m"), messages=MESSAGES)
        )
    assert error.kind == "malformed" and expected in str(error)


def test_probe_passes_names_the_served_models_and_reports_a_down_endpoint(standin: StandinCompanion) -> None:
    probe(endpoint=endpoint_of(standin))
    error = failure(lambda: probe(endpoint=CompanionEndpoint(base_url=standin.base_url, model="gpt-x")))
    assert error.kind == "refused"
    assert "'gpt-x' is not served" in str(error) and "served: standin-companion" in str(error)
    standin.stop()
    assert failure(lambda: probe(endpoint=endpoint_of(standin))).kind == "unreachable"


def test_probe_falls_back_to_a_one_token_chat_where_there_is_no_models_route() -> None:
    answer = ("200 OK", b'{"choices": [{"message": {"content": ""}}]}', JSON)  # an empty one-token reply passes
    with raw_server({("POST", "/v1/chat/completions"): answer}) as base_url:
        probe(endpoint=CompanionEndpoint(base_url=base_url, model="m"))
    unknown = ("404 Not Found", b'{"error": {"message": "The model `m` does not exist."}}', JSON)
    with raw_server({("POST", "/v1/chat/completions"): unknown}) as base_url:
        error = failure(lambda: probe(endpoint=CompanionEndpoint(base_url=base_url, model="m")))
    assert (error.kind, error.status) == ("refused", 404) and "does not exist" in str(error)


def test_live_messages_are_the_generate_prompt_then_the_turns() -> None:
    scenario = next(s for s in load_scenarios(demo_dir() / "scenarios.jsonl") if s.history and s.tags.high_risk)
    for variant in ("with_sap", "without_sap"):
        first = live_messages(scenario=scenario, variant=variant, turns=[("user", scenario.user_input)])
        assert first == build_messages(scenario, variant)
        later = live_messages(
            scenario=scenario, variant=variant,
            turns=[("user", scenario.user_input), ("assistant", "I'm here."), ("user", "thanks")],
        )  # fmt: skip
        assert later[: len(first)] == first
        assert later[len(first) :] == [
            {"role": "assistant", "content": "I'm here."},
            {"role": "user", "content": "thanks"},
        ]
    assert len(first) == 2 + len(scenario.history)  # system, history, the user's input
    with pytest.raises(ValueError, match="role"):
        live_messages(scenario=scenario, variant="with_sap", turns=[("system", "x")])
