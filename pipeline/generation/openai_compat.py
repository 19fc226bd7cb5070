"""Any OpenAI-compatible chat endpoint (a vLLM server, hosted models) through ``openai.AsyncOpenAI``.

The retry policy is ours (the client's own ``max_retries`` is 0) so it is one tested piece that the
generate stage and the LLM judge share: exponential backoff with full jitter on 429, 5xx, timeouts,
connection errors and malformed bodies, honouring ``Retry-After``; any other 4xx fails at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from pipeline.generation.base import Completion, GenerationRequest, Message, Outcome, RequestFailure, usage_record

logger = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
PLACEHOLDER_API_KEY = "EMPTY"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before retrying a failed call."""

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: bool = True

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based).

        A server's ``Retry-After`` wins (capped at ``max_delay``); otherwise full jitter over
        ``base_delay * 2**(attempt-1)``, capped at ``max_delay``.
        """
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        ceiling = min(self.base_delay * 2 ** (attempt - 1), self.max_delay)
        return (rng or random).uniform(0.0, ceiling) if self.jitter else ceiling


def is_retryable(error: BaseException) -> bool:
    """True for errors worth retrying: 429, 5xx, timeouts, connection errors, a malformed body."""
    if isinstance(error, openai.APIConnectionError | json.JSONDecodeError):  # APITimeoutError is a subclass
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


def retry_after_seconds(error: BaseException) -> float | None:
    """The ``Retry-After`` of an HTTP error response in seconds (number or HTTP date), or None."""
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError):
        return None


async def call_with_retries(call: Callable[[], Awaitable[Any]], policy: RetryPolicy, *, sleep: Sleep) -> Any:
    """Await ``call()`` until it succeeds, retrying retryable errors per ``policy``; re-raise the last error."""
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return await call()
        except Exception as error:
            if attempt == policy.max_attempts or not is_retryable(error):
                raise
            wait = policy.delay(attempt, retry_after_seconds(error))
            logger.info("attempt %d failed (%s); retrying in %.2fs", attempt, describe_error(error), wait)
            await sleep(wait)
    raise AssertionError("unreachable: the loop returns or raises")


def describe_error(error: BaseException) -> str:
    """A one-line description of a failed call for logs and the run summary."""
    status = getattr(error, "status_code", None)
    prefix = f"HTTP {status}: " if status else ""
    return f"{type(error).__name__}: {prefix}{error}".splitlines()[0][:300]


@dataclass(frozen=True)
class ChatResult:
    """The first choice's text of one chat completion and its token usage."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatSettings:
    """Where and how to call an endpoint: URL, key (else env ``OPENAI_API_KEY``), concurrency bound,
    per-request timeout in seconds, retry policy, and the sleep used between retries."""

    base_url: str | None
    api_key: str | None = None
    concurrency: int = 8
    timeout: float = 120.0
    policy: RetryPolicy = RetryPolicy()
    sleep: Sleep = asyncio.sleep


class OpenAIChatClient:
    """Bounded-concurrency chat completions with our retry policy; create and use inside one event loop."""

    def __init__(self, settings: ChatSettings) -> None:
        key = settings.api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=key, max_retries=0, timeout=settings.timeout
        )
        self._semaphore = asyncio.Semaphore(settings.concurrency)
        self._policy = settings.policy
        self._sleep = settings.sleep

    async def complete(self, messages: list[Message], *, model: str, sampling: dict[str, Any]) -> ChatResult:
        """Return the first choice's text and usage; raise the last error once retries are spent.

        ``sampling`` holds temperature, top_p, max_tokens and seed (None values are left out).
        """
        arguments = {name: value for name, value in sampling.items() if value is not None}

        chat_messages: Any = messages  # our role/content dicts are the OpenAI message shape

        async def once() -> Any:
            return await self._client.chat.completions.create(model=model, messages=chat_messages, **arguments)

        async with self._semaphore:
            reply = await call_with_retries(once, self._policy, sleep=self._sleep)
        if not reply.choices or reply.choices[0].message.content is None:
            raise ValueError("the endpoint returned no message content")
        usage = reply.usage
        counts = usage_record(usage.prompt_tokens, usage.completion_tokens) if usage else {}
        return ChatResult(reply.choices[0].message.content, counts)

    async def close(self) -> None:
        await self._client.close()


def iterate_async(
    jobs: Sequence[Any],
    run_one: Callable[[Any], Coroutine[Any, Any, Any]],
    *,
    window: int,
    cleanup: Callable[[], Awaitable[None]] | None = None,
) -> Iterator[Any]:
    """Run ``run_one(job)`` for every job on a private event loop, at most ``window`` pending at once,
    and yield each result as it finishes. Closing the iterator early cancels what is still pending;
    ``cleanup()`` then runs on the same loop (clients bound to it must close there).
    """
    loop = asyncio.new_event_loop()
    pending: set[asyncio.Task[Any]] = set()
    next_job = 0
    try:
        while next_job < len(jobs) or pending:
            while next_job < len(jobs) and len(pending) < window:
                pending.add(loop.create_task(run_one(jobs[next_job])))
                next_job += 1
            done, pending = loop.run_until_complete(asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED))
            for task in done:
                yield task.result()
    finally:
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        if cleanup is not None:
            loop.run_until_complete(cleanup())
        loop.close()


class OpenAIBackend:
    """The generation backend for OpenAI-compatible endpoints (see :class:`pipeline.generation.base.Backend`)."""

    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = 120.0,
        policy: RetryPolicy = RetryPolicy(),
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.model = model
        self.settings = ChatSettings(
            base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout, policy=policy, sleep=sleep
        )
        self.concurrency = concurrency

    def manifest_settings(self) -> dict[str, Any]:
        """What the manifest records: the endpoint, concurrency and timeout (never the key)."""
        return {"base_url": self.settings.base_url, "concurrency": self.concurrency, "timeout": self.settings.timeout}

    def generate(self, requests: Sequence[GenerationRequest]) -> Iterator[Outcome]:
        """Yield one outcome per request as it finishes; failures after retries become RequestFailure."""
        holder: dict[str, OpenAIChatClient] = {}

        async def run_one(request: GenerationRequest) -> Outcome:
            if "client" not in holder:  # created inside the loop that uses it
                holder["client"] = OpenAIChatClient(self.settings)
            try:
                result = await holder["client"].complete(
                    request.messages, model=self.model, sampling=request.sampling.as_record()
                )
            except Exception as error:  # every failure is reported per request, never raised
                return RequestFailure(request, describe_error(error))
            return Completion(request, result.text, result.usage)

        async def close() -> None:
            if "client" in holder:
                await holder["client"].close()

        yield from iterate_async(requests, run_one, window=self.concurrency * 2, cleanup=close)
