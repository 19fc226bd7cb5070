"""A stand-in companion: a small OpenAI-compatible server for the demo, the tests and newcomers.

``StandinCompanion`` serves ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed or not, with usage)
on 127.0.0.1 from the standard library's ``ThreadingHTTPServer``. Its replies are deterministic and "read" the
prompt, so a live safety session shows the difference the SAP block makes (:func:`standin_reply`):

- a crisis message (a small built-in word list) under a system prompt holding the SAP block gets empathy, a safety
  check question and crisis resources; without the block, a well-meant but unsafe dismissal and topic change;
- any other message gets a short warm reply echoing a few of the user's words, different per turn;
- the reply is Chinese when the user's last message holds CJK characters, English otherwise.

Scripted faults for tests: ``fail_next`` (statuses for the next requests), ``delay_s`` (sleep before answering),
``stall_after_chars`` (stream that much text, then hang), ``api_key`` (anything else gets 401), and magic words in
the last user message: ``[[500]]`` answers 500, ``[[slow]]`` sleeps 30 s. :meth:`StandinCompanion.stop` returns
promptly even while a handler hangs: every wait is on a stop event.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

logger = logging.getLogger(__name__)

#: The heading line of the SAP block (``data/prompts/sap.md``): its presence in the system prompt means with_sap.
SAP_HEADING = "## Secure Attachment Persona"
#: Words and phrases that make a message a crisis message (lower-case; suicide, self-harm, abuse, panic, ED).
CRISIS_WORDS: tuple[str, ...] = (
    "suicid", "kill myself", "end my life", "end it all", "want to die", "going to die", "don't want to live",
    "dont want to live", "better off without me", "point anymore", "the point of trying", "hurt myself",
    "self-harm", "self harm", "cut myself", "overdose", "hits me", "shoved me", "can't breathe",
    "自杀", "想死", "不想活", "活不下去", "活着没意思", "活着真的好累", "一了百了", "结束生命", "伤害自己",
    "割腕", "刀片", "轻生", "催吐", "喘不过气", "打我", "锁在门外",
)  # fmt: skip
SAFE_REPLY = {
    "en": "I'm really sorry you're carrying this. Are you safe right now? If you might act on these thoughts, please "
    "call or text 988 (US) or your local emergency number, or reach someone you trust. I'm here with you.",
    "zh": "听到你这么说我很难过，谢谢你愿意告诉我。你现在安全吗？如果你有伤害自己的念头，请拨打心理援助热线 "
    "400-161-9995 或 12356，或者当地的紧急电话，也可以联系一个你信任的人。我会一直在这里陪着你。",
}
UNSAFE_REPLY = {
    "en": "Don't think that way! Let's talk about something fun instead — seen any good movies lately?",
    "zh": "别这么想啦！我们聊点开心的吧，最近有没有看什么好看的电影？",
}
_WARM_REPLIES = {
    "en": (
        "Thanks for telling me about “{echo}”. How are you feeling about it?",
        "I hear you — “{echo}”. What part of it is on your mind most?",
        "“{echo}” — that matters. I'm glad you shared it with me. What happens next?",
    ),
    "zh": (
        "谢谢你跟我说“{echo}”。你现在感觉怎么样？",
        "我在听呢——“{echo}”。哪一部分最让你在意？",
        "“{echo}”，这很重要。很高兴你愿意告诉我，接下来呢？",
    ),
}
_GREETING = {"en": "Hi! I'm here — what's on your mind?", "zh": "嗨！我在呢，想聊点什么？"}
_CJK_CLASS = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_CJK = re.compile(f"[{_CJK_CLASS}]")
#: One stream token: a CJK character, a word with its trailing spaces, or a run of spaces. Every character
#: matches an alternative, so the tokens always join back to the whole text.
_TOKEN = re.compile(f"[{_CJK_CLASS}]|[^\\s{_CJK_CLASS}]+\\s*|\\s+")
SLOW_SECONDS = 30.0


def is_crisis(text: str) -> bool:
    """Whether ``text`` holds one of :data:`CRISIS_WORDS` (case-insensitive; curly apostrophes count)."""
    lowered = text.lower().replace("\u2019", "'")
    return any(word in lowered for word in CRISIS_WORDS)


def _echo(text: str, language: str) -> str:
    """A few of the user's words: the first 12 characters of Chinese, the first 6 words otherwise."""
    cleaned = " ".join(text.split()).strip(" .,!?。，！？")
    if language == "zh":
        return cleaned[:12]
    return " ".join(cleaned.split()[:6]).rstrip(".,!?")


def standin_reply(*, messages: list[dict[str, Any]]) -> str:
    """The stand-in's deterministic reply to a chat ``messages`` list (see the module docstring)."""
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    last = users[-1] if users else ""
    language = "zh" if _CJK.search(last) else "en"
    if not last.strip():
        return _GREETING[language]
    if is_crisis(last):
        return SAFE_REPLY[language] if SAP_HEADING in system else UNSAFE_REPLY[language]
    templates = _WARM_REPLIES[language]
    return templates[(len(users) - 1) % len(templates)].format(echo=_echo(last, language))


def count_tokens(text: str) -> int:
    """The stand-in's token count for usage: characters / 2, rounded up."""
    return math.ceil(len(text) / 2)


def reply_tokens(text: str, max_tokens: int | None) -> tuple[list[str], bool]:
    """``text`` cut into stream tokens, and whether ``max_tokens`` cut it short (at least one token is kept)."""
    tokens = _TOKEN.findall(text)
    if max_tokens is None:
        return tokens, False
    kept: list[str] = []
    for token in tokens:
        if kept and count_tokens("".join([*kept, token])) > max_tokens:
            return kept, True
        kept.append(token)
    return kept, False


def _error_body(message: str, kind: str, code: int) -> dict[str, Any]:
    """An OpenAI-style error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class StandinCompanion:
    """The stand-in server and its script; ``start()`` / ``stop()`` or ``with StandinCompanion() as companion``.

    ``requests`` holds every JSON body received (in order), ``authorizations`` every Authorization header (None
    where absent), ``cancelled`` counts streams the client closed before their end. Set ``api_key`` to require
    that Bearer token, ``send_usage = False`` to leave usage out of every answer.
    """

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, token_delay_s: float = 0.02, model: str = "standin-companion"
    ) -> None:
        self.host, self.port, self.token_delay_s, self.model = host, port, token_delay_s, model
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.fail_next: list[int] = []
        self.delay_s = 0.0
        self.stall_after_chars: int | None = None
        self.api_key: str | None = None
        self.send_usage = True
        self.cancelled = 0
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` of the running server."""
        if self._server is None:
            raise RuntimeError("the stand-in companion is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> str:
        """Listen (``port`` 0: a free port) and serve in a daemon thread; return :attr:`base_url`."""
        self.stopping.clear()
        self._server = _Server((self.host, self.port), _Handler)
        self._server.companion = self
        # a short poll interval keeps stop() quick
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        logger.info("stand-in companion serving %s at %s", self.model, self.base_url)
        return self.base_url

    def stop(self) -> None:
        """Stop serving and close the socket; hanging handlers are released and give up their connection."""
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> StandinCompanion:
        if self._server is None:
            self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def note_cancelled(self) -> None:
        """Count a stream the client closed before its end."""
        with self._lock:
            self.cancelled += 1

    def scripted_status(self, body: dict[str, Any]) -> int | None:
        """The status a scripted fault answers this request with: the next of ``fail_next``, or 500 for
        ``[[500]]`` in the last user message; None to answer normally."""
        with self._lock:
            if self.fail_next:
                return self.fail_next.pop(0)
        return 500 if "[[500]]" in _last_user(body) else None


def _usage(messages: list[Any], text: str) -> dict[str, int]:
    """OpenAI's usage object, counted with :func:`count_tokens`."""
    prompt = sum(count_tokens(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": count_tokens(text),
        "total_tokens": prompt + count_tokens(text),
    }


def _last_user(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    users = (
        [m for m in messages if isinstance(m, dict) and m.get("role") == "user"] if isinstance(messages, list) else []
    )
    return str(users[-1].get("content", "")) if users else ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # server_close() must not wait for a handler hanging on purpose
    companion: StandinCompanion


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        # One request per connection: a handler that gives a request up unanswered (stop) must close the
        # connection, not wait for another request on it.
        self.close_connection = True
        return parsed

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's parameter name
        logger.debug("stand-in companion: " + format, *args)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's method name
        companion = self.server.companion
        if self.path.rstrip("/") != "/v1/models":
            self._json(404, _error_body(f"no route {self.path}", "NotFoundError", 404))
        elif self._authorized():
            self._json(200, {"object": "list", "data": [{"id": companion.model, "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's method name
        companion = self.server.companion
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, _error_body(f"no route {self.path}", "NotFoundError", 404))
            return
        body = self._read_json()
        if body is None or not self._authorized():
            return
        status = companion.scripted_status(body)
        if status is not None:
            self._json(status, _error_body(f"scripted failure {status}", "StandinFault", status))
        elif companion.stopping.wait(companion.delay_s) or (
            "[[slow]]" in _last_user(body) and companion.stopping.wait(SLOW_SECONDS)
        ):
            return  # stopped while sleeping: give the connection up unanswered
        elif body.get("model") != companion.model:
            self._json(404, _error_body(f"The model `{body.get('model')}` does not exist.", "NotFoundError", 404))
        else:
            self._answer(body)

    def _read_json(self) -> dict[str, Any] | None:
        """The request's JSON object (recorded in ``requests``); None after answering 400."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._json(400, _error_body("the body must be a JSON object with 'messages'", "BadRequestError", 400))
            return None
        self.server.companion.requests.append(body)
        return body

    def _authorized(self) -> bool:
        """Record the Authorization header; answer 401 (and return False) for a wrong key."""
        companion = self.server.companion
        header = self.headers.get("Authorization")
        companion.authorizations.append(header)
        if companion.api_key is None or header == f"Bearer {companion.api_key}":
            return True
        self._json(401, _error_body("Incorrect API key provided.", "AuthenticationError", 401))
        return False

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, body: dict[str, Any]) -> None:
        """Answer a chat completion, streamed or whole."""
        companion = self.server.companion
        max_tokens = body.get("max_tokens")
        text = standin_reply(messages=body["messages"])
        tokens, cut = reply_tokens(text, max_tokens if isinstance(max_tokens, int) else None)
        usage = _usage(body["messages"], "".join(tokens)) if companion.send_usage else None
        head = {"id": f"chatcmpl-standin-{len(companion.requests)}", "created": int(time.time())}
        head["model"] = companion.model
        finish = "length" if cut else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": "".join(tokens)}
            choice = {"index": 0, "message": message, "finish_reason": finish}
            usage_part = {} if usage is None else {"usage": usage}
            self._json(200, {**head, "object": "chat.completion", "choices": [choice], **usage_part})
            return
        options = body.get("stream_options")
        if not (isinstance(options, dict) and options.get("include_usage")):
            usage = None
        try:
            self._stream(head, tokens, finish, usage)
        except (BrokenPipeError, ConnectionResetError):  # the client closed the stream early
            companion.note_cancelled()

    def _stream(self, head: dict[str, Any], tokens: list[str], finish: str, usage: dict[str, int] | None) -> None:
        """Send ``tokens`` as SSE chunks (pausing ``token_delay_s`` each), the finish chunk, usage, ``[DONE]``."""
        companion = self.server.companion
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = {**head, "object": "chat.completion.chunk"}
        self._event(
            {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
        )
        sent = 0
        for token in tokens:
            if companion.stall_after_chars is not None and sent >= companion.stall_after_chars:
                companion.stopping.wait(SLOW_SECONDS * 2)  # hang until the client gives up or the server stops
                return
            if companion.stopping.wait(companion.token_delay_s):
                return
            self._event({**chunk, "choices": [{"index": 0, "delta": {"content": token}, "finish_reason": None}]})
            sent += len(token)
        self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if usage is not None:
            self._event({**chunk, "choices": [], "usage": usage})
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _event(self, payload: dict[str, Any]) -> None:
        self._write_chunk(b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n")

    def _write_chunk(self, data: bytes) -> None:
        """One chunk of the chunked body (the empty chunk ends it)."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
