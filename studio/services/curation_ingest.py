"""``h2h ingest-curation``: a refine folder's results into the store, for the curator page and the campaigns.

Reads what ``h2h refine`` (and ``h2h judge-pairs``) wrote::

    DIR/cleaned.jsonl            Scenario          the cleaned scenarios: added, or updated in place (audit-logged)
    DIR/preprocess_report.jsonl  ScenarioReport    flags (pii before/after, sensitive, meta_text, duplicate...), edits
    DIR/prescreen.jsonl          PrescreenVerdict  optional: the LLM's verdict, reasons, uncertainty
    DIR/queue.jsonl              QueueItem         optional: the review order (rank 1 = look first)
    --pairs FILE                 PairJudgment      optional: the LLM's verdicts on pairwise items (ids ``item-<n>``,
                                                   as ``h2h export-pairs`` writes them)

Strict like ``studio.services.ingest``: every bad line of every file — invalid JSON, a field that does not validate,
an id no scenario (or pairwise item) has, an id or judge name holding a character nobody can see
(``studio.services.ingest.name_problems``), a key on two lines with different content — is reported as
``file:line: field: problem``, all at once, and nothing is stored. Idempotent: a second run of the same folder
changes nothing (rows equal to what is stored are left alone); a changed run replaces each row it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Engine, select
from sqlmodel import Session, SQLModel, col

from pipeline.curation.records import PairJudgment, PrescreenVerdict, QueueItem, ScenarioReport
from pipeline.curation.refine import RefineDir
from pipeline.jsonl import RecordError, index_by_key, validate_lines
from pipeline.records import Scenario
from studio.db import write_session
from studio.models import Campaign, CurationReport, Item, PairJudgmentRow, PrescreenRow
from studio.services.ingest import SHOWN_PROBLEMS, IngestError, ingest_scenarios, name_problems

ACTOR = "h2h ingest-curation"
PAIR_ID = re.compile(r"item-([0-9]{1,18})")


class CurationIngestReport(BaseModel):
    """What a run of ``h2h ingest-curation`` changed (rows equal to the stored ones are not counted)."""

    scenarios_added: int = 0
    scenarios_updated: int = 0
    reports_written: int = 0
    prescreen_written: int = 0
    pair_judgments_written: int = 0
    repeated_lines: list[str] = []


@dataclass
class RefineFiles:
    """A refine folder's records, read and checked (see the module docstring)."""

    scenarios: dict[str, Scenario]
    reports: dict[str, ScenarioReport]
    prescreen: dict[str, PrescreenVerdict]
    ranks: dict[str, int]
    pairs: dict[str, tuple[int, PairJudgment]] = field(default_factory=dict)
    pairs_path: Path | None = None
    repeated_lines: list[str] = field(default_factory=list)


class _Reader:
    """Reads files strictly, gathering every problem and repeated line."""

    def __init__(self) -> None:
        self.problems: list[RecordError] = []
        self.repeats: list[str] = []

    def read(self, path: Path, model: type[Any], key: str, *, required: bool = False) -> dict[str, tuple[int, Any]]:
        """``path``'s records by ``key`` with their line numbers ({} when an optional file is missing)."""
        if not path.exists():
            if required:
                self.problems.append(RecordError(path, 0, "(file)", "missing: run `h2h refine` into this folder"))
            return {}
        numbered, bad = validate_lines(path, model)
        keyed = index_by_key(path, numbered, lambda record: getattr(record, key))
        self.problems.extend(bad + name_problems(path, numbered) + keyed.conflicts)
        self.repeats.extend(str(repeat) for repeat in keyed.repeats)
        lines = {getattr(record, key): number for number, record in reversed(numbered)}
        return {name: (lines[name], record) for name, record in keyed.records.items()}

    def known_ids(self, path: Path, records: dict[str, tuple[int, Any]], scenarios: dict[str, Any]) -> None:
        """A problem for each record whose id is no scenario of ``cleaned.jsonl``."""
        for name, (line, _) in records.items():
            if name not in scenarios:
                self.problems.append(RecordError(path, line, "id", f"no scenario {name!r} in cleaned.jsonl"))


def read_refine_dir(folder: Path, *, pairs: Path | None = None) -> RefineFiles:
    """Read and check every file of the refine ``folder`` (and ``pairs``); :class:`IngestError` lists every problem."""
    files, reader = RefineDir(folder), _Reader()
    scenarios = reader.read(files.cleaned, Scenario, "id", required=True)
    reports = reader.read(files.report, ScenarioReport, "id", required=True)
    prescreen = reader.read(files.prescreen, PrescreenVerdict, "id")
    queue = reader.read(files.queue, QueueItem, "id")
    judged = reader.read(pairs, PairJudgment, "id", required=True) if pairs is not None else {}
    for path, records in ((files.report, reports), (files.prescreen, prescreen), (files.queue, queue)):
        reader.known_ids(path, records, scenarios)
    for name, (line, _) in judged.items():
        if PAIR_ID.fullmatch(name) is None:
            reader.problems.append(RecordError(str(pairs), line, "id", f"{name!r} is not item-<number>"))
    if reader.problems:
        raise _problems(folder, reader.problems)
    return RefineFiles(
        scenarios={name: record for name, (_, record) in scenarios.items()},
        reports={name: record for name, (_, record) in reports.items()},
        prescreen={name: record for name, (_, record) in prescreen.items()},
        ranks={name: record.rank for name, (_, record) in queue.items()},
        pairs=judged,
        pairs_path=pairs,
        repeated_lines=reader.repeats,
    )


def _problems(where: Path, problems: list[RecordError]) -> IngestError:
    problems.sort(key=lambda problem: (problem.path, problem.line))
    listed = "\n".join(str(problem) for problem in problems[:SHOWN_PROBLEMS])
    more = f"\n... and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
    return IngestError(f"{len(problems)} problem(s) in {where}; nothing was stored:\n{listed}{more}", problems)


def _report_row(report: ScenarioReport, run: str) -> dict[str, Any]:
    flags = [flag.model_dump(mode="json") for flag in report.flags]
    return {
        "scenario_id": report.id,
        "flags": flags,
        "edits": [edit.model_dump(mode="json") for edit in report.edits],
        "flag_kinds": sorted({flag["kind"] for flag in flags}),
        "n_flags": len(flags),
        "run": run,
    }


def _prescreen_row(verdict: PrescreenVerdict, rank: int | None) -> dict[str, Any]:
    data = verdict.model_dump(mode="json")
    return {
        "scenario_id": verdict.id,
        **{name: data[name] for name in ("verdict", "votes", "uncertainty", "needs_human", "reasons", "samples")},
        "judge_model": verdict.judge_model,
        "prompt_version": verdict.prompt_version,
        "queue_rank": rank,
    }


def _pair_row(item_id: int, judgment: PairJudgment) -> dict[str, Any]:
    data = judgment.model_dump(mode="json", exclude={"samples"})
    return {"item_id": item_id, "pair_id": data.pop("id"), **data}


def _upsert(session: Session, model: type[SQLModel], key: str, rows: list[dict[str, Any]]) -> int:
    """Insert new rows, replace changed ones, leave equal ones alone; how many were written."""
    written = 0
    for row in rows:
        stored = session.get(model, row[key])
        if stored is not None and all(getattr(stored, name) == value for name, value in row.items()):
            continue
        if stored is None:
            session.add(model(**row))
        else:
            for name, value in row.items():
                setattr(stored, name, value)
        written += 1
    session.flush()
    return written


def _pairwise_items(session: Session, files: RefineFiles) -> dict[int, dict[str, Any]]:
    """The pair judgments' rows by item id; ``IngestError`` naming each id that is no pairwise item."""
    wanted = {int(PAIR_ID.fullmatch(name).group(1)): name for name in files.pairs}  # type: ignore[union-attr]
    found = set(
        session.execute(
            select(col(Item.id))
            .join(Campaign, col(Campaign.id) == col(Item.campaign_id))
            .where(col(Item.id).in_(sorted(wanted)), col(Campaign.target_kind) == "response_pair")
        ).scalars()
    )
    problems = [
        RecordError(str(files.pairs_path), files.pairs[name][0], "id", f"{name!r} is no item of a pairwise campaign")
        for item_id, name in sorted(wanted.items())
        if item_id not in found
    ]
    if problems:
        raise _problems(files.pairs_path or Path("."), problems)
    return {item_id: _pair_row(item_id, files.pairs[name][1]) for item_id, name in wanted.items()}


def ingest_curation(engine: Engine, folder: Path, *, pairs: Path | None = None) -> CurationIngestReport:
    """Ingest the refine ``folder`` (and the ``pairs`` judgments) in one transaction; see the module docstring."""
    files = read_refine_dir(folder, pairs=pairs)
    report = CurationIngestReport(repeated_lines=files.repeated_lines)
    with write_session(engine) as session:
        pair_rows = _pairwise_items(session, files) if files.pairs else {}
        stored = ingest_scenarios(session, files.scenarios.values(), actor=ACTOR)
        report.scenarios_added, report.scenarios_updated = stored.scenarios_added, stored.scenarios_updated
        run = str(folder)
        reports = [_report_row(entry, run) for entry in files.reports.values()]
        report.reports_written = _upsert(session, CurationReport, "scenario_id", reports)
        verdicts = [_prescreen_row(entry, files.ranks.get(name)) for name, entry in files.prescreen.items()]
        report.prescreen_written = _upsert(session, PrescreenRow, "scenario_id", verdicts)
        report.pair_judgments_written = _upsert(session, PairJudgmentRow, "item_id", list(pair_rows.values()))
    return report
