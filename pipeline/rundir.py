"""The run directory: append-only files shared by the pipeline stages.

Layout (every per-response file is keyed by ``(scenario_id, model, variant)``)::

    RUN/manifest.json      what ran: one entry per stage invocation (arguments, versions, counts)
    RUN/scenarios.jsonl    the scenarios the run was asked about (copied on first generate)
    RUN/responses.jsonl    generate: one Response per key
    RUN/scores.jsonl       score: one Score per key
    RUN/judgments.jsonl    judge: one Judgment per key (itinerary levels I-III)
    RUN/results.jsonl      judge: one Result per key (S, J_judge, J, J_final, needs_adjudication), rebuilt whole
                           from scores + judgments (see pipeline.results for detecting a stale one)
    RUN/*.replaced-<time>.jsonl   scores/results set aside by ``score --rescore``, judgments by ``judge --rejudge``

A stage reads the keys already present in its output and does only the missing ones, so a killed
stage resumes where it stopped and the finished files equal those of a clean run.
"""

from __future__ import annotations

import json
import logging
import platform
import sys
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from pipeline.jsonl import JsonlAppender, atomic_target, read_records
from pipeline.records import Judgment, Response, Result, Scenario, Score, utc_now

logger = logging.getLogger(__name__)

RecordT = TypeVar("RecordT", Response, Score, Judgment, Result)


class RunDir:
    """Paths and keyed access to one run directory."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def scenarios(self) -> Path:
        return self.root / "scenarios.jsonl"

    @property
    def responses(self) -> Path:
        return self.root / "responses.jsonl"

    @property
    def scores(self) -> Path:
        return self.root / "scores.jsonl"

    @property
    def judgments(self) -> Path:
        return self.root / "judgments.jsonl"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    def ensure(self) -> RunDir:
        """Create the run directory if needed; return self."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    def load_scenarios(self) -> dict[str, Scenario]:
        """Return the run's scenarios by id (empty when none were stored yet)."""
        if not self.scenarios.exists():
            return {}
        return {scenario.id: scenario for scenario in read_records(self.scenarios, Scenario)}

    def load(self, path: Path, model: type[RecordT]) -> dict[tuple[str, str, str], RecordT]:
        """Return the records of ``path`` by key, for a stage of this run (the file is never changed).

        An incomplete last line (a stage killed while writing) is left out with a warning; the stage that
        appends to the file repairs it when it resumes. A key written twice (possible only if two processes ran
        one stage at once) keeps the first. ``h2h ingest`` reads run files strictly instead (studio.ingest).
        """
        if not path.exists():
            return {}
        records: dict[tuple[str, str, str], RecordT] = {}
        for record in read_records(path, model, torn_tail="skip"):
            records.setdefault(record.key, record)
        return records

    def appender(self, path: Path) -> JsonlAppender:
        """A crash-safe appender to ``path`` (a file of this run); the directory is created if needed."""
        self.ensure()
        return JsonlAppender(path)

    def record_stage(self, stage: str, **details: Any) -> None:
        """Append one entry to the manifest: the stage, its arguments and the environment."""
        self.ensure()
        manifest = self.read_manifest()
        manifest.setdefault("stages", []).append(
            {
                "stage": stage,
                "at": utc_now().isoformat(),
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                **details,
            }
        )
        with atomic_target(self.manifest) as temporary:
            temporary.write_text(json.dumps(manifest, ensure_ascii=False, indent=2, default=str), encoding="utf-8")

    def read_manifest(self) -> dict[str, Any]:
        """The manifest's content (``{"stages": []}`` before any stage ran)."""
        if not self.manifest.exists():
            return {"stages": []}
        manifest: dict[str, Any] = json.loads(self.manifest.read_text(encoding="utf-8"))
        return manifest


def model_dump_line(record: BaseModel) -> str:
    """Serialise a record exactly as the run-directory files hold it (one line, UTF-8, no escapes)."""
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False)
