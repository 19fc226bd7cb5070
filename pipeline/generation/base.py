"""The one interface every generation backend implements.

A backend takes a batch of :class:`GenerationRequest` and yields one outcome per request, in any
order: a :class:`Completion` (text + token usage) or a :class:`RequestFailure`. Failures are
reported by the runner and never written as responses, so a resumed run retries them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

#: ``(scenario_id, model, variant)``, the key of every per-response record.
Key = tuple[str, str, str]
Message = dict[str, str]

logger = logging.getLogger(__name__)


class BackendUnavailable(RuntimeError):
    """A backend's library or service cannot be used on this machine; the message says how to fix it."""


@dataclass(frozen=True)
class SamplingParams:
    """Sampling parameters shared by every backend; recorded in each Response's ``sampling``."""

    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 1024
    seed: int | None = 0

    def as_record(self) -> dict[str, float | int | None]:
        """Return the parameters as the plain dict stored in ``Response.sampling``."""
        return asdict(self)


@dataclass(frozen=True)
class GenerationRequest:
    """One chat completion to make: the record key, OpenAI-style messages and sampling."""

    key: Key
    messages: list[Message]
    sampling: SamplingParams = field(default_factory=SamplingParams)


@dataclass(frozen=True)
class Completion:
    """A finished request: the generated text and its token usage (prompt/completion/total)."""

    request: GenerationRequest
    text: str
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestFailure:
    """A request that failed for good (after the backend's retries); ``error`` says why."""

    request: GenerationRequest
    error: str


Outcome = Completion | RequestFailure


@dataclass
class StageSummary:
    """What one invocation of a stage that calls a backend did: records written, and the ``(key, error)``
    of the requests that failed for good (left undone, so a rerun retries them)."""

    written: int = 0
    failures: list[tuple[Key, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no request failed."""
        return not self.failures


class Backend(Protocol):
    """What the runner needs from a backend."""

    #: Stored in ``Response.backend``, e.g. ``"openai"`` or ``"vllm"``.
    name: str

    def generate(self, requests: Sequence[GenerationRequest]) -> Iterator[Outcome]:
        """Yield exactly one outcome per request, each as soon as it is known (order not guaranteed)."""
        ...

    def manifest_settings(self) -> dict[str, Any]:
        """What the run's manifest records about this backend (endpoint, parallelism, engine options...)."""
        ...


def usage_record(prompt_tokens: int | None, completion_tokens: int | None) -> dict[str, int]:
    """Return the ``usage`` dict stored with a response, leaving out counts a backend did not report."""
    usage: dict[str, int] = {}
    if prompt_tokens is not None:
        usage["prompt_tokens"] = int(prompt_tokens)
    if completion_tokens is not None:
        usage["completion_tokens"] = int(completion_tokens)
    if prompt_tokens is not None and completion_tokens is not None:
        usage["total_tokens"] = int(prompt_tokens) + int(completion_tokens)
    return usage


def completions(
    backend: Backend,
    requests: Sequence[GenerationRequest],
    *,
    failures: list[tuple[Key, str]],
    desc: str,
    progress: bool,
) -> Iterator[Completion]:
    """Send ``requests`` to ``backend`` and yield each :class:`Completion` as it arrives.

    Every :class:`RequestFailure` is logged and appended to ``failures`` as ``(request key, error)``
    instead of being yielded; a tqdm bar on stderr counts both (hidden unless ``progress``).
    """
    from tqdm import tqdm

    with tqdm(total=len(requests), desc=desc, unit="request", disable=not progress) as bar:
        for outcome in backend.generate(requests):
            bar.update(1)
            if isinstance(outcome, RequestFailure):
                logger.warning("%s request %s failed: %s", desc, outcome.request.key, outcome.error)
                failures.append((outcome.request.key, outcome.error))
                continue
            yield outcome
