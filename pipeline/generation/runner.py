"""The generate stage: scenarios + a backend → ``RUN/responses.jsonl``, resumable.

The stage copies the scenarios it is asked about into ``RUN/scenarios.jsonl``, skips keys already in
``RUN/responses.jsonl``, and appends (fsynced) each Response as its outcome arrives. Failed requests
are reported and left out, so rerunning the same command does exactly the missing keys and the
finished file holds the same keys and texts as a clean run's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pipeline.generation.base import (
    Backend,
    Completion,
    GenerationRequest,
    Key,
    Message,
    SamplingParams,
    StageSummary,
    completions,
)
from pipeline.records import Response, Scenario, Variant, storable_text
from pipeline.rundir import RunDir

logger = logging.getLogger(__name__)

MessageBuilder = Callable[[Scenario, Variant], list[Message]]


class ScenarioConflict(ValueError):
    """A scenario id already stored in the run with different content."""


class MissingUserInput(ValueError):
    """Scenarios without the user's message: a request for them would have no prompt (see :func:`no_input_message`)."""


#: What to do about scenarios without user input (the public H2HTalk release holds references only).
NO_INPUT_ADVICE = (
    "bring your own inputs (a scenario JSONL with user_input; `h2h validate` checks it), or score references only "
    "(the public release holds references, with no persona and no user input)"
)
_SHOWN_IDS = 5


def lacks_user_input(scenario: Scenario) -> bool:
    """Whether ``scenario`` has no user message to answer (``user_input`` empty or whitespace)."""
    return not scenario.user_input.strip()


def no_input_message(*, where: str, missing: Sequence[Scenario], total: int, what: str, stage: str) -> str:
    """One error naming the file (``where``), how many of how many ``what`` have no user input, the first few ids
    (with their upstream file:line when known), and what to do."""

    def named(scenario: Scenario) -> str:
        return f"{scenario.id} ({scenario.source})" if scenario.source else scenario.id

    shown = ", ".join(named(scenario) for scenario in missing[:_SHOWN_IDS])
    more = f" and {len(missing) - _SHOWN_IDS} more" if len(missing) > _SHOWN_IDS else ""
    return (
        f"{where}: {len(missing)} of {total} {what} have no user input (empty user_input: {shown}{more}); "
        f"{stage} needs the user's message, nothing was sent: {NO_INPUT_ADVICE}"
    )


def refuse_missing_input(scenarios: Sequence[Scenario], *, source: str) -> None:
    """Raise :class:`MissingUserInput` when any of ``scenarios`` lacks user input (one without is enough: a run
    that silently skipped some would look complete and compare models on a subset)."""
    missing = [scenario for scenario in scenarios if lacks_user_input(scenario)]
    if missing:
        message = no_input_message(
            where=source, missing=missing, total=len(scenarios), what="selected scenarios", stage="generation"
        )
        raise MissingUserInput(message)


@dataclass
class GenerationSummary(StageSummary):
    """What one generate invocation did (besides :class:`StageSummary`'s written and failures)."""

    scenarios_added: int = 0
    selected: int = 0
    skipped: int = 0


def merge_scenarios(run: RunDir, scenarios: Iterable[Scenario]) -> int:
    """Add ``scenarios`` missing from ``RUN/scenarios.jsonl``; return how many were added.

    Raises :class:`ScenarioConflict` (and writes nothing) if an id is stored with different content.
    """
    stored = run.load_scenarios()
    new: dict[str, Scenario] = {}
    for scenario in scenarios:
        known = stored.get(scenario.id) or new.get(scenario.id)
        if known is None:
            new[scenario.id] = scenario
        elif known.model_dump() != scenario.model_dump():
            raise ScenarioConflict(
                f"{run.scenarios}: scenario {scenario.id!r} is already stored with different content; "
                "use a new run directory or give the changed scenario a new id"
            )
    if new:
        with run.appender(run.scenarios) as appender:
            appender.extend(new.values())
    return len(new)


def select_scenarios(
    scenarios: Sequence[Scenario], *, subtasks: Sequence[str] = (), limit: int | None = None
) -> list[Scenario]:
    """Keep the scenarios of ``subtasks`` (all when empty), then the first ``limit`` of them, in file order."""
    chosen = [scenario for scenario in scenarios if not subtasks or scenario.subtask in subtasks]
    return chosen if limit is None else chosen[:limit]


def build_requests(
    scenarios: Sequence[Scenario],
    *,
    model: str,
    variant: Variant,
    sampling: SamplingParams,
    done: Iterable[Key] = (),
    build_messages: MessageBuilder | None = None,
) -> list[GenerationRequest]:
    """One request per scenario whose key ``(id, model, variant)`` is not in ``done``, in scenario order."""
    if build_messages is None:
        from pipeline.prompts import build_messages as default_builder

        build_messages = default_builder
    finished = set(done)
    messages_of = build_messages
    return [
        GenerationRequest((scenario.id, model, variant), messages_of(scenario, variant), sampling)
        for scenario in scenarios
        if (scenario.id, model, variant) not in finished
    ]


def response_from(completion: Completion, *, backend: str, prompt_version: str) -> Response:
    """The Response record of a finished request (sampling and usage included)."""
    scenario_id, model, variant = completion.request.key
    text, replaced = storable_text(completion.text)
    if replaced:
        logger.warning(
            "generate %s: %d character(s) no store can hold (NUL) replaced by U+FFFD", completion.request.key, replaced
        )
    return Response(
        scenario_id=scenario_id,
        model=model,
        variant=variant,
        text=text,
        backend=backend,
        prompt_version=prompt_version,
        sampling=completion.request.sampling.as_record(),
        usage=completion.usage,
    )


def write_outcomes(
    run: RunDir, backend: Backend, requests: Sequence[GenerationRequest], *, prompt_version: str, progress: bool
) -> tuple[int, list[tuple[Key, str]]]:
    """Send ``requests`` to ``backend`` and append each completion to ``RUN/responses.jsonl`` as it arrives.

    Returns ``(responses written, (key, error) of the failed requests)``. Characters of the model's text that no
    store can hold (a NUL) are replaced by U+FFFD and logged (:func:`pipeline.records.storable_text`).
    """
    written, failures = 0, list[tuple[Key, str]]()
    with run.appender(run.responses) as appender:
        for completion in completions(backend, requests, failures=failures, desc="generate", progress=progress):
            appender.append(response_from(completion, backend=backend.name, prompt_version=prompt_version))
            written += 1
    return written, failures


def run_generation(
    run: RunDir,
    scenarios: Sequence[Scenario],
    backend: Backend,
    *,
    model: str,
    variant: Variant,
    sampling: SamplingParams,
    subtasks: Sequence[str] = (),
    limit: int | None = None,
    progress: bool = True,
    source: str = "the scenarios",
) -> GenerationSummary:
    """Generate the missing responses of the selected scenarios into ``run``; record the stage in the manifest.

    Selected scenarios without user input are refused (:class:`MissingUserInput`, naming ``source``, the scenarios
    file) before anything is written or sent.
    """
    from pipeline.prompts import PROMPT_VERSION

    selected = select_scenarios(scenarios, subtasks=subtasks, limit=limit)
    refuse_missing_input(selected, source=source)
    summary = GenerationSummary(selected=len(selected))
    summary.scenarios_added = merge_scenarios(run, selected)
    done = run.load(run.responses, Response).keys()
    requests = build_requests(selected, model=model, variant=variant, sampling=sampling, done=done)
    summary.skipped = len(selected) - len(requests)
    summary.written, summary.failures = write_outcomes(
        run, backend, requests, prompt_version=PROMPT_VERSION, progress=progress
    )
    run.record_stage(
        "generate",
        model=model,
        backend=backend.name,
        backend_settings=backend.manifest_settings(),
        variant=variant,
        sampling=sampling.as_record(),
        prompt_version=PROMPT_VERSION,
        subtasks=list(subtasks),
        limit=limit,
        counts={"selected": summary.selected, "skipped": summary.skipped, "written": summary.written},
        failures={"count": len(summary.failures), "keys": [list(key) for key, _ in summary.failures[:50]]},
    )
    return summary
