"""The LLM judge for itinerary levels I-III; the combined results (S, J, J_final, the flag) are in pipeline.results.

The judge asks an OpenAI-compatible model (temperature 0) to grade each itinerary response 0-5 by
the rubric in ``data/prompts/judge_rubric.md``. Answers are cached by ``(prompt hash, judge model)``
in ``judge_cache.jsonl`` through the one cached LLM layer (:mod:`pipeline.llm`), so a re-run makes no new calls;
requests go through the OpenAI-compatible backend's concurrency bound and retry policy. An answer that cannot be
parsed, or a score outside 0..5, keeps its raw text and gets ``J_judge = None``, which sends the item to human
adjudication.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.generation.base import Backend, Key, Message, SamplingParams, StageSummary
from pipeline.generation.runner import lacks_user_input, no_input_message
from pipeline.jsonl import JsonlAppender
from pipeline.llm import AnswerCache, Ask, AskStats, CacheFormat, CacheKey, Prompt, canonical_digest, send_and_cache
from pipeline.paths import prompts_dir
from pipeline.records import JUDGED_SUBTASKS, Judgment, Response, Scenario, storable_text, utc_now
from pipeline.results import judge_label
from pipeline.rundir import RunDir

logger = logging.getLogger(__name__)

RUBRIC_FILE = "judge_rubric.md"
#: The judge's answer cache, ``CACHE_DIR/judge_cache.jsonl``: answers by ``(prompt_hash, judge model)``.
CACHE_FILE = "judge_cache.jsonl"
JUDGE_CACHE = CacheFormat(("prompt_hash", "model"), "a judge cache entry")
#: The judge always samples greedily; ``seed`` only matters to servers that honour it.
JUDGE_SAMPLING = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=512, seed=0)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_BARE_NUMBER = re.compile(r"^\s*(?:score\s*[:=]?\s*)?(-?\d+(?:\.\d+)?)\s*(?:/\s*5)?\s*\.?\s*$", re.IGNORECASE)


def load_rubric(path: Path | None = None) -> str:
    """Return the rubric text (``data/prompts/judge_rubric.md`` unless ``path`` is given)."""
    return (path or prompts_dir() / RUBRIC_FILE).read_text(encoding="utf-8").strip()


def judge_prompt_version(rubric: str) -> str:
    """``judge-v1-<8 hex>``: changes whenever the rubric text changes."""
    return Prompt("judge", rubric).version


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
    return canonical_digest(messages)


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
    out, so a rerun retries them. ``backend`` must be built for ``judge_model``
    (see :func:`pipeline.llm.openai_backend`).
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
    cache = AnswerCache(Path(cache_dir) / CACHE_FILE, JUDGE_CACHE)
    with run.appender(run.judgments) as judgments, JsonlAppender(cache.path) as cache_file:
        summary = _judge_tasks(
            tasks, judge_model=judge_model, version=version, backend=backend, cache=cache, cache_file=cache_file,
            judgments=judgments, progress=progress,
        )  # fmt: skip
    logger.info("judge: %d calls, tokens %s", summary.calls, summary.tokens)
    return summary


def _judge_tasks(
    tasks: list[JudgeTask],
    *,
    judge_model: str,
    version: str,
    backend: Backend,
    cache: AnswerCache,
    cache_file: JsonlAppender,
    judgments: JsonlAppender,
    progress: bool,
) -> JudgeSummary:
    """Write a Judgment for every task: cached answers first, in task order, then each new answer as it arrives
    (cached at once) for every task sharing its prompt, so a kill loses nothing paid for. Identical prompts are asked
    once; a failed prompt fails every task waiting on it (``summary.failures``), and a rerun retries them.
    """
    summary = JudgeSummary(planned=len(tasks))
    waiting: dict[str, list[JudgeTask]] = {}
    for task in tasks:
        cached = cache.answer((task.digest, judge_model))
        if cached is None:
            waiting.setdefault(task.digest, []).append(task)
            continue
        judgments.append(
            judgment_for(task, judge_model=judge_model, version=version, raw=cached.raw, usage=cached.usage)
        )
        summary.from_cache += 1
        summary.written += 1
    asks: dict[CacheKey, Ask] = {
        (digest, judge_model): Ask(group[0].messages, JUDGE_SAMPLING) for digest, group in waiting.items()
    }
    stats = AskStats()
    sent = send_and_cache(
        backend, asks, model=judge_model, cache=cache, cache_file=cache_file, stats=stats, desc="judge",
        progress=progress,
    )  # fmt: skip
    for (digest, _), answer in sent:
        group = waiting[digest]
        judgments.extend(
            judgment_for(task, judge_model=judge_model, version=version, raw=answer.raw, usage=answer.usage)
            for task in group
        )
        summary.written += len(group)
    summary.calls, summary.tokens = stats.calls, stats.tokens
    summary.failures.extend((task.key, error) for digest, error in stats.failures for task in waiting[digest])
    return summary
