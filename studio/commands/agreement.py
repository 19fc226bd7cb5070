"""``h2h agreement``: agreement statistics of one question's votes from a CSV file.

The file may be ``h2h export votes``'s own: its ``question`` column picks one question (``--question``), and the
apostrophe that export puts before formula-like cells (``'-2``) is taken off again before the values are read.
Problems are still reported with the line numbers of the file given.

``--quota N`` computes every figure over the complete items — those at least N annotators answered in the file (any
question) — as ``h2h export agreement`` does at the campaign's complete_at; without it, over every item in the file.
The output names the set (``item_set``) either way. Both commands call the same
``studio.results.agreement.agreement_report``, so the same votes and seed give the same α interval.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from studio.commands.export_results import FormatsHelpOption
from studio.results.defaults import DEFAULT_RESAMPLES
from studio.results.votes_table import plain_value as plain_value  # re-exported: the file commands' guard undo

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.jsonl import RecordError
    from studio.results.agreement import AgreementReport

#: The earlier line a duplicate vote's problem names (``studio.results.votes_csv``), in the copy's numbering.
_ALREADY = re.compile(r"on line (\d+)$")
#: How many bad rows to list before giving up on the file.
MAX_REPORTED_ERRORS = 20


def votes_option(*, help_template: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--votes FILE`` (an existing votes file, e.g. ``h2h export votes``'), passed as ``votes_path``; ``{formats}``
    in ``help_template`` names the registered formats. The file commands that read votes share it."""
    return click.option(
        "--votes",
        "votes_path",
        required=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        cls=FormatsHelpOption,
        help_template=help_template,
    )


@click.command("agreement")
@votes_option(
    help_template="Votes with columns item,annotator,value (empty value = no answer), e.g. h2h export votes' file: "
    "{formats}; a question column is picked with --question."
)
@click.option(
    "--level",
    required=True,
    type=click.Choice(["nominal", "ordinal", "interval", "ratio"]),
    help="Level of measurement of the question's answers.",
)
@click.option("--question", default=None, help="The question to rate, when the file has a question column.")
@click.option(
    "--quota",
    default=None,
    type=click.IntRange(min=1),
    help="Only the complete items: those that at least this many annotators answered in the file (any question) — "
    "the campaign's complete_at, which h2h export agreement applies. Default: every item in the file.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap resampling.")
@click.option(
    "--resamples", default=DEFAULT_RESAMPLES, show_default=True, help="Bootstrap resamples for α's 95% interval."
)
@click.option(
    "--annotators",
    "annotators_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    cls=FormatsHelpOption,
    help_template="Also write each annotator's agreement with the majority here (with --level nominal, also the "
    "estimated reliability: dawid_skene_reliability, mace_competence): {formats}.",
)
def agreement_command(
    votes_path: Path,
    level: str,
    question: str | None,
    quota: int | None,
    seed: int,
    resamples: int,
    annotators_path: Path | None,
) -> None:
    """Print Krippendorff's α (+ bootstrap 95% CI), Fleiss' κ and percent agreement of one question as JSON, with the
    item set they are computed over."""
    if resamples < 0:
        raise click.BadParameter("must be 0 or more", param_hint="--resamples")
    _single_threaded_blas()
    # the annotators' table needs the votes as a DataFrame; the figures alone are computed without pandas
    report = None if annotators_path is not None else _coded_report(votes_path, question, level, quota, resamples, seed)
    if report is None:
        report = _frame_report(votes_path, question, level, quota, resamples, seed, annotators_path)
    for note in (report.alpha_note, report.fleiss_kappa_note):
        if note:
            click.echo(f"note: {note}", err=True)
    summary = report.to_dict()
    click.echo(json.dumps({key: summary[key] for key in SUMMARY_KEYS}, ensure_ascii=False))


def _single_threaded_blas() -> None:
    """Ask OpenBLAS for one thread, unless the user chose a number or numpy is loaded already (then it is too late).

    The bootstrap's matrix products are small (resamples × items by items × values): OpenBLAS' worker threads only
    spin beside them — about 0.15 s of CPU, and as much wall time on two cores, of 93,000 answers (measured)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _coded_report(
    votes_path: Path, question: str | None, level: str, quota: int | None, resamples: int, seed: int
) -> AgreementReport | None:
    """The report of a clean CSV file, read by pyarrow and coded by numpy (no pandas: a quarter of a second of the
    command's start) — or ``None`` for any other file, or labels pandas could read otherwise: see
    ``studio.results.coded_ratings``. The same figures as :func:`_frame_report`'s (tested)."""
    from studio.results import votes_table
    from studio.results.agreement import report_from_ratings
    from studio.results.coded_ratings import coded_ratings
    from studio.results.item_sets import choose_coded_items

    table = votes_table.read_string_table(votes_path) if votes_path.suffix.lower() == ".csv" else None
    if table is None:
        return None
    has_question = "question" in table.column_names
    check_question(votes_path, votes_table.distinct_questions(table) if has_question else None, question)
    coded = votes_table.coded_votes(table, question=question, level=level)
    if coded is None:
        return None
    rule = "all" if quota is None else "complete"
    chosen, in_set = choose_coded_items(labels=coded.items, pair_items=coded.pair_items, items=rule, quota=quota)
    kept = in_set[coded.item_codes]
    ratings = coded_ratings(
        level=level,  # type: ignore[arg-type]
        items=coded.items,
        item_codes=coded.item_codes[kept],
        annotators=coded.annotators,
        annotator_codes=coded.annotator_codes[kept],
        values=coded.values,
        value_codes=coded.value_codes[kept],
    )
    return None if ratings is None else report_from_ratings(ratings, chosen, resamples=resamples, seed=seed)


def _frame_report(
    votes_path: Path,
    question: str | None,
    level: str,
    quota: int | None,
    resamples: int,
    seed: int,
    annotators_path: Path | None,
) -> AgreementReport:
    """The report of the votes read as DataFrames (any file); writes the annotators' table to ``annotators_path``
    when one is given."""
    from studio.results.agreement import agreement_report, annotator_agreement, choose_items, code_ratings

    frame, pairs = _load(votes_path, question, level)
    chosen = choose_items(pairs, items="all" if quota is None else "complete", quota=quota)
    report = agreement_report(frame, level=level, resamples=resamples, seed=seed, item_set=chosen)  # type: ignore[arg-type]
    if annotators_path is not None:
        from studio.results.export_formats import write_table
        from studio.services.research_quality import with_reliability  # the store's stack: only when asked

        selected = chosen.select(frame)
        table = annotator_agreement(code_ratings(selected, level=level))  # type: ignore[arg-type]
        # a nominal question's raters also get their estimated reliability (Dawid–Skene, MACE) beside agreement
        write_table(with_reliability(table, selected) if level == "nominal" else table, annotators_path)
    return report


#: What ``h2h agreement`` prints: the figures, their counts and the item set they are over.
SUMMARY_KEYS: tuple[str, ...] = (
    "alpha",
    "alpha_ci",
    "fleiss_kappa",
    "percent_agreement",
    "n_items",
    "n_annotators",
    "n_pairable_items",
    "items",
    "quota",
    "n_items_left_out",
    "item_set",
)


def _load(votes_path: Path, question: str | None, level: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The question's votes (item, annotator, value) and every (item, annotator) pair of the file, any question —
    what makes an item complete. Bad rows are reported by the file's own line numbers and end the command."""
    from studio.results import votes_table

    if votes_path.suffix.lower() == ".csv":  # the fast path: read once, checked column-wise
        table = votes_table.read_string_table(votes_path)
        if table is not None:
            has_question = "question" in table.column_names
            check_question(votes_path, votes_table.distinct_questions(table) if has_question else None, question)
            fast = votes_table.votes_and_pairs(table, question=question, level=level)
            if fast is not None:
                return fast
    return _load_rows(votes_path, question, level)


def _load_rows(votes_path: Path, question: str | None, level: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`_load` row by row: any votes format, and the file whose problems must be named line by line."""
    import pandas as pd

    from studio.results.votes_csv import read_votes

    header, kept = _read_rows(votes_path)
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "votes.csv"
        original_lines = _write_plain(_question_rows(votes_path, header, kept, question), header, target)
        rows, problems = read_votes(target, level)

    problems = in_file_numbering(problems, path=votes_path, original_lines=original_lines)
    if problems:
        for problem in problems[:MAX_REPORTED_ERRORS]:
            click.echo(str(problem), err=True)
        if len(problems) > MAX_REPORTED_ERRORS:
            click.echo(f"... and {len(problems) - MAX_REPORTED_ERRORS} more problems", err=True)
        raise SystemExit(1)
    answered = {((row.get("item") or "").strip(), (row.get("annotator") or "").strip()) for _, row in kept}
    pairs = pd.DataFrame(sorted(pair for pair in answered if all(pair)), columns=["item", "annotator"])
    return pd.DataFrame(rows, columns=["item", "annotator", "value"]), pairs


def in_file_numbering(problems: list[RecordError], *, path: Path, original_lines: dict[int, int]) -> list[RecordError]:
    """``problems`` found in a copy of the votes file holding one question's rows (:func:`select_question`), named by
    ``path`` and its own line numbers — also the earlier line a duplicate's message names ("… on line N")."""

    from pipeline.jsonl import RecordError

    def original(line: int) -> int:
        return original_lines.get(line, line)

    return [
        RecordError(
            path, original(p.line), p.field, _ALREADY.sub(lambda m: f"on line {original(int(m[1]))}", p.problem)
        )
        for p in problems
    ]


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str | None, str]]]]:
    """The header and (first line, row) pairs of a votes file: CSV (numbered by line), or a file of another
    registered export format, e.g. ``h2h export votes``' .jsonl / .parquet (numbered by row). A file that cannot be
    read is a usage error, not a traceback."""
    from studio.results.export_formats import cell_text, format_named, suffixes

    export_format = format_named(path.suffix.lower()[1:])
    if export_format is not None and export_format.name != "csv":  # CSV is read by line, to report line numbers
        try:
            frame = export_format.read_table(path)
        except (ValueError, OSError) as error:
            raise click.BadParameter(
                f"{path}: cannot read it as {path.suffix}: {error}", param_hint="--votes"
            ) from None
        frame = frame.astype(object).where(frame.notna(), None)
        rows: list[dict[str | None, str]] = [
            {str(column): cell_text(value) for column, value in record.items()} for record in frame.to_dict("records")
        ]
        return [str(column) for column in frame.columns], list(enumerate(rows, start=1))
    try:
        with open(path, encoding="utf-8-sig", newline="") as source:
            reader = csv.DictReader(source)
            header = list(reader.fieldnames or [])
            kept: list[tuple[int, dict[str | None, str]]] = []
            line = reader.line_num
            for row in reader:
                start, line = line + 1, reader.line_num
                kept.append((start, row))
    except UnicodeDecodeError as error:
        raise click.BadParameter(
            f"{path}: not UTF-8 CSV text ({error.reason} at byte {error.start}); votes come as {', '.join(suffixes())}",
            param_hint="--votes",
        ) from None
    return header, kept


def select_question(path: Path, question: str | None, target: Path) -> tuple[Path, dict[int, int]]:
    """Copy ``path``'s rows of ``question`` (all rows when the file has no ``question`` column) to ``target``
    with plain values; return ``target`` and the map from its rows' first lines to those of ``path``.

    Raises ``click.BadParameter`` when the file holds several questions and none, or an absent one, is named.
    """
    header, kept = _read_rows(path)
    return target, _write_plain(_question_rows(path, header, kept, question), header, target)


def _question_rows(
    path: Path, header: list[str], kept: list[tuple[int, dict[str | None, str]]], question: str | None
) -> list[tuple[int, dict[str | None, str]]]:
    """The rows of ``question`` (all of them when the file has no ``question`` column); see :func:`select_question`."""
    if "question" in header:
        check_question(path, sorted({row.get("question") or "" for _, row in kept}), question)
        return [(start, row) for start, row in kept if question is None or row.get("question") == question]
    check_question(path, None, question)
    return kept


def check_question(path: Path, present: list[str] | None, question: str | None) -> None:
    """Raise ``click.BadParameter`` unless ``question`` can be picked from a file holding the questions ``present``
    (sorted; ``None``: the file has no question column): one must be named where there are several, and exist."""
    if present is None:
        if question is not None:
            raise click.BadParameter(f"{path} has no question column", param_hint="--question")
        return
    if question is None and len(present) > 1:
        raise click.BadParameter(f"{path} holds the questions {', '.join(present)}; pick one", param_hint="--question")
    if question is not None and question not in present:
        raise click.BadParameter(
            f"{path} has no votes on {question!r} (it has {', '.join(present)})", param_hint="--question"
        )


def _write_plain(kept: list[tuple[int, dict[str | None, str]]], header: list[str], target: Path) -> dict[int, int]:
    with open(target, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for _, row in kept:
            cells = [
                plain_value(row[column]) if column == "value" and row[column] else row[column] for column in header
            ]
            # a short row stays short and a long one long (DictReader's None / None key), so read_votes still says so
            writer.writerow([cell for cell in cells if cell is not None] + list(row.get(None) or []))
    with open(target, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        next(reader, None)
        starts, line = [], reader.line_num
        for _ in reader:
            starts.append(line + 1)
            line = reader.line_num
    return {new: old for new, (old, _) in zip(starts, kept, strict=True)}


COMMANDS: tuple[click.Command, ...] = (agreement_command,)
