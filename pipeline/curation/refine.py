"""``h2h refine``: preprocess → prescreen → the review queue, in one folder (files in, files out, resumable).

Folder::

    DIR/cleaned.jsonl            the cleaned scenarios (preprocess OUT)
    DIR/preprocess_report.jsonl  one ScenarioReport per scenario
    DIR/prescreen.jsonl          one PrescreenVerdict per scenario (with --judge-model)
    DIR/queue.jsonl              QueueItems: the order in which people should see the scenarios
    DIR/cache/                   classifier.jsonl, prescreen.jsonl: every LLM answer

Every file is written whole and atomically, and every LLM answer is cached, so rerunning after a kill gives the
files of a clean run without repeating a call. Without a judge the queue orders scenarios by their preprocess
flags alone (source ``preprocess``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.curation.preprocess import Classifier, PreprocessSummary, preprocess, read_input
from pipeline.curation.prescreen import DEFAULT_SAMPLES, PrescreenSummary, prescreen
from pipeline.curation.records import FlagKind, QueueItem, ScenarioReport
from pipeline.curation.review_queue import prescreen_queue
from pipeline.generation.base import Backend
from pipeline.jsonl import write_records


@dataclass(frozen=True)
class Judge:
    model: str
    backend: Backend
    samples: int = DEFAULT_SAMPLES


@dataclass
class RefineSummary:
    preprocess: PreprocessSummary
    prescreen: PrescreenSummary | None = None
    queue: list[QueueItem] = field(default_factory=list)


class RefineDir:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.cleaned = self.root / "cleaned.jsonl"
        self.report = self.root / "preprocess_report.jsonl"
        self.prescreen = self.root / "prescreen.jsonl"
        self.queue = self.root / "queue.jsonl"
        self.cache = self.root / "cache"


def flag_kinds(reports: Sequence[ScenarioReport]) -> dict[str, list[FlagKind]]:
    """Each scenario's flag kinds (one entry per flag)."""
    return {report.id: [flag.kind for flag in report.flags] for report in reports}


def preprocess_queue(reports: Sequence[ScenarioReport]) -> list[QueueItem]:
    """Without an LLM verdict: the scenarios with more flags first (uncertainty 0: nothing was sampled)."""
    ordered = sorted(reports, key=lambda report: (-len(report.flags), report.id))
    items = []
    for rank, report in enumerate(ordered, start=1):
        kinds = sorted({flag.kind for flag in report.flags})
        reason = f"flags: {', '.join(kinds)}" if kinds else "no flags"
        items.append(
            QueueItem(
                rank=rank,
                id=report.id,
                source="preprocess",
                uncertainty=0.0,
                needs_human=bool(kinds),
                verdict=None,
                flags=kinds,
                reason=reason,
            )
        )
    return items


def refine(
    source: Path,
    folder: RefineDir,
    *,
    judge: Judge | None,
    classifier_model: str | None = None,
    classifier_backend: Backend | None = None,
    keep_names: Sequence[str] = (),
    progress: bool = False,
) -> RefineSummary:
    """Run the flow on ``source`` into ``folder``; raise :class:`~pipeline.curation.preprocess.InputProblems`."""
    scenarios = read_input(source)
    folder.root.mkdir(parents=True, exist_ok=True)
    classifier = None
    if classifier_model and classifier_backend is not None:
        classifier = Classifier(classifier_model, classifier_backend, folder.cache / "classifier.jsonl")
    cleaned, reports, pre_summary = preprocess(
        scenarios, keep_names=keep_names, classifier=classifier, progress=progress
    )
    write_records(folder.cleaned, cleaned)
    write_records(folder.report, reports)
    summary = RefineSummary(preprocess=pre_summary)
    kinds = flag_kinds(reports)
    if judge is None:
        summary.queue = preprocess_queue(reports)
    else:
        verdicts, summary.prescreen = prescreen(
            cleaned,
            judge_model=judge.model,
            backend=judge.backend,
            cache_path=folder.cache / "prescreen.jsonl",
            samples=judge.samples,
            flags=kinds,
            progress=progress,
        )
        write_records(folder.prescreen, verdicts)
        summary.queue = prescreen_queue(verdicts, kinds)
    write_records(folder.queue, summary.queue)
    return summary
