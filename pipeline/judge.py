"""The LLM judge for itinerary levels I-III; the combined results (S, J, J_final, the flag) are in pipeline.results.

The judge asks an OpenAI-compatible model (temperature 0) to grade each itinerary response 0-5 by
the rubric in ``pipeline/resources/prompts/judge_rubric.md``. Answers are cached by ``(prompt hash, judge model)``
in a JSONL cache, so a re-run makes no new calls; requests go through the generation backend's
concurrency bound and retry policy. An answer that cannot be parsed, or a score outside 0..5, keeps
its raw text and gets ``J_judge = None``, which sends the item to human adjudication.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.generation.base import (
    Backend,
    GenerationRequest,
    Key,
    Message,
    SamplingParams,
    StageSummary,
    completions,
)
from pipeline.generation.runner import lacks_user_input, no_input_message
from pipeline.jsonl import JsonlAppender, RecordError, iter_lines, parse_json_line, repair_torn_tail
from pipeline.paths import prompts_dir
from pipeline.records import JUDGED_SUBTASKS, Judgment, Response, Scenario, storable_text, utc_now
from pipeline.results import judge_label
from pipeline.rundir import RunDir

if TYPE_CHECKING:
    from pipeline.generation.openai_compat import OpenAIBackend

logger = logging.getLogger(__name__)

RUBRIC_FILE = "judge_rubric.md"
#: The judge always samples greedily; ``seed`` only matters to servers that honour it.
JUDGE_SAMPLING = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=512, seed=0)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_BARE_NUMBER = re.compile(r"^\s*(?:score\s*[:=]?\s*)?(-?\d+(?:\.\d+)?)\s*(?:/\s*5)?\s*\.?\s*$", re.IGNORECASE)


def load_rubric(path: Path | None = None) -> str:
    """Return the rubric text (``pipeline/resources/prompts/judge_rubric.md`` unless ``path`` is given)."""
    return (path or prompts_dir() / RUBRIC_FILE).read_text(encoding="utf-8").strip()


def judge_prompt_version(rubric: str) -> str:
    """``judge-v1-<8 hex>``: changes whenever the rubric text changes."""
    return f"judge-v1-{hashlib.sha256(rubric.encode('utf-8')).hexdigest()[:8]}"


def build_judge_messages(scenario: Scenario, answer: str, rubric: str) -> list[Message]:
    """The judge's chat messages: the rubric as system prompt, then one user message with the material."""
    context = scenario.context
    sections = [
        ("Companion persona", scenario.persona),
        ("User's schedule", "\n".join(f"- {item}" for item in context.schedule)),
        ("Memories about the user", "\n".join(f"- {item}" for item in context.memories)),
        ("Date", context.date or ""),
        ("Location", context.location or ""),
        ("Conversation so far", "\n".join(f"{turn.role}: {turn.content}" for turn in scenario.history)),
        ("User's request", scenario.user_input),
        ("Reference answer", scenario.reference),
        ("Candidate answer to grade", answer),
    ]
    body = "\n\n".join(f"## {title}\n{text.strip()}" for title, text in sections if text.strip())
    return [{"role": "system", "content": rubric}, {"role": "user", "content": body}]


def prompt_hash(messages: list[Message]) -> str:
    """SHA-256 over the canonical JSON of ``messages``: the cache key together with the judge model."""
    canonical = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Verdict:
    """A parsed judge answer: ``score`` in [0, 5] or None with ``error`` saying why."""

    score: float | None
    reasons: str | None = None
    error: str | None = None


def _json_objects(text: str) -> list[Any]:
    """Every JSON value found in ``text``: fenced blocks first, then the whole text, then each ``{...}``."""
    candidates = [match.strip() for match in _FENCE.findall(text)] + [text.strip()]
    found: list[Any] = []
    for candidate in candidates:
        try:
            found.append(json.loads(candidate))
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for start in (index for index, char in enumerate(text) if char == "{"):
        try:
            found.append(decoder.raw_decode(text, start)[0])
        except json.JSONDecodeError:
            continue
    return found


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def parse_judge_answer(raw: str | None) -> Verdict:
    """Read the judge's score from ``raw``: a JSON object with ``score`` (possibly fenced or inside
    other text), else a bare number. Unparsable answers and scores outside 0..5 give ``score=None``.
    """
    if raw is None or not raw.strip():
        return Verdict(None, error="empty answer")
    score, reasons = None, None
    for value in _json_objects(raw):
        if isinstance(value, dict) and "score" in value:
            score, reasons = _as_number(value["score"]), value.get("reasons")
            break
    if score is None:
        bare = _BARE_NUMBER.match(raw)
        score = float(bare.group(1)) if bare else None
    if score is None:
        return Verdict(None, error="no score found in the judge's answer")
    if not 0.0 <= score <= 5.0:
        return Verdict(None, reasons=reasons, error=f"score {score:g} is outside 0..5")
    return Verdict(score, reasons=str(reasons) if reasons is not None else None)


class JudgeInputError(ValueError):
    """The run cannot be judged as it stands (e.g. a response names a scenario the run does not hold)."""


class JudgeCache:
    """Judge answers by ``(prompt_hash, judge_model)`` in ``DIR/judge_cache.jsonl`` (append-only)."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / "judge_cache.jsonl"
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}
        if self.path.exists():
            repair_torn_tail(self.path)
            for number, line in iter_lines(self.path):
                entry = parse_json_line(self.path, number, line)
                missing = {"prompt_hash", "model", "raw"} - entry.keys()
                if missing:
                    raise RecordError(self.path, number, sorted(missing)[0], "missing from a judge cache entry")
                self._entries.setdefault((entry["prompt_hash"], entry["model"]), entry)

    def get(self, digest: str, model: str) -> dict[str, Any] | None:
        """The cached ``{"raw", "usage", ...}`` entry, or None."""
        return self._entries.get((digest, model))

    def put(self, appender: JsonlAppender, digest: str, model: str, raw: str, usage: dict[str, int]) -> None:
        """Remember an answer and append it to the cache file through ``appender`` (one fsynced line)."""
        entry = {"prompt_hash": digest, "model": model, "raw": raw, "usage": usage}
        appender.append(entry)
        self._entries[(digest, model)] = entry


@dataclass(frozen=True)
class JudgeTask:
    """One response to judge and the prompt that judges it."""

    key: Key
    messages: list[Message]
    digest: str


def plan_judge_tasks(
    scenarios: Mapping[str, Scenario], responses: Mapping[Key, Response], done: set[Key], rubric: str
) -> list[JudgeTask]:
    """The responses of itinerary levels I-III not judged yet, each with its judge prompt, in response order."""
    tasks = []
    for key, response in responses.items():
        if key in done:
            continue
        scenario = scenarios.get(response.scenario_id)
        if scenario is None:
            raise JudgeInputError(
                f"response {key} names scenario {response.scenario_id!r}, which the run does not hold"
            )
        if scenario.subtask in JUDGED_SUBTASKS:
            messages = build_judge_messages(scenario, response.text, rubric)
            tasks.append(JudgeTask(key, messages, prompt_hash(messages)))
    return tasks


def refuse_missing_input(run: RunDir, scenarios: Mapping[str, Scenario], responses: Mapping[Key, Response]) -> None:
    """Raise :class:`JudgeInputError` when a response the judge would grade (itinerary I-III) answers a scenario
    without user input: the rubric grades a reply to a request, and a scenario imported from the public release
    has none (its response was generated from no prompt). Checked before any call; ``h2h judge --no-judge``
    builds results from S alone."""
    judged = [
        scenarios[response.scenario_id]
        for response in responses.values()
        if response.scenario_id in scenarios and scenarios[response.scenario_id].subtask in JUDGED_SUBTASKS
    ]
    missing = [scenario for scenario in judged if lacks_user_input(scenario)]
    if missing:
        message = no_input_message(
            where=str(run.scenarios), missing=missing, total=len(judged), stage="judging",
            what="scenarios of the itinerary I-III responses to judge",
        )  # fmt: skip
        raise JudgeInputError(f"{message}; `h2h judge --run {run.root} --no-judge` writes results from S alone")


def kept_judgments(run: RunDir, *, judge_model: str, version: str, rejudge: bool) -> set[Key]:
    """The keys already judged by ``judge_model`` with rubric ``version``: the work a resumed judge skips.

    Judgments by another judge never mix with these in one run: :class:`JudgeInputError`, or with
    ``rejudge`` they move to ``RUN/judgments.replaced-<time>.jsonl`` and nothing counts as judged.
    """
    existing = run.load(run.judgments, Judgment)
    wanted = judge_label(judge_model, version)
    others = sorted({judge_label(j.judge_model, j.prompt_version) for j in existing.values()} - {wanted})
    if not others:
        return set(existing)
    if not rejudge:
        raise JudgeInputError(
            f"{run.judgments} holds judgments by {others[0]}, not {wanted}; judges never mix in one run: "
            "judge into a new run directory, or pass --rejudge to replace them"
        )
    archive = run.judgments.with_name(f"judgments.replaced-{utc_now():%Y%m%dT%H%M%S}.jsonl")
    shutil.move(run.judgments, archive)
    logger.warning("--rejudge: moved %d earlier judgments to %s", len(existing), archive)
    return set()


def judgment_for(task: JudgeTask, *, judge_model: str, version: str, raw: str, usage: dict[str, int]) -> Judgment:
    """The Judgment record of one judge answer (parsed; the raw text is always kept)."""
    raw, replaced = storable_text(raw)  # a judge's answer is model text too: a NUL must not stop the stage
    if replaced:
        logger.warning("judge %s: %d character(s) no store can hold (NUL) replaced by U+FFFD", task.key, replaced)
    verdict = parse_judge_answer(raw)
    scenario_id, model, variant = task.key
    return Judgment(
        scenario_id=scenario_id,
        model=model,
        variant=variant,
        judge_model=judge_model,
        prompt_version=version,
        prompt_hash=task.digest,
        raw=raw,
        J_judge=verdict.score,
        error=verdict.error,
        usage=usage,
    )


def judge_requests(tasks: list[JudgeTask], judge_model: str) -> list[GenerationRequest]:
    """One request per distinct prompt (identical prompts are asked once), keyed by the prompt hash."""
    unique = {task.digest: task for task in tasks}
    return [
        GenerationRequest((digest, judge_model, "judge"), task.messages, JUDGE_SAMPLING)
        for digest, task in unique.items()
    ]


@dataclass
class JudgeSummary(StageSummary):
    """What one judge invocation did (besides :class:`StageSummary`'s written and failures); ``tokens`` sums
    the token usage of the calls made."""

    planned: int = 0
    from_cache: int = 0
    calls: int = 0
    tokens: dict[str, int] = field(default_factory=dict)


def run_judge(
    run: RunDir,
    *,
    judge_model: str,
    backend: Backend,
    cache_dir: Path,
    rubric: str | None = None,
    rejudge: bool = False,
    progress: bool = True,
) -> JudgeSummary:
    """Judge the run's unjudged itinerary I-III responses into ``RUN/judgments.jsonl`` (resumable).

    Cached answers are used without a call; failed requests are reported in the summary and left
    out, so a rerun retries them. ``backend`` must be built for ``judge_model`` (see :func:`judge_backend`).
    Judgments by another judge model or rubric version are refused (:class:`JudgeInputError`) unless
    ``rejudge``, which moves them aside and judges every item again. A response to a scenario without user input
    is refused (:class:`JudgeInputError`) before anything is moved or sent.
    """
    rubric = rubric if rubric is not None else load_rubric()
    version = judge_prompt_version(rubric)
    scenarios, responses = run.load_scenarios(), run.load(run.responses, Response)
    refuse_missing_input(run, scenarios, responses)
    done = kept_judgments(run, judge_model=judge_model, version=version, rejudge=rejudge)
    tasks = plan_judge_tasks(scenarios, responses, done, rubric)
    cache = JudgeCache(cache_dir)
    summary = JudgeSummary(planned=len(tasks))
    with run.appender(run.judgments) as judgments, JsonlAppender(cache.path) as cache_file:
        waiting: dict[str, list[JudgeTask]] = {}
        for task in tasks:
            cached = cache.get(task.digest, judge_model)
            if cached is None:
                waiting.setdefault(task.digest, []).append(task)
                continue
            judgments.append(judgment_for(task, judge_model=judge_model, version=version, **_answer(cached)))
            summary.from_cache += 1
            summary.written += 1
        requests = judge_requests([group[0] for group in waiting.values()], judge_model)
        _ask_judge(backend, requests, waiting, cache, cache_file, judgments, summary, version, progress)
    logger.info("judge: %d calls, tokens %s", summary.calls, summary.tokens)
    return summary


def _answer(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"raw": entry["raw"], "usage": dict(entry.get("usage") or {})}


def _ask_judge(
    backend: Backend,
    requests: list[GenerationRequest],
    waiting: Mapping[str, list[JudgeTask]],
    cache: JudgeCache,
    cache_file: JsonlAppender,
    judgments: JsonlAppender,
    summary: JudgeSummary,
    version: str,
    progress: bool,
) -> None:
    """Send the uncached prompts; cache each answer and write a Judgment for every response sharing it.

    A failed prompt fails every response waiting on it (recorded in ``summary.failures``).
    """
    failed: list[tuple[Key, str]] = []
    for completion in completions(backend, requests, failures=failed, desc="judge", progress=progress):
        digest, judge_model, _ = completion.request.key
        summary.calls += 1
        for name, count in completion.usage.items():
            summary.tokens[name] = summary.tokens.get(name, 0) + count
        cache.put(cache_file, digest, judge_model, completion.text, completion.usage)
        group = waiting[digest]
        judgments.extend(
            judgment_for(task, judge_model=judge_model, version=version, raw=completion.text, usage=completion.usage)
            for task in group
        )
        summary.written += len(group)
    for (digest, _, _), error in failed:
        summary.failures.extend((task.key, error) for task in waiting[digest])


def judge_backend(
    *, judge_model: str, base_url: str | None, api_key: str | None, concurrency: int, timeout: float
) -> OpenAIBackend:
    """The OpenAI-compatible backend the judge sends its prompts through (same retry policy as generate)."""
    from pipeline.generation.openai_compat import OpenAIBackend

    return OpenAIBackend(
        model=judge_model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout
    )
