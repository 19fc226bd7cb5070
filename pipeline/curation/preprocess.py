"""``h2h preprocess``: replace personal identifiers, remove meta-commentary, flag what a curator must see.

Input: scenario JSONL (never modified). Output: the cleaned scenarios, every one of them in input order (nothing is
dropped), and a report with one :class:`~pipeline.curation.records.ScenarioReport` per scenario. Every span in a
flag is an offset into the field's *original* text; ``edits`` hold each changed field's whole text before and after.

The stage is a pure function of its input and options except for the optional LLM classifier, whose answers are
cached: a rerun after a kill writes the same files (both are written whole, atomically, at the end).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.curation.dedup import DEFAULT_NEAR_THRESHOLD, DuplicateIndex
from pipeline.curation.fields import text_fields, with_fields
from pipeline.curation.meta import meta_spans, roleplay_flags, template_flags
from pipeline.curation.pii import Replacement, apply_replacements, pii_flag, plan_pii
from pipeline.curation.pii.companion import companion_names
from pipeline.curation.records import DuplicateFlag, FieldEdit, Flag, MetaTextFlag, PiiFlag, ScenarioReport
from pipeline.curation.sensitive import (
    CLASSIFIER_PROMPT,
    CLASSIFIER_SAMPLING,
    classifier_flags,
    classifier_messages,
    load_lexicon,
)
from pipeline.dataset import scenario_problems
from pipeline.generation.base import Backend
from pipeline.jsonl import RecordError, validate_lines, write_records
from pipeline.llm import AnswerCache, Ask, AskStats, ask_all, ask_digest, load_prompt
from pipeline.records import Scenario

logger = logging.getLogger(__name__)

#: Fields the generating model wrote: meta-commentary is looked for there (not in the persona or context).
GENERATED_PREFIXES = ("history.", "user_input", "reference")


class InputProblems(ValueError):
    """The input has bad lines; ``problems`` holds each as ``file:line: field: problem``."""

    def __init__(self, problems: list[RecordError]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} bad line(s); first: {problems[0]}")


def read_input(path: Path) -> list[Scenario]:
    """Every scenario of ``path``, or :class:`InputProblems` listing every bad line (and repeated ids)."""
    records, problems = validate_lines(path, Scenario)
    first_line: dict[str, int] = {}
    for number, scenario in records:
        problems.extend(scenario_problems(path, number, scenario))
        if scenario.id in first_line:
            problems.append(
                RecordError(
                    path, number, "id", f"duplicate id {scenario.id!r} (first on line {first_line[scenario.id]})"
                )
            )
        first_line.setdefault(scenario.id, number)
    if problems:
        raise InputProblems(sorted(problems, key=lambda problem: problem.line))
    return [scenario for _, scenario in records]


@dataclass(frozen=True)
class Classifier:
    """The optional LLM classifier: a backend answering as ``model``, and its answer cache file."""

    model: str
    backend: Backend
    cache_path: Path


@dataclass
class PreprocessSummary:
    """What preprocess found: scenarios, changed ones, flags per kind, scenarios per kind, PII per entity.

    ``entities`` counts replacements by entity ("NAME"), and hits left in place by entity and action
    ("PHONE (kept)", "NAME (review)"), so the terminal table shows both."""

    scenarios: int = 0
    changed: int = 0
    flags: Counter[str] = field(default_factory=Counter)
    flagged_scenarios: Counter[str] = field(default_factory=Counter)
    entities: Counter[str] = field(default_factory=Counter)
    classifier: AskStats | None = None


def clean_scenario(scenario: Scenario, *, keep_names: Sequence[str] = ()) -> tuple[Scenario, ScenarioReport]:
    """The cleaned scenario and its report (no duplicate or classifier flags: those need the whole file)."""
    fields = text_fields(scenario)
    keep = list(dict.fromkeys([*companion_names(scenario.persona), *keep_names]))
    plan = plan_pii(fields, keep=keep)
    flags: list[Flag] = []
    changes: dict[str, str] = {}
    lexicon = load_lexicon()
    for path, text in fields:
        replacements, field_flags = _field_edits(path, text, plan.get(path, []))
        flags.extend(field_flags)
        if replacements:
            after = apply_replacements(text, replacements)
            changes[path] = after.strip() if any(not item.after for item in replacements) else after
        if path == "reference" or (path.startswith("history.") and _is_assistant(scenario, path)):
            flags.extend(roleplay_flags(path, text))
        flags.extend(lexicon.flags(path, text))
    flags.extend(template_flags(scenario.reference, scenario.user_input))
    edits = [FieldEdit(field=path, before=text, after=changes[path]) for path, text in fields if path in changes]
    return with_fields(scenario, changes), ScenarioReport(id=scenario.id, flags=flags, edits=edits)


def _is_assistant(scenario: Scenario, path: str) -> bool:
    return scenario.history[int(path.split(".")[1])].role == "assistant"


def _field_edits(path: str, text: str, pii: list[Replacement]) -> tuple[list[Replacement], list[Flag]]:
    """The replacements of one field (meta-text removed, identifiers replaced) and their flags.

    Meta-text is removed only when something meaningful is left; an identifier inside removed meta-text goes
    with it (no PII flag, the meta flag holds the text). Identifier hits kept or flagged for review are flagged
    and change nothing.
    """
    spans = meta_spans(text) if path.startswith(GENERATED_PREFIXES) else []
    removal = [Replacement(span.start, span.end, "") for span in spans]
    left = apply_replacements(text, removal) if removal else text
    removed = bool(removal) and any(char.isalnum() for char in left)
    flags: list[Flag] = [
        MetaTextFlag(
            field=path,
            span=(span.start, span.end),
            source=f"rule:{span.rule}",
            reason="the generating model's meta-commentary"
            + ("" if removed else "; kept: removing it empties the field"),
            rule=span.rule,
            before=text[span.start : span.end],
            after="" if removed else text[span.start : span.end],
            removed=removed,
        )
        for span in spans
    ]
    if removed:
        pii = [item for item in pii if all(item.end <= cut.start or item.start >= cut.end for cut in removal)]
    flags.extend(pii_flag(path, item) for item in pii)
    return (removal if removed else []) + [item for item in pii if item.changes], flags


def duplicate_flags(scenarios: Sequence[Scenario], *, near_threshold: float) -> dict[str, DuplicateFlag]:
    """For each scenario that repeats an earlier one (input + reference, cleaned text), its flag."""
    index = DuplicateIndex(near_threshold=near_threshold)
    flags: dict[str, DuplicateFlag] = {}
    for scenario in scenarios:
        text = f"{scenario.user_input}\n{scenario.reference}"
        repeat = index.check(text)
        if repeat is not None:
            reason = f"{repeat.method} duplicate of {repeat.of} (similarity {repeat.similarity:.2f})"
            flags[scenario.id] = DuplicateFlag(
                field=None,
                source=f"dedup:{repeat.method}",
                reason=reason,
                of=repeat.of,
                similarity=repeat.similarity,
                method=repeat.method,
            )
        index.add(scenario.id, text)
    return flags


def classify(
    scenarios: Sequence[Scenario], classifier: Classifier, *, progress: bool
) -> tuple[dict[str, list[Flag]], AskStats]:
    """The LLM classifier's flags for each cleaned scenario (answers cached; failed calls reported in the stats)."""
    prompt = load_prompt(CLASSIFIER_PROMPT)
    asks = {scenario.id: Ask(classifier_messages(scenario, prompt), CLASSIFIER_SAMPLING) for scenario in scenarios}
    cache = AnswerCache(classifier.cache_path)
    answers, stats = ask_all(
        classifier.backend, classifier.model, list(asks.values()), cache, desc="classify", progress=progress
    )
    flags: dict[str, list[Flag]] = {}
    for scenario_id, ask in asks.items():
        answer = answers.get(ask_digest(classifier.model, ask.messages, ask.sampling))
        if answer is not None:
            flags[scenario_id] = list(classifier_flags(answer.raw, model=classifier.model))
    return flags, stats


def preprocess(
    scenarios: Sequence[Scenario],
    *,
    keep_names: Sequence[str] = (),
    near_threshold: float = DEFAULT_NEAR_THRESHOLD,
    classifier: Classifier | None = None,
    progress: bool = False,
) -> tuple[list[Scenario], list[ScenarioReport], PreprocessSummary]:
    """Clean every scenario; return the cleaned scenarios and reports (input order) and the summary."""
    cleaned, reports = [], []
    for scenario in scenarios:
        clean, report = clean_scenario(scenario, keep_names=keep_names)
        cleaned.append(clean)
        reports.append(report)
    duplicates = duplicate_flags(cleaned, near_threshold=near_threshold)
    summary = PreprocessSummary(scenarios=len(cleaned))
    extra: dict[str, list[Flag]] = {}
    if classifier is not None:
        extra, summary.classifier = classify(cleaned, classifier, progress=progress)
    for report in reports:
        if report.id in duplicates:
            report.flags.append(duplicates[report.id])
        report.flags.extend(extra.get(report.id, []))
    _count(reports, summary)
    return cleaned, reports, summary


def _count(reports: Iterable[ScenarioReport], summary: PreprocessSummary) -> None:
    for report in reports:
        summary.changed += bool(report.edits)
        summary.flags.update(flag.kind for flag in report.flags)
        summary.flagged_scenarios.update({flag.kind for flag in report.flags})
        summary.entities.update(
            flag.entity if flag.action == "replaced" else f"{flag.entity} ({flag.action})"
            for flag in report.flags
            if isinstance(flag, PiiFlag)
        )


def run_preprocess(source: Path, output: Path, report_path: Path, **options: object) -> PreprocessSummary:
    """Read ``source``, write the cleaned scenarios to ``output`` and the report to ``report_path`` (atomically).

    ``options`` are :func:`preprocess`'s. Raises :class:`InputProblems` on bad input (nothing is written).
    """
    if source.resolve() in {output.resolve(), report_path.resolve()}:
        raise ValueError(f"{source}: the input file is never overwritten; write the output elsewhere")
    cleaned, reports, summary = preprocess(read_input(source), **options)  # type: ignore[arg-type]
    write_records(output, cleaned)
    write_records(report_path, reports)
    return summary
