"""``h2h prescreen``: an LLM assesses each scenario keep / revise / discard, evidence first, k samples.

Multiple Evidence Calibration: each of the k samples (temperature > 0, seed = sample index) writes its evidence
and ends with ``[[KEEP]]``, ``[[REVISE]]`` or ``[[DISCARD]]``; the majority is the verdict, the normalised entropy
of the k verdicts its uncertainty. Answers are cached (:mod:`pipeline.llm`), so a killed run resumes with
the same samples; the output is written whole, in input order, once every scenario has its k samples.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.curation.faireval import SCREEN_CATEGORIES, parse_screen_answer, screen_majority, uncertainty
from pipeline.curation.records import SCREEN_VERDICTS, FlagKind, PrescreenVerdict, ScreenSample, ScreenVerdict
from pipeline.generation.base import Backend, Message, SamplingParams
from pipeline.llm import AnswerCache, Ask, AskStats, Prompt, ask_all, ask_digest, load_prompt
from pipeline.records import Scenario

logger = logging.getLogger(__name__)

PRESCREEN_PROMPT = "prescreen"
DEFAULT_SAMPLES = 3
DEFAULT_TEMPERATURE = 0.7


def screen_sampling(index: int, temperature: float) -> SamplingParams:
    """Sample ``index``'s parameters: the seed differs per sample so the k answers are k draws."""
    return SamplingParams(temperature=temperature, top_p=1.0, max_tokens=800, seed=index)


def screen_messages(scenario: Scenario, prompt: Prompt, flags: Sequence[FlagKind] = ()) -> list[Message]:
    """The pre-screen's messages: instructions, then the entry (and the preprocess flags, when there are any)."""
    turns = "\n".join(f"{turn.role}: {turn.content}" for turn in scenario.history)
    sections = [
        ("Subtask", scenario.subtask),
        ("Companion persona", scenario.persona),
        ("Conversation so far", turns),
        ("User's message", scenario.user_input),
        ("Reference reply", scenario.reference),
        ("Automatic checks flagged", ", ".join(sorted(set(flags)))),
    ]
    body = "\n\n".join(f"## {title}\n{text.strip()}" for title, text in sections if text.strip())
    return [{"role": "system", "content": prompt.text}, {"role": "user", "content": body}]


def aggregate(scenario_id: str, raws: Sequence[str], *, judge_model: str, prompt_version: str) -> PrescreenVerdict:
    """The verdict of one scenario from its k raw answers (in sample order)."""
    samples = []
    for index, raw in enumerate(raws):
        evidence, verdict, error = parse_screen_answer(raw)
        samples.append(ScreenSample(index=index, raw=raw, evidence=evidence, verdict=verdict, error=error))
    verdicts: list[ScreenVerdict] = [sample.verdict for sample in samples if sample.verdict is not None]
    winner = screen_majority(verdicts)
    counts = Counter(verdicts)
    spread = uncertainty(verdicts, SCREEN_CATEGORIES)
    unread = len(verdicts) < len(samples)
    return PrescreenVerdict(
        id=scenario_id,
        verdict=winner,
        votes={verdict: counts.get(verdict, 0) for verdict in SCREEN_VERDICTS},
        uncertainty=1.0 if winner is None else spread,
        needs_human=winner is None or spread > 0 or unread,
        reasons=[sample.evidence for sample in samples if sample.verdict == winner and sample.evidence],
        samples=samples,
        judge_model=judge_model,
        prompt_version=prompt_version,
    )


@dataclass
class PrescreenSummary:
    """Scenarios screened, per verdict, how many need a person, and the calls it took."""

    written: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    needs_human: int = 0
    incomplete: list[str] = field(default_factory=list)
    stats: AskStats = field(default_factory=AskStats)


def prescreen(
    scenarios: Sequence[Scenario],
    *,
    judge_model: str,
    backend: Backend,
    cache_path: Path,
    samples: int = DEFAULT_SAMPLES,
    temperature: float = DEFAULT_TEMPERATURE,
    flags: Mapping[str, Sequence[FlagKind]] | None = None,
    progress: bool = False,
) -> tuple[list[PrescreenVerdict], PrescreenSummary]:
    """Screen every scenario with k samples; return the verdicts (input order) of the scenarios whose k samples
    all came back, and the summary (``incomplete`` lists the others: a rerun retries them)."""
    prompt = load_prompt(PRESCREEN_PROMPT)
    flags = flags or {}
    asks = {
        scenario.id: [
            Ask(screen_messages(scenario, prompt, flags.get(scenario.id, ())), screen_sampling(index, temperature))
            for index in range(samples)
        ]
        for scenario in scenarios
    }
    everything = [ask for group in asks.values() for ask in group]
    answers, stats = ask_all(
        backend, judge_model, everything, AnswerCache(cache_path), desc="prescreen", progress=progress
    )
    summary = PrescreenSummary(stats=stats)
    verdicts = []
    for scenario_id, group in asks.items():
        raws = [answers.get(ask_digest(judge_model, ask.messages, ask.sampling)) for ask in group]
        if any(answer is None for answer in raws):
            summary.incomplete.append(scenario_id)
            continue
        verdict = aggregate(
            scenario_id,
            [answer.raw for answer in raws if answer is not None],
            judge_model=judge_model,
            prompt_version=prompt.version,
        )
        verdicts.append(verdict)
        summary.verdicts[str(verdict.verdict)] += 1
        summary.needs_human += verdict.needs_human
    summary.written = len(verdicts)
    return verdicts, summary
