"""``h2h ingest``: a run directory's scenarios, responses, scores and judge results into the store.

Idempotent: re-ingesting the same run changes nothing; a scenario whose text changed is updated
in place (its id stays) and the change is audit-logged. Everything is read and checked before the
first write, and all writes are one transaction: a bad file stores nothing and loses nothing.

The run's files are the user's input here, read strictly and never modified: every bad line — invalid JSON,
a field that does not validate, text no store can hold, an incomplete last line left by a killed stage — is
reported as ``file:line: field: problem``, all of them at once, and nothing is stored. A key (a scenario id,
or a response's ``(scenario_id, model, variant)``) on two lines with different content is refused the same
way (the rule: the run must say one thing per key); two identical lines are harmless, ingested once and
reported in :attr:`IngestReport.repeated_lines`. A name or id (:data:`NAME_FIELDS`: a scenario id, a model, a judge)
holding a character nobody can see — a bidi control, a zero-width or other format character, a control, a blank
other than the space (:func:`studio.services.text.name_problem`) — is a bad line too: such a name would read as
another in every table, picker and export.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Engine, insert, select, update
from sqlmodel import Session, col
from tqdm import tqdm

from pipeline.jsonl import KeyedRecords, RecordError, index_by_key, validate_lines
from pipeline.records import JUDGED_SUBTASKS, Judgment, Response, Result, Scenario, Score, record_key
from pipeline.rundir import RunDir
from pipeline.scoring.combine import combine_j
from pipeline.taxonomy import METRIC_NAMES
from studio.db import write_session
from studio.errors import InvalidInput
from studio.models import AuditLog, ResponseRow, ScenarioRow, ScoreRow
from studio.services.text import name_problem

logger = logging.getLogger(__name__)

BATCH = 2000
Key = tuple[str, str, str]
RecordT = TypeVar("RecordT", Scenario, Response, Score, Judgment, Result)
SCORE_FIELDS = METRIC_NAMES
RESULT_FIELDS = ("J_judge", "J", "J_final", "judge_model", "judge_prompt_version")


#: How many problems an :class:`IngestError`'s message lists (all of them stay in ``problems``).
SHOWN_PROBLEMS = 20
#: The fields of a record that name something the studio lists (a scenario, a model, a judge): checked by
#: :func:`name_problems`. Texts (a persona, a response) may hold any character; the pages show it visibly.
NAME_FIELDS = ("id", "scenario_id", "model", "judge_model")


class IngestReport(BaseModel):
    #: ``file:line: key: ...`` of lines that repeat an earlier line of their file exactly (ingested once).
    repeated_lines: list[str] = []
    scenarios_added: int = 0
    scenarios_updated: int = 0
    responses_added: int = 0
    responses_updated: int = 0
    scores_added: int = 0
    scores_updated: int = 0
    flagged_for_adjudication: int = 0


class IngestError(ValueError):
    """The run directory is inconsistent (e.g. a response to an unknown scenario); names the file.

    ``problems`` holds every bad line found (``file:line: field: problem``) when the files themselves are bad.
    """

    def __init__(self, message: str, problems: list[RecordError] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


@dataclass
class RunFiles:
    """A run directory's records, read strictly (see the module docstring), by key."""

    scenarios: dict[str, Scenario]
    responses: dict[Key, Response]
    scores: dict[Key, Score]
    repeated_lines: list[str]


def name_problems(path: Path | str, numbered: Iterable[tuple[int, Any]]) -> list[RecordError]:
    """``file:line: field: problem`` for each name or id (:data:`NAME_FIELDS`) of the ``(line, record)`` pairs that
    holds a character nobody can see (:func:`studio.services.text.name_problem`)."""
    problems = []
    for line, record in numbered:
        for field in NAME_FIELDS:
            value = getattr(record, field, None)
            if isinstance(value, str) and (why := name_problem(value)):
                problems.append(RecordError(path, line, field, why))
    return problems


def _read_strictly(
    path: Path, model: type[RecordT], key_of: Callable[[RecordT], Any], problems: list[RecordError]
) -> KeyedRecords[Any, RecordT]:
    """Every line of ``path`` (when it exists) validated as ``model`` and indexed by key; bad lines and
    conflicting keys go to ``problems``. The file is only read."""
    if not path.exists():
        return KeyedRecords()
    numbered, bad_lines = validate_lines(path, model)
    keyed = index_by_key(path, numbered, key_of)
    problems.extend(bad_lines + name_problems(path, numbered) + keyed.conflicts)
    return keyed


def read_run_files(run: RunDir) -> RunFiles:
    """Read and check every record file of ``run``; raise :class:`IngestError` listing every problem."""
    problems: list[RecordError] = []
    scenarios = _read_strictly(run.scenarios, Scenario, lambda scenario: scenario.id, problems)
    responses = _read_strictly(run.responses, Response, record_key, problems)
    scores = _read_strictly(run.scores, Score, record_key, problems)
    judgments = _read_strictly(run.judgments, Judgment, record_key, problems)
    results = _read_strictly(run.results, Result, record_key, problems)
    if problems:
        problems.sort(key=lambda problem: (problem.path, problem.line))
        listed = "\n".join(str(problem) for problem in problems[:SHOWN_PROBLEMS])
        more = f"\n... and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
        raise IngestError(f"{len(problems)} problem(s) in {run.root}; nothing was stored:\n{listed}{more}", problems)
    repeats = [*scenarios.repeats, *responses.repeats, *scores.repeats, *judgments.repeats, *results.repeats]
    return RunFiles(scenarios.records, responses.records, scores.records, [str(repeat) for repeat in repeats])


def _batches(rows: list[dict[str, Any]], label: str, *, progress: bool) -> Iterator[list[dict[str, Any]]]:
    """``rows`` in batches of :data:`BATCH`, counted by a bar on stderr unless ``progress`` is False."""
    with tqdm(total=len(rows), desc=label, unit="row", disable=not (rows and progress), leave=False) as bar:
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            yield batch
            bar.update(len(batch))


def scenario_row(scenario: Scenario) -> dict[str, Any]:
    """The scenario as a ``scenario`` table row, with the hash that tells whether it changed."""
    data = scenario.model_dump(mode="json")
    return {
        "id": scenario.id,
        "subtask": scenario.subtask,
        "persona": scenario.persona,
        "history": data["history"],
        "user_input": scenario.user_input,
        "reference": scenario.reference,
        "tags": data["tags"],
        "context": data["context"],
        "source": scenario.source,
        "language": scenario.tags.language,
        "instruction_kind": scenario.tags.instruction_kind,
        "high_risk": scenario.tags.high_risk,
        "content_hash": hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest(),
    }


def _ingest_scenarios(
    session: Session, scenarios: Iterable[Scenario], actor: str, report: IngestReport, *, progress: bool = True
) -> None:
    scenarios = list(scenarios)
    # every front door reads its files with name_problems first; this is the rule's last line, for any other caller
    unnamed = next(((scenario.id, why) for scenario in scenarios if (why := name_problem(scenario.id))), None)
    if unnamed is not None:
        raise InvalidInput(f"id: {unnamed[1]}")
    stored: dict[str, str] = {
        row.id: row.content_hash for row in session.execute(select(col(ScenarioRow.id), col(ScenarioRow.content_hash)))
    }
    added, changed = [], []
    for scenario in scenarios:
        row = scenario_row(scenario)
        if scenario.id not in stored:
            added.append(row)
        elif stored[scenario.id] != row["content_hash"]:
            changed.append(row)
    for batch in _batches(added, "scenarios", progress=progress):
        session.execute(insert(ScenarioRow), batch)
    for row in changed:
        old = session.get(ScenarioRow, row["id"])
        fields = sorted(name for name, value in row.items() if getattr(old, name) != value and name != "content_hash")
        session.execute(update(ScenarioRow).where(ScenarioRow.id == row["id"]).values(**row))
        session.add(
            AuditLog(
                actor=actor,
                action="scenario.update",
                entity="scenario",
                entity_id=row["id"],
                detail={"fields": fields, "old_hash": old.content_hash if old else None},
            )
        )
    report.scenarios_added, report.scenarios_updated = len(added), len(changed)


def ingest_scenarios(
    session: Session, scenarios: Iterable[Scenario], *, actor: str, progress: bool = True
) -> IngestReport:
    """Add new scenarios and update changed ones in place (audit-logged), by the rule ``h2h ingest`` follows, in the
    caller's transaction (the admin page's and API's imports); a bar on stderr counts large batches unless
    ``progress`` is False."""
    report = IngestReport()
    _ingest_scenarios(session, scenarios, actor, report, progress=progress)
    return report


def _ingest_responses(
    session: Session, responses: Iterable[Response], report: IngestReport, *, progress: bool
) -> dict[Key, int]:
    stored = {
        (sid, model, variant): (rid, text)
        for rid, sid, model, variant, text in session.execute(
            select(
                col(ResponseRow.id),
                col(ResponseRow.scenario_id),
                col(ResponseRow.model),
                col(ResponseRow.variant),
                col(ResponseRow.text),
            )
        )
    }
    added, changed = [], []
    for response in responses:
        row = {
            "scenario_id": response.scenario_id,
            "model": response.model,
            "variant": response.variant,
            "text": response.text,
            "backend": response.backend,
            "prompt_version": response.prompt_version,
        }
        if response.key not in stored:
            added.append({**row, "needs_adjudication": False, "created_at": response.created_at})
        elif stored[response.key][1] != response.text:
            changed.append({**row, "id": stored[response.key][0]})
    for batch in _batches(added, "responses", progress=progress):
        session.execute(insert(ResponseRow), batch)
    for batch in _batches(changed, "responses (changed)", progress=progress):
        session.execute(update(ResponseRow), batch)
    report.responses_added, report.responses_updated = len(added), len(changed)
    return {
        (sid, model, variant): rid
        for rid, sid, model, variant in session.execute(
            select(col(ResponseRow.id), col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant))
        )
    }


def _score_values(score: Score, result: Result | None) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(score, name) for name in SCORE_FIELDS}
    values |= {
        "subtask": score.subtask,
        "signature": score.signature.model_dump(mode="json"),
        "signature_label": score.signature.label(),
    }
    values |= {name: getattr(result, name) if result is not None else None for name in RESULT_FIELDS}
    return values


def other_origin(old: dict[str, Any], values: dict[str, Any]) -> str | None:
    """Why the stored score row ``old`` came from elsewhere than ``values`` (another score signature, or a judge
    that the new values drop or change); None when replacing it loses nothing."""
    if old["signature_label"] != values["signature_label"]:
        return f"score signature {old['signature_label']} → {values['signature_label']}"
    for name in ("judge_model", "judge_prompt_version"):
        if old[name] is not None and old[name] != values[name]:
            return f"{name} {old[name]} → {values[name]}"
    return None


def _refuse_replacing(conflicts: list[tuple[Key, str]]) -> None:
    if conflicts:
        key, why = conflicts[0]
        raise IngestError(
            f"scores.jsonl: {len(conflicts)} stored score(s) came from another scoring or judge "
            f"(e.g. {key}: {why}); nothing was changed — ingest with --replace to overwrite them"
        )


def _ingest_scores(
    session: Session,
    scores: dict[Key, Score],
    results: dict[Key, Result],
    response_ids: dict[Key, int],
    report: IngestReport,
    replace: bool = False,
    *,
    progress: bool,
) -> None:
    columns = [
        ScoreRow.id,
        ScoreRow.response_id,
        ScoreRow.J_human,
        *[
            getattr(ScoreRow, name)
            for name in ("subtask", "signature", "signature_label", *SCORE_FIELDS, *RESULT_FIELDS)
        ],
    ]
    stored = {row.response_id: row._asdict() for row in session.execute(select(*columns))}
    added, changed, flags, conflicts = [], [], [], []
    for key, score in scores.items():
        if key not in response_ids:
            raise IngestError(f"scores.jsonl: {key}: no response with this (scenario_id, model, variant)")
        response_id, result = response_ids[key], results.get(key)
        values = _score_values(score, result)
        old = stored.get(response_id)
        if old is not None and old["J_human"] is not None:
            # adjudicated: the experts' J_human stands, and J_final follows this S (a rescored run changes it)
            values["J_final"] = combine_j(values["S"], old["J_human"])
        if old is None:
            added.append({**values, "response_id": response_id})
        elif any(old[name] != value for name, value in values.items()):
            changed.append({**values, "id": old["id"]})
            why = None if replace else other_origin(old, values)
            if why is not None:
                conflicts.append((key, why))
        if score.subtask in JUDGED_SUBTASKS:
            flags.append({"id": response_id, "needs_adjudication": bool(result is None or result.needs_adjudication)})
    _refuse_replacing(conflicts)
    for batch in _batches(added, "scores", progress=progress):
        session.execute(insert(ScoreRow), batch)
    for batch in _batches(changed, "scores (changed)", progress=progress):
        session.execute(update(ScoreRow), batch)
    for batch in _batches(flags, "adjudication flags", progress=progress):
        session.execute(update(ResponseRow), batch)
    report.scores_added, report.scores_updated = len(added), len(changed)
    report.flagged_for_adjudication = sum(flag["needs_adjudication"] for flag in flags)


def load_results(run: RunDir, scenarios: dict[str, Scenario], scores: dict[Key, Score]) -> dict[Key, Result]:
    """RUN/results.jsonl when present and current; otherwise the results ``build_results`` computes.

    A results file older than the run's scores or judgments is refused (``IngestError``), so stale J values
    never reach the store.
    """
    from pipeline.results import StaleResultsError, build_results, load_current_results

    if run.results.exists():
        try:
            return load_current_results(run)
        except StaleResultsError as error:
            raise IngestError(str(error)) from None
    judgments = run.load(run.judgments, Judgment)
    return {record_key(result): result for result in build_results(scenarios, scores, judgments)}


def ingest_run(
    engine: Engine,
    run_dir: Path | str | RunDir,
    *,
    actor: str = "ingest",
    replace: bool = False,
    progress: bool = True,
) -> IngestReport:
    """Ingest one run directory into the store (one transaction); return what was added and updated. Large tables
    are written in batches counted by bars on stderr unless ``progress`` is False (``h2h ingest --no-progress``).

    A stored score made with another signature, or judged by a judge the run drops or changes, is replaced only
    with ``replace``; otherwise :class:`IngestError` names it and nothing is written.
    """
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    if not run.root.is_dir():
        raise IngestError(f"{run.root}: no such run directory")
    if not run.scenarios.exists():
        # an upstream release folder or a typo'd path would otherwise "ingest" nothing and exit 0
        raise IngestError(f"{run.scenarios}: not found; {run.root} is not a run directory (h2h generate makes one)")
    files = read_run_files(run)
    scenarios, responses, scores = files.scenarios, files.responses, files.scores
    results = load_results(run, scenarios, scores)
    report = IngestReport(repeated_lines=files.repeated_lines)
    for repeat in files.repeated_lines:
        logger.warning("%s", repeat)
    with write_session(engine) as session:
        _ingest_scenarios(session, scenarios.values(), actor, report, progress=progress)
        known = set(session.execute(select(col(ScenarioRow.id))).scalars())
        for key in responses:
            if key[0] not in known:
                raise IngestError(f"{run.responses}: response {key} names unknown scenario_id {key[0]!r}")
        response_ids = _ingest_responses(session, responses.values(), report, progress=progress)
        _ingest_scores(session, scores, results, response_ids, report, replace, progress=progress)
    logger.info("ingested %s: %s", run.root, report.model_dump())
    return report
