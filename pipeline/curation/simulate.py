"""``h2h simulate``: an LLM plays the user against the companion; the conversations become scenarios.

Output folder::

    DIR/scenarios.jsonl    the kept scenarios (our Scenario format), in plan order
    DIR/provenance.jsonl   one Provenance per kept scenario: models, axes, seed, prompt versions
    DIR/duplicates.jsonl   the near-duplicates left out, each naming the scenario it repeats (never silent)
    DIR/diversity.json     counts per axis value, duplicates removed, distinct-1/2 of the user messages
    DIR/cache/simulate.jsonl   every model answer (resuming replays them: same result as a clean run)

Conversations run in chunks (all of a chunk's user turns in one batch, then all companion turns...). A finished
chunk is checked for near-duplicates in plan order and appended, so a killed run resumes at the first chunk not
written and the files equal a clean run's.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.curation.dedup import DEFAULT_NEAR_THRESHOLD, DuplicateIndex
from pipeline.curation.records import Provenance, RemovedDuplicate
from pipeline.curation.simulate_plan import (
    USER_PROMPT,
    Axes,
    Draw,
    companion_messages,
    companion_sampling,
    draw,
    user_messages,
    user_sampling,
)
from pipeline.dataset import guess_language
from pipeline.generation.base import Backend
from pipeline.jsonl import JsonlAppender, atomic_target, read_records, repair_torn_tail, write_records
from pipeline.llm import AnswerCache, Ask, AskStats, ask_all, ask_digest, load_prompt
from pipeline.prompts import prompt_version
from pipeline.records import Scenario, ScenarioTags, Turn

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Side:
    """One side of the conversation: a backend answering as ``model``, at ``temperature``."""

    model: str
    backend: Backend
    temperature: float


@dataclass
class SimulateSummary:
    planned: int = 0
    written: int = 0
    duplicates: int = 0
    failed: list[str] = field(default_factory=list)
    stats: AskStats = field(default_factory=AskStats)


class SimulationDir:
    """The output folder's files."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.scenarios = self.root / "scenarios.jsonl"
        self.provenance = self.root / "provenance.jsonl"
        self.duplicates = self.root / "duplicates.jsonl"
        self.diversity = self.root / "diversity.json"
        self.cache = self.root / "cache" / "simulate.jsonl"

    def kept(self) -> list[Scenario]:
        return self._read(self.scenarios, Scenario)

    def removed(self) -> list[RemovedDuplicate]:
        return self._read(self.duplicates, RemovedDuplicate)

    def provenances(self) -> list[Provenance]:
        return self._read(self.provenance, Provenance)

    @staticmethod
    def _read(path: Path, model: type) -> list:  # type: ignore[type-arg]
        if not path.exists():
            return []
        repair_torn_tail(path)
        return read_records(path, model)


def converse(
    draws: list[Draw],
    *,
    subtask: str,
    turns: int,
    axes: Axes,
    user: Side,
    companion: Side,
    cache: AnswerCache,
    stats: AskStats,
    progress: bool,
) -> dict[str, list[Turn]]:
    """Run the chunk's conversations round by round; return each finished one's turns (failed ones are absent)."""
    prompt = load_prompt(USER_PROMPT)
    conversations: dict[str, list[Turn]] = {item.id: [] for item in draws}
    for turn in range(turns):
        for side in (user, companion):
            live = [item for item in draws if item.id in conversations]
            asks = {
                item.id: _ask(item, side is user, turn, subtask, axes, prompt, conversations[item.id], side)
                for item in live
            }
            answers, round_stats = ask_all(
                side.backend,
                side.model,
                list(asks.values()),
                cache,
                desc=f"simulate {turn + 1}/{turns}",
                progress=progress,
            )
            stats.add(round_stats)
            for item_id, ask in asks.items():
                answer = answers.get(ask_digest(side.model, ask.messages, ask.sampling))
                if answer is None or not answer.raw.strip():
                    conversations.pop(item_id)
                    continue
                conversations[item_id].append(
                    Turn(role="user" if side is user else "assistant", content=answer.raw.strip())
                )
    return conversations


def _ask(
    item: Draw, is_user: bool, turn: int, subtask: str, axes: Axes, prompt: object, turns: list[Turn], side: Side
) -> Ask:
    if is_user:
        messages = user_messages(item, prompt, subtask, axes.subtask_goals, turns)  # type: ignore[arg-type]
        return Ask(messages, user_sampling(item, turn, side.temperature))
    messages = companion_messages(item, subtask, turns[:-1], turns[-1].content)
    return Ask(messages, companion_sampling(item, turn, side.temperature))


def to_scenario(item: Draw, subtask: str, turns: list[Turn]) -> Scenario:
    """The last user turn is the input, the last companion turn the reference, the rest the history."""
    reference, user_input = turns[-1].content, turns[-2].content
    return Scenario(
        id=item.id,
        subtask=subtask,
        persona=item.companion.persona,
        history=turns[:-2],
        user_input=user_input,
        reference=reference,
        tags=ScenarioTags(language=guess_language(user_input + reference), emotion=item.axes.emotion),
        source=f"simulate:{item.id}",
    )


def simulate(
    out: SimulationDir,
    *,
    subtask: str,
    count: int,
    seed: int,
    turns: int,
    axes: Axes,
    user: Side,
    companion: Side,
    chunk: int = 32,
    near_threshold: float = DEFAULT_NEAR_THRESHOLD,
    progress: bool = False,
) -> SimulateSummary:
    """Simulate ``count`` conversations into ``out`` (resumable); return what this invocation did."""
    out.root.mkdir(parents=True, exist_ok=True)
    kept, removed = out.kept(), out.removed()
    done = {scenario.id for scenario in kept} | {item.id for item in removed}
    provenance = [item for item in out.provenances() if item.id in done]
    write_records(out.provenance, provenance)  # drops a line whose scenario a kill left unwritten
    index = DuplicateIndex(near_threshold=near_threshold)
    for scenario in kept:
        index.add(scenario.id, _dedup_text(scenario))
    plan = [draw(axes, subtask=subtask, seed=seed, index=number) for number in range(count)]
    todo = [item for item in plan if item.id not in done]
    summary = SimulateSummary(planned=len(todo))
    cache = AnswerCache(out.cache)
    versions = {"prompt_version": load_prompt(USER_PROMPT).version, "companion_prompt_version": prompt_version()}
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        finished = converse(
            batch,
            subtask=subtask,
            turns=turns,
            axes=axes,
            user=user,
            companion=companion,
            cache=cache,
            stats=summary.stats,
            progress=progress,
        )
        summary.failed.extend(item.id for item in batch if item.id not in finished)
        _write_chunk(
            out,
            [item for item in batch if item.id in finished],
            finished,
            index,
            summary,
            subtask=subtask,
            seed=seed,
            turns=turns,
            user=user,
            companion=companion,
            versions=versions,
        )
    write_diversity(out)
    return summary


def _dedup_text(scenario: Scenario) -> str:
    return f"{scenario.user_input}\n{scenario.reference}"


def _write_chunk(
    out: SimulationDir,
    items: list[Draw],
    finished: dict[str, list[Turn]],
    index: DuplicateIndex,
    summary: SimulateSummary,
    *,
    subtask: str,
    seed: int,
    turns: int,
    user: Side,
    companion: Side,
    versions: dict[str, str],
) -> None:
    """Check the chunk's scenarios for repeats in plan order; append kept ones (provenance first) and repeats."""
    with (
        JsonlAppender(out.provenance) as provenance,
        JsonlAppender(out.scenarios) as scenarios,
        JsonlAppender(out.duplicates) as duplicates,
    ):
        for item in items:
            scenario = to_scenario(item, subtask, finished[item.id])
            repeat = index.check(_dedup_text(scenario))
            if repeat is not None:
                duplicates.append(
                    RemovedDuplicate(
                        id=scenario.id,
                        of=repeat.of,
                        similarity=repeat.similarity,
                        method=repeat.method,
                        user_input=scenario.user_input,
                        reference=scenario.reference,
                    )
                )
                summary.duplicates += 1
                continue
            index.add(scenario.id, _dedup_text(scenario))
            provenance.append(
                Provenance(
                    id=scenario.id,
                    subtask=subtask,
                    index=item.index,
                    seed=seed,
                    simulator_model=user.model,
                    companion_model=companion.model,
                    axes=item.axes,
                    turns=turns,
                    **versions,
                )
            )
            scenarios.append(scenario)
            summary.written += 1


def distinct_n(texts: list[str], n: int) -> float:
    """Distinct-n over characters (suits Chinese and English alike): distinct n-grams / all n-grams."""
    grams = [text[i : i + n] for text in texts for i in range(max(len(text) - n + 1, 0))]
    return round(len(set(grams)) / len(grams), 4) if grams else 0.0


def diversity(out: SimulationDir) -> dict[str, object]:
    """Counts per axis value over the kept scenarios, the duplicates removed, and distinct-1/2 of the inputs."""
    provenance = out.provenances()
    inputs = [scenario.user_input for scenario in out.kept()]
    axes = {
        name: dict(sorted(Counter(getattr(item.axes, name) for item in provenance).items()))
        for name in ("companion", "user_persona", "emotion", "complexity", "interaction_type")
    }
    removed = out.removed()
    return {
        "kept": len(inputs),
        "duplicates_removed": len(removed),
        "duplicates": [
            {"id": item.id, "of": item.of, "similarity": item.similarity, "method": item.method} for item in removed
        ],
        "axes": axes,
        "distinct_1": distinct_n(inputs, 1),
        "distinct_2": distinct_n(inputs, 2),
    }


def write_diversity(out: SimulationDir) -> dict[str, object]:
    report = diversity(out)
    with atomic_target(out.diversity) as temporary:
        temporary.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    return report
