"""Cached LLM calls shared by simulate, the sensitive-content classifier, prescreen and judge-pairs.

A prompt is package data (``pipeline/resources/prompts/<name>.md``); its version ``<name>-v1-<8 hex>`` changes
with its text. Every answer is cached in an append-only JSONL file by a digest of (model, messages, sampling),
so the prompt text and version are part of the key, a rerun makes no new calls, and a killed stage resumes with
the same answers. Requests go through a :class:`pipeline.generation.base.Backend` (the OpenAI-compatible backend's
retries and concurrency bound); a request that fails for good is reported, never cached, and retried by a rerun.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.generation.base import Backend, GenerationRequest, Message, SamplingParams, completions
from pipeline.jsonl import JsonlAppender, RecordError, iter_lines, parse_json_line, repair_torn_tail
from pipeline.paths import prompts_dir

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prompt:
    """A prompt file's text and its version (``<name>-v1-<8 hex of the text>``)."""

    name: str
    text: str

    @property
    def version(self) -> str:
        return f"{self.name}-v1-{hashlib.sha256(self.text.encode('utf-8')).hexdigest()[:8]}"


def load_prompt(name: str, path: Path | None = None) -> Prompt:
    """The prompt ``pipeline/resources/prompts/<name>.md`` (or the file at ``path``), stripped."""
    source = path or prompts_dir() / f"{name}.md"
    return Prompt(name, source.read_text(encoding="utf-8").strip())


def ask_digest(model: str, messages: list[Message], sampling: SamplingParams) -> str:
    """SHA-256 over the canonical JSON of model, messages and sampling: the cache key of one call."""
    payload = {"model": model, "messages": messages, "sampling": sampling.as_record()}
    canonical = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Ask:
    """One call to make: the messages and sampling (the backend's model answers)."""

    messages: list[Message]
    sampling: SamplingParams


@dataclass(frozen=True)
class Answer:
    """The model's text for one :class:`Ask`, its token usage, and whether it came from the cache."""

    raw: str
    usage: dict[str, int]
    cached: bool


@dataclass
class AskStats:
    """Calls made, answers from the cache, tokens used, and the ``(digest, error)`` of calls that failed."""

    calls: int = 0
    from_cache: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)

    def add(self, other: AskStats) -> None:
        self.calls += other.calls
        self.from_cache += other.from_cache
        self.failures.extend(other.failures)
        for name, count in other.tokens.items():
            self.tokens[name] = self.tokens.get(name, 0) + count


class AnswerCache:
    """Answers by digest in one append-only JSONL file (a torn last line from a kill is dropped on open)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._entries: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            repair_torn_tail(self.path)
            for number, line in iter_lines(self.path):
                entry = parse_json_line(self.path, number, line)
                if not {"digest", "raw"} <= entry.keys():
                    raise RecordError(self.path, number, "digest", "an LLM cache entry needs digest and raw")
                self._entries.setdefault(entry["digest"], entry)

    def get(self, digest: str) -> dict[str, Any] | None:
        return self._entries.get(digest)

    def put(self, appender: JsonlAppender, digest: str, model: str, raw: str, usage: dict[str, int]) -> None:
        entry = {"digest": digest, "model": model, "raw": raw, "usage": usage}
        appender.append(entry)
        self._entries[digest] = entry


def ask_all(
    backend: Backend, model: str, asks: Sequence[Ask], cache: AnswerCache, *, desc: str, progress: bool
) -> tuple[dict[str, Answer], AskStats]:
    """Answer every ask, from the cache where possible; return answers by digest and what it took.

    Identical asks are sent once. ``backend`` must answer as ``model`` (the model is part of the digest).
    """
    stats = AskStats()
    answers: dict[str, Answer] = {}
    waiting: dict[str, Ask] = {}
    for ask in asks:
        digest = ask_digest(model, ask.messages, ask.sampling)
        entry = cache.get(digest)
        if entry is not None:
            if digest not in answers:
                stats.from_cache += 1
            answers[digest] = Answer(str(entry["raw"]), dict(entry.get("usage") or {}), cached=True)
        else:
            waiting[digest] = ask
    requests = [GenerationRequest((digest, model, desc), ask.messages, ask.sampling) for digest, ask in waiting.items()]
    failed: list[tuple[tuple[str, str, str], str]] = []
    with JsonlAppender(cache.path) as cache_file:
        for completion in completions(backend, requests, failures=failed, desc=desc, progress=progress):
            digest = completion.request.key[0]
            stats.calls += 1
            for name, count in completion.usage.items():
                stats.tokens[name] = stats.tokens.get(name, 0) + count
            cache.put(cache_file, digest, model, completion.text, completion.usage)
            answers[digest] = Answer(completion.text, completion.usage, cached=False)
    stats.failures.extend((key[0], error) for key, error in failed)
    return answers, stats


def openai_backend(
    *, model: str, base_url: str | None, api_key: str | None, concurrency: int, timeout: float
) -> Backend:
    """The OpenAI-compatible backend for ``model`` (the same retry policy as ``h2h generate`` and the judge)."""
    from pipeline.generation.openai_compat import OpenAIBackend

    return OpenAIBackend(model=model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout)
