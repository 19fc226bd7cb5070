"""The one cached LLM layer: the judge and every curation stage ask an OpenAI-compatible model through it.

A prompt is package data (``data/prompts/<name>.md``); its version ``<name>-v1-<8 hex>`` changes with its text.
Every answer is appended to a JSONL cache file (one fsynced line each, a torn last line from a kill dropped on
open) under a key derived from the request, so a rerun makes no new calls and a killed stage resumes with the same
answers. Requests go through a :class:`pipeline.generation.base.Backend`: for an endpoint the OpenAI-compatible
backend (:func:`openai_backend`), whose retries and concurrency bound ``h2h generate`` shares. A request that fails
for good is reported, never cached, and retried by a rerun.

Two cache files exist, one format each (:class:`CacheFormat`), both read and written here: the curation stages key
an answer by a digest of (model, messages, sampling) (:data:`ANSWERS`, field ``digest``); the judge keys it by
``(prompt_hash, model)`` (``pipeline.judge.JUDGE_CACHE``), as ``judge_cache.jsonl`` files always have.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.generation.base import Backend, GenerationRequest, Key, Message, SamplingParams, completions
from pipeline.jsonl import JsonlAppender, RecordError, iter_lines, parse_json_line, repair_torn_tail
from pipeline.paths import prompts_dir

if TYPE_CHECKING:
    from pipeline.generation.openai_compat import OpenAIBackend

logger = logging.getLogger(__name__)

#: A cache key: the values of a :class:`CacheFormat`'s ``key_fields``, in order.
CacheKey = tuple[str, ...]


@dataclass(frozen=True)
class Prompt:
    """A prompt file's text and its version (``<name>-v1-<8 hex of the text>``)."""

    name: str
    text: str

    @property
    def version(self) -> str:
        return f"{self.name}-v1-{hashlib.sha256(self.text.encode('utf-8')).hexdigest()[:8]}"


def load_prompt(name: str, path: Path | None = None) -> Prompt:
    """The prompt ``data/prompts/<name>.md`` (or the file at ``path``), stripped."""
    source = path or prompts_dir() / f"{name}.md"
    return Prompt(name, source.read_text(encoding="utf-8").strip())


def canonical_digest(value: Any) -> str:
    """SHA-256 over the canonical JSON of ``value`` (sorted keys, no spaces, UTF-8 kept as is)."""
    canonical = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def ask_digest(model: str, messages: list[Message], sampling: SamplingParams) -> str:
    """The digest of model, messages and sampling: the cache key of one curation call."""
    return canonical_digest({"model": model, "messages": messages, "sampling": sampling.as_record()})


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

    def count_call(self, usage: Mapping[str, int]) -> None:
        """Count one call made and add its token usage."""
        self.calls += 1
        for name, count in usage.items():
            self.tokens[name] = self.tokens.get(name, 0) + count

    def add(self, other: AskStats) -> None:
        self.calls += other.calls
        self.from_cache += other.from_cache
        self.failures.extend(other.failures)
        for name, count in other.tokens.items():
            self.tokens[name] = self.tokens.get(name, 0) + count


@dataclass(frozen=True)
class CacheFormat:
    """How a cache file keys its entries: the fields that make the key (the first one is the request's digest),
    and what an entry is called in the error a broken one raises."""

    key_fields: tuple[str, ...]
    entry_name: str


#: The curation stages' cache: answers by :func:`ask_digest`.
ANSWERS = CacheFormat(("digest",), "an LLM cache entry")


class AnswerCache:
    """Answers by key in one append-only JSONL file; each line is ``{<key fields>, "model", "raw", "usage"}``.

    Opening repairs a torn last line (a kill mid-write) and reads every entry (the first one of a key wins); an entry
    without a key field or ``raw`` raises :class:`pipeline.jsonl.RecordError` naming the missing field.
    """

    def __init__(self, path: Path, fmt: CacheFormat = ANSWERS) -> None:
        self.path = Path(path)
        self.format = fmt
        self._entries: dict[CacheKey, dict[str, Any]] = {}
        if self.path.exists():
            repair_torn_tail(self.path)
            for number, line in iter_lines(self.path):
                entry = parse_json_line(self.path, number, line)
                missing = {*fmt.key_fields, "raw"} - entry.keys()
                if missing:
                    raise RecordError(self.path, number, sorted(missing)[0], f"missing from {fmt.entry_name}")
                self._entries.setdefault(tuple(entry[name] for name in fmt.key_fields), entry)

    def answer(self, key: CacheKey) -> Answer | None:
        """The cached :class:`Answer` of ``key`` (``cached=True``), or None."""
        entry = self._entries.get(key)
        return None if entry is None else Answer(str(entry["raw"]), dict(entry.get("usage") or {}), cached=True)

    def put(self, appender: JsonlAppender, key: CacheKey, model: str, raw: str, usage: dict[str, int]) -> None:
        """Remember an answer and append it to the cache file through ``appender`` (one fsynced line)."""
        entry = {**dict(zip(self.format.key_fields, key, strict=True)), "model": model, "raw": raw, "usage": usage}
        appender.append(entry)
        self._entries[key] = entry


def send_and_cache(
    backend: Backend,
    asks: Mapping[CacheKey, Ask],
    *,
    model: str,
    cache: AnswerCache,
    cache_file: JsonlAppender,
    stats: AskStats,
    desc: str,
    progress: bool,
) -> Iterator[tuple[CacheKey, Answer]]:
    """Send each ask once (``backend`` answers as ``model``); cache every answer as it arrives, then yield it.

    Each call made is counted in ``stats`` with its tokens; a call that fails for good is added to
    ``stats.failures`` as ``(key[0], error)`` and never cached. Requests are keyed ``(key[0], model, desc)``.
    """
    keys: dict[Key, CacheKey] = {(key[0], model, desc): key for key in asks}
    requests = [
        GenerationRequest(request_key, asks[key].messages, asks[key].sampling) for request_key, key in keys.items()
    ]
    failed: list[tuple[Key, str]] = []
    for completion in completions(backend, requests, failures=failed, desc=desc, progress=progress):
        key = keys[completion.request.key]
        stats.count_call(completion.usage)
        cache.put(cache_file, key, model, completion.text, completion.usage)
        yield key, Answer(completion.text, completion.usage, cached=False)
    stats.failures.extend((request_key[0], error) for request_key, error in failed)


def ask_all(
    backend: Backend, model: str, asks: Sequence[Ask], cache: AnswerCache, *, desc: str, progress: bool
) -> tuple[dict[str, Answer], AskStats]:
    """Answer every ask, from ``cache`` (keyed by :func:`ask_digest`) where possible; return answers by digest and
    what it took. Identical asks are sent once. ``backend`` must answer as ``model`` (the model is in the digest).
    """
    stats = AskStats()
    answers: dict[str, Answer] = {}
    waiting: dict[CacheKey, Ask] = {}
    for ask in asks:
        digest = ask_digest(model, ask.messages, ask.sampling)
        cached = cache.answer((digest,))
        if cached is None:
            waiting[(digest,)] = ask
            continue
        if digest not in answers:
            stats.from_cache += 1
        answers[digest] = cached
    with JsonlAppender(cache.path) as cache_file:
        sent = send_and_cache(
            backend, waiting, model=model, cache=cache, cache_file=cache_file, stats=stats, desc=desc, progress=progress
        )
        answers.update((key[0], answer) for key, answer in sent)
    return answers, stats


def openai_backend(
    *, model: str, base_url: str | None, api_key: str | None, concurrency: int, timeout: float
) -> OpenAIBackend:
    """The OpenAI-compatible backend for ``model``: the judge's and every curation stage's (the same retry policy
    and concurrency bound as ``h2h generate``)."""
    from pipeline.generation.openai_compat import OpenAIBackend

    return OpenAIBackend(model=model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout)
