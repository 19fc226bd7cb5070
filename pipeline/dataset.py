"""Loading and validating benchmark files.

:func:`load_scenarios` reads our scenario format and stops at the first problem;
:func:`check_file` / :func:`validate_file` read any pipeline JSONL file (scenarios, responses,
scores, judgments, results or score-pair input), detect its kind from the first line that holds a
JSON object, and return *every* problem as ``file:line: field: problem``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from pipeline.curation.records import CURATION_FILE_KINDS
from pipeline.jsonl import RecordError, checked_lines, iter_lines, parse_json_line, validation_problems
from pipeline.records import (
    SUBTASKS,
    TABLE1_COUNTS,
    Judgment,
    Response,
    Result,
    Scenario,
    ScenarioTags,
    Score,
    ScorePair,
)
from pipeline.taxonomy import METRICS

#: Every kind of file :func:`check_file` understands, and the record each line must be.
FILE_KINDS: dict[str, type[BaseModel]] = {
    "scenarios": Scenario,
    "responses": Response,
    "scores": Score,
    "judgments": Judgment,
    "results": Result,
    "pairs": ScorePair,
    **CURATION_FILE_KINDS,
}


@dataclass
class FileCheck:
    """The outcome of :func:`validate_file`: the detected kind, every problem, how many records were read."""

    path: Path
    kind: str | None
    problems: list[RecordError] = field(default_factory=list)
    records: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def scenario_problems(path: Path | str, line: int, scenario: Scenario) -> list[RecordError]:
    """Return the problems pydantic cannot see in one scenario (tag consistency, blank reference)."""
    problems = []
    if not scenario.reference.strip():
        problems.append(RecordError(path, line, "reference", "reference is blank"))
    if scenario.tags.high_risk and not scenario.tags.risk_kind:
        problems.append(RecordError(path, line, "tags.risk_kind", "high_risk scenarios must name their risk_kind"))
    if scenario.tags.risk_kind and not scenario.tags.high_risk:
        problems.append(RecordError(path, line, "tags.high_risk", "risk_kind is set but high_risk is false"))
    return problems


def score_problems(path: Path | str, line: int, score: Score) -> list[RecordError]:
    """Return the metrics of one score record that lie outside their range (:data:`pipeline.taxonomy.METRICS`)."""
    problems = []
    for metric in METRICS:
        value = getattr(score, metric.name)
        if value is not None and not metric.low <= value <= metric.high:
            bounds = f"[{metric.low:g}, {metric.high:g}]"
            problems.append(RecordError(path, line, metric.name, f"must lie in {bounds}, got {value}"))
    return problems


_EXTRA_CHECKS: dict[str, Callable[[Path | str, int, BaseModel], list[RecordError]]] = {
    "scenarios": scenario_problems,  # type: ignore[dict-item]
    "scores": score_problems,  # type: ignore[dict-item]
}


def record_identity(kind: str, record: BaseModel) -> tuple[str, ...]:
    """Return what must be unique in a file of ``kind``: the id, or the (scenario_id, model, variant) key."""
    if kind in {"scenarios", "pairs"} or kind in CURATION_FILE_KINDS:
        return (str(record.id),)  # type: ignore[attr-defined]
    return (record.scenario_id, record.model, record.variant)  # type: ignore[attr-defined]


def load_scenarios(path: Path | str) -> list[Scenario]:
    """Read a scenario JSONL file; raise the first :class:`RecordError` (``file:line: field: problem``).

    A repeated id is an error naming both lines.
    """
    scenarios: list[Scenario] = []
    first_line_of: dict[str, int] = {}
    for number, text in iter_lines(path):
        data = parse_json_line(path, number, text)
        try:
            scenario = Scenario.model_validate(data)
        except ValidationError as exc:
            raise validation_problems(path, number, exc)[0] from exc
        problems = scenario_problems(path, number, scenario)
        if problems:
            raise problems[0]
        if scenario.id in first_line_of:
            where = f"first seen on line {first_line_of[scenario.id]}"
            raise RecordError(path, number, "id", f"duplicate id {scenario.id!r} ({where})")
        first_line_of[scenario.id] = number
        scenarios.append(scenario)
    return scenarios


def kind_of_keys(keys: set[str]) -> str | None:
    """Return the file kind whose required fields ``keys`` covers best, or None when none fits.

    A kind fits when every one of its required fields is present; among fitting kinds the one with
    the most required fields wins (a score line also carries every field a result requires).
    """
    best: tuple[int, str] | None = None
    for kind, model in FILE_KINDS.items():
        required = {name for name, info in model.model_fields.items() if info.is_required()}
        if required <= keys and (best is None or len(required) > best[0]):
            best = (len(required), kind)
    return best[1] if best else None


def detect_kind(path: Path | str) -> str | None:
    """Return the kind of a JSONL file from its first line that is a JSON object; None if none fits."""
    for number, text in checked_lines(path, []):  # a line that is not UTF-8 ends the search; validate_file says so
        try:
            data = parse_json_line(path, number, text)
        except RecordError:
            continue
        return kind_of_keys(set(data))
    return None


def validate_file(path: Path | str, kind: str | None = None) -> FileCheck:
    """Check every line of ``path`` as ``kind`` (detected when None) and return all problems found.

    Checks: JSON syntax, the record's fields, the kind's own rules (scenario tags, score ranges) and
    repeated ids/keys (naming the first line). Never stops at the first problem.
    """
    path = Path(path)
    if kind is not None and kind not in FILE_KINDS:
        raise ValueError(f"unknown file kind {kind!r}; expected one of {', '.join(FILE_KINDS)}")
    unreadable: list[RecordError] = []
    if not any(checked_lines(path, unreadable)) and unreadable:
        return FileCheck(path, kind, unreadable)  # not UTF-8 before its first record: nothing else can be said
    kind = kind or detect_kind(path)
    if kind is None:
        problem = "cannot tell what kind of file this is" if any(iter_lines(path)) else "the file holds no records"
        expected = ", ".join(FILE_KINDS)
        return FileCheck(path, None, [RecordError(path, 1, "(file)", f"{problem} (expected one of: {expected})")])
    check = FileCheck(path, kind)
    first_line_of: dict[tuple[str, ...], int] = {}
    for number, text in checked_lines(path, check.problems):
        try:
            record = FILE_KINDS[kind].model_validate(parse_json_line(path, number, text))
        except RecordError as exc:
            check.problems.append(exc)
            continue
        except ValidationError as exc:
            check.problems.extend(validation_problems(path, number, exc))
            continue
        check.records += 1
        extra_checks = _EXTRA_CHECKS.get(kind)
        if extra_checks is not None:
            check.problems.extend(extra_checks(path, number, record))
        identity = record_identity(kind, record)
        if identity in first_line_of:
            where = f"first seen on line {first_line_of[identity]}"
            check.problems.append(RecordError(path, number, "(key)", f"duplicate {'/'.join(identity)} ({where})"))
        else:
            first_line_of[identity] = number
    return check


def check_file(path: Path | str) -> list[RecordError]:
    """Return every problem of a pipeline JSONL file of any kind (empty when it is valid)."""
    return validate_file(path).problems


# ---------------------------------------------------------------- upstream import

#: File names of the public H2HTalk release (and our canonical ids) -> subtask.
UPSTREAM_FILE_SUBTASKS: dict[str, str] = {
    **{subtask: subtask for subtask in SUBTASKS},
    "recollection_initialize": "recollection_initialization",
    "recollection_refine": "recollection_refinement",
    "recollection_synthesize": "recollection_synthesis",
    "itinerary_feedback": "itinerary_response",
    "itinerary_initialize": "itinerary_initialization",
}
# Content heuristic: plans name clock times and days. Most references of the planning subtasks
# (itinerary levels I-III and initialization) carry such a cue; dialogue and recollection references
# mostly do not. dialogue_schedule and itinerary_response legitimately go either way, so are exempt.
_TIME_CUE = re.compile(
    r"\d{1,2}\s*[:：]\s*\d{2}|\d{1,2}\s*(?:am|pm|点|時)|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\bday \d"
    r"|周[一二三四五六日末]|星期|第.天|[上下]午|早上|晚上",
    re.IGNORECASE,
)
PLANNING_SUBTASKS = frozenset({"itinerary_basic", "itinerary_middle", "itinerary_advanced", "itinerary_initialization"})
EXEMPT_SUBTASKS = frozenset({"dialogue_schedule", "itinerary_response"})
ITINERARY_MIN_TIME_SHARE = 0.5
OTHER_MAX_TIME_SHARE = 0.6
HEURISTIC_MIN_LINES = 3


@dataclass
class UpstreamFile:
    """What one upstream file gave: its subtask (None if the name is unknown), good and bad lines, warnings."""

    path: Path
    subtask: str | None
    imported: int = 0
    bad: int = 0
    time_share: float | None = None
    warnings: list[str] = field(default_factory=list)
    #: Other subtasks whose Table 1 count equals this file's line count when its own subtask's does not.
    likely: list[str] = field(default_factory=list)
    #: A second file for a subtask by its name alone: refused, nothing imported from it.
    refused: bool = False


@dataclass
class UpstreamImport:
    """The outcome of :func:`import_upstream`: scenarios in file/line order, bad lines, per-file summaries."""

    scenarios: list[Scenario]
    problems: list[RecordError]
    files: list[UpstreamFile]


def guess_language(text: str) -> str:
    """Return ``zh``, ``en`` or ``mixed`` from the share of CJK characters among letters."""
    cjk = sum(1 for char in text if "\u4e00" <= char <= "\u9fff")
    latin = sum(1 for char in text if char.isascii() and char.isalpha())
    share = cjk / (cjk + latin / 4) if cjk + latin else 0.0  # ~4 latin letters carry what one hanzi does
    return "zh" if share >= 0.85 else "en" if share <= 0.15 else "mixed"


def time_cue_share(texts: list[str]) -> float:
    """Return the share of ``texts`` that mention a clock time, a weekday or a part of the day."""
    return sum(1 for text in texts if _TIME_CUE.search(text)) / len(texts) if texts else 0.0


def content_warning(subtask: str, texts: list[str]) -> str | None:
    """Return a warning when a file's content looks like another dimension's (see ``_TIME_CUE``)."""
    if len(texts) < HEURISTIC_MIN_LINES or subtask in EXEMPT_SUBTASKS:
        return None
    share = time_cue_share(texts)
    if subtask in PLANNING_SUBTASKS and share < ITINERARY_MIN_TIME_SHARE:
        return (
            f"only {share:.0%} of lines mention a clock time or day; {subtask} references are plans, so this file "
            "may hold another subtask's data"
        )
    if subtask not in PLANNING_SUBTASKS and share >= OTHER_MAX_TIME_SHARE:
        return f"{share:.0%} of lines mention a clock time or day; this looks like itinerary data, not {subtask}"
    return None


def _upstream_reference(path: Path, number: int, text: str) -> str:
    data = parse_json_line(path, number, text)
    response = data.get("response")
    if response is None:
        raise RecordError(path, number, "response", "missing")
    if not isinstance(response, str):
        raise RecordError(path, number, "response", f"expected a string, got {type(response).__name__}")
    if not response.strip():
        raise RecordError(path, number, "response", "empty")
    return response


def _import_file(path: Path, subtask: str, result: UpstreamImport, *, id_prefix: str) -> UpstreamFile:
    summary = UpstreamFile(path, subtask)
    references: list[str] = []
    unreadable: list[RecordError] = []
    # Blank lines count in the numbering (iter_lines), so an id always names the same physical line.
    for number, text in checked_lines(path, unreadable):
        try:
            reference = _upstream_reference(path, number, text)
        except RecordError as exc:
            result.problems.append(exc)
            summary.bad += 1
            continue
        references.append(reference)
        result.scenarios.append(
            Scenario(
                id=f"{id_prefix}-{number:06d}",
                subtask=subtask,
                reference=reference,
                tags=ScenarioTags(language=guess_language(reference)),
                source=f"upstream:{path.name}:{number}",
            )
        )
    result.problems.extend(unreadable)  # a file that is not UTF-8: reported, never silently cut short
    summary.bad += len(unreadable)
    summary.imported = len(references)
    summary.time_share = time_cue_share(references) if references else None
    warning = content_warning(subtask, references)
    if warning:
        summary.warnings.append(warning)
    return summary


def likely_subtasks(lines: int, subtask: str) -> list[str]:
    """The other subtasks whose paper Table 1 count is ``lines``, when ``subtask``'s is not (a file that may hold
    another subtask's data, e.g. the release's itinerary_initialize.jsonl with dialogue_schedule's 533 lines)."""
    if TABLE1_COUNTS[subtask] == lines:
        return []
    return [other for other, count in TABLE1_COUNTS.items() if count == lines and other != subtask]


def count_warning(summary: UpstreamFile, subtask: str) -> str | None:
    """The warning of a file (imported as ``subtask``) whose line count is not that subtask's Table 1 count (naming
    the likely subtask when the count is another's; also kept in ``summary.likely``), or None."""
    lines, expected = summary.imported + summary.bad, TABLE1_COUNTS[subtask]
    if lines == expected:
        return None
    summary.likely = likely_subtasks(lines, subtask)
    if not summary.likely:
        return f"{lines} lines, paper Table 1 has {expected}"
    others = " and ".join(f"{other} {TABLE1_COUNTS[other]}" for other in summary.likely)
    return f"{lines} lines, Table 1 gives {subtask} {expected} and {others} — likely {summary.likely[0]}"


def checked_as_subtasks(directory: Path, as_subtasks: Mapping[str, str]) -> dict[str, str]:
    """``FILE -> SUBTASK`` choices with each subtask made canonical (a release name such as itinerary_feedback is
    accepted); ValueError naming the ``FILE=SUBTASK`` pair when the file is no .jsonl file of ``directory`` or the
    subtask is unknown."""
    names = sorted(path.name for path in directory.glob("*.jsonl"))
    checked = {}
    for name, subtask in as_subtasks.items():
        if name not in names:
            listed = ", ".join(names) or "none"
            raise ValueError(f"{name}={subtask}: {directory} has no file {name} (its .jsonl files: {listed})")
        canonical = UPSTREAM_FILE_SUBTASKS.get(subtask)
        if canonical is None:
            raise ValueError(f"{name}={subtask}: unknown subtask {subtask!r} (one of: {', '.join(SUBTASKS)})")
        checked[name] = canonical
    return checked


def import_upstream(directory: Path | str, *, as_subtasks: Mapping[str, str] | None = None) -> UpstreamImport:
    """Read the public H2HTalk layout (one ``{"response": ...}`` JSONL per subtask) into scenarios.

    Ids are ``<subtask>-<line:06d>`` (physical line numbers, stable on re-import); the reference is
    the response; ``source`` records file:line. Bad lines go to ``problems``, never dropped silently.
    ``as_subtasks`` (``FILE -> SUBTASK``, see :func:`checked_as_subtasks`) imports a file as another subtask than
    its name says; its ids are ``<subtask>-<file stem>-<line:06d>``, so they depend on that file alone and never
    collide with those of the subtask's own file, which may be imported beside it.
    """
    directory = Path(directory)
    chosen = checked_as_subtasks(directory, as_subtasks or {})
    result = UpstreamImport([], [], [])
    seen: dict[str, Path] = {}
    for path in sorted(directory.glob("*.jsonl")):
        named = UPSTREAM_FILE_SUBTASKS.get(path.stem)
        subtask = chosen.get(path.name, named)
        if subtask is None:
            warning = "unknown file name: not an H2HTalk subtask, skipped"
            result.files.append(UpstreamFile(path, None, warnings=[warning]))
            continue
        moved = subtask != named
        if not moved and subtask in seen:
            problem = f"{subtask} is also provided by {seen[subtask].name}; keep one of the two files"
            result.problems.append(RecordError(path, 1, "(file)", problem))
            result.files.append(UpstreamFile(path, subtask, warnings=[problem], refused=True))
            continue
        if not moved:
            seen[subtask] = path
        summary = _import_file(path, subtask, result, id_prefix=f"{subtask}-{path.stem}" if moved else subtask)
        counted = count_warning(summary, subtask)
        if counted:
            summary.warnings.append(counted)
        result.files.append(summary)
    return result
