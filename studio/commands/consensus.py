"""``h2h consensus`` and ``h2h stopping-replay``: crowd decisions and early stopping on any votes file.

Both read a votes file as ``h2h agreement`` does (``h2h export votes``' own CSV, JSONL or Parquet, or any CSV with
``item``, ``annotator``, ``value``): its ``question`` column, when present, picks one question; the export's formula
guard (``'-2``) is taken off; an empty value is no vote. Every bad row is reported as ``file:line: field: problem``
with the line numbers of the file given (row numbers for JSONL / Parquet), and nothing is written.

``consensus`` decides each item by the majority (a tie stays ``tie``), Dawid–Skene or MACE
(:mod:`studio.results.consensus`); ``stopping-replay`` replays each item's votes in ``answered_at`` order through a
stopping rule (:mod:`studio.results.stopping`) and says what it would have saved and changed.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pipeline.csvsafe import neutralise_cell
from studio.commands.agreement import MAX_REPORTED_ERRORS, in_file_numbering, select_question, votes_option
from studio.commands.export_results import FormatsHelpOption, Output

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.jsonl import RecordError
    from studio.results.consensus import Method

#: What ``--votes`` takes, for both commands' help.
VOTES_HELP = (
    "Votes with columns item,annotator,value, e.g. h2h export votes' file: {formats}. An empty value is no vote "
    "(an item with none gets no decision); a rater voting twice on one item is an error."
)


@dataclass(frozen=True)
class Votes:
    """One question's votes, in file order: ``frame`` (item, annotator, value, line — the line in the file given)
    and whether the file had an ``answered_at`` column (then ``frame`` has it too, as UTC times)."""

    frame: pd.DataFrame
    timed: bool


def _method(_ctx: click.Context, _param: click.Parameter, value: str) -> Method:
    from studio.results.consensus import method_name

    try:
        return method_name(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def _fail(problems: list[RecordError]) -> None:
    """Report the bad rows (each ``file:line: field: problem``) and end the command, nothing written."""
    for problem in problems[:MAX_REPORTED_ERRORS]:
        click.echo(str(problem), err=True)
    if len(problems) > MAX_REPORTED_ERRORS:
        click.echo(f"... and {len(problems) - MAX_REPORTED_ERRORS} more problems", err=True)
    raise SystemExit(1)


def load_votes(path: Path, question: str | None) -> Votes:
    """``question``'s votes in ``path`` (every row when the file has no ``question`` column), empty values left out.

    Ends the command on a bad file: an unknown or unnamed question (``click.BadParameter`` listing those present),
    missing columns, a short or long row, an empty item or annotator, a rater voting twice on one item (both lines
    named), and — when the file has ``answered_at`` — a vote whose time is not ISO 8601.
    """
    import pandas as pd

    from studio.results.votes_csv import read_votes

    fast = _fast_frame(path, question)
    if fast is not None:
        return _votes(path, fast)
    with tempfile.TemporaryDirectory() as folder:
        target, lines = select_question(path, question, Path(folder) / "votes.csv")
        rows, problems = read_votes(target, "nominal")
        with open(target, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            timed = "answered_at" in (reader.fieldnames or [])
            stamps = [row.get("answered_at") or "" for row in reader] if timed else []

    if problems:
        _fail(in_file_numbering(problems, path=path, original_lines=lines))
    frame = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    frame["line"] = list(lines.values())
    if timed:
        frame["answered_at"] = stamps
    return _votes(path, frame)


def _votes(path: Path, frame: pd.DataFrame) -> Votes:
    """The checked rows without their empty values (no vote), with ``answered_at`` read as times where present."""
    frame = frame[frame["value"] != ""].reset_index(drop=True)
    timed = "answered_at" in frame.columns
    if timed:
        frame["answered_at"] = _times(path, frame)
    return Votes(frame=frame, timed=timed)


def _fast_frame(path: Path, question: str | None) -> pd.DataFrame | None:
    """A CSV whose rows are one line each, read in one go by pandas, when it holds nothing :func:`load_votes` would
    report; ``None`` (read it row by row, which names every problem's line) otherwise. Why: at a campaign's 93,000
    votes the row-by-row reading alone takes most of a second."""
    import pandas as pd

    from pipeline.csvsafe import FORMULA_PREFIXES

    if path.suffix.lower() != ".csv":
        return None
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError):
        return None
    with open(path, "rb") as handle:
        lines = handle.read().rstrip(b"\r\n").count(b"\n")  # rows + header - 1, when no cell spans lines
    needed = {"item", "annotator", "value"} | ({"question"} if question is not None else set())
    if lines != len(frame) or not needed <= set(frame.columns) or frame.isna().to_numpy().any():
        return None
    frame["line"] = range(2, len(frame) + 2)
    if "question" in frame.columns:
        if question is None or question not in set(frame["question"]):
            return None  # several questions and none named, or an absent one: the row-by-row path says which
        frame = frame[frame["question"] == question]
    for column in ("item", "annotator", "value"):
        frame[column] = frame[column].str.strip()
    if (frame["item"] == "").any() or (frame["annotator"] == "").any() or frame.duplicated(["item", "annotator"]).any():
        return None
    guarded = frame["value"].str.startswith("'") & frame["value"].str[1:].str.startswith(FORMULA_PREFIXES)
    frame.loc[guarded, "value"] = frame.loc[guarded, "value"].str[1:]
    kept = ["item", "annotator", "value", "line"] + (["answered_at"] if "answered_at" in frame.columns else [])
    return frame[kept].reset_index(drop=True)


def _times(path: Path, frame: pd.DataFrame) -> list[datetime]:
    """The votes' ``answered_at`` as UTC times (a time without a zone is taken as UTC); bad cells end the command."""
    from pipeline.jsonl import RecordError

    times, problems = [], []
    for line, text in zip(frame["line"], frame["answered_at"], strict=True):
        try:
            stamp = datetime.fromisoformat(text.strip())
        except ValueError:
            problems.append(RecordError(path, int(line), "answered_at", f"not an ISO 8601 time: {text!r}"))
            continue
        times.append(stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC))
    if problems:
        _fail(problems)
    return times


def _check_suffixes(*paths: Path | None) -> None:
    """An output whose suffix no export format is registered for is a usage error before anything is computed."""
    from studio.results.export_formats import format_for

    for option, path in zip(("--output", "--raters"), paths, strict=True):
        if path is None:
            continue
        try:
            format_for(path)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint=option) from None
        if not path.parent.is_dir():
            raise click.BadParameter(f"{path.parent} is not a folder", param_hint=option)


def _echo_table(frame: pd.DataFrame) -> None:
    """``frame`` as CSV on stdout, cells a spreadsheet would run as a formula guarded as in the CSV export."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(frame.columns)
    for row in frame.itertuples(index=False):
        writer.writerow([neutralise_cell(cell) if isinstance(cell, str) else cell for cell in row])
    click.echo(buffer.getvalue(), nl=False)


@click.command("consensus")
@votes_option(help_template=VOTES_HELP)
@click.option("--question", default=None, help="The question to decide, when the file has a question column.")
@click.option(
    "--method",
    required=True,
    callback=_method,
    help="majority (a tie is written 'tie', never broken), dawid-skene or mace (crowd-kit; reliability-weighted).",
)
@click.option(
    "-o",
    "--output",
    type=Output,
    default=None,
    cls=FormatsHelpOption,
    help_template="Write the decisions here ({formats}); default: CSV on stdout.",
)
@click.option(
    "--raters",
    "raters_path",
    type=Output,
    default=None,
    cls=FormatsHelpOption,
    help_template="Also write each rater's reliability here ({formats}): the model's estimate (Dawid–Skene: "
    "P(rater's label is true); MACE: competence), or for majority the share of votes equal to the majority.",
)
def consensus_command(
    votes_path: Path, question: str | None, method: Method, output: Path | None, raters_path: Path | None
) -> None:
    """Decide each item of one question: one row per item with item, decision, confidence (the model's posterior of
    the decision; the majority's share for majority) and votes."""
    from studio.results.consensus import decide_with_raters
    from studio.results.export_formats import write_table

    _check_suffixes(output, raters_path)
    votes = load_votes(votes_path, question)
    if votes.frame.empty:
        raise click.BadParameter(f"{votes_path} holds no vote (every value is empty)", param_hint="--votes")
    decisions, raters = decide_with_raters(votes.frame, method=method)
    if output is None:
        _echo_table(decisions)
    else:
        write_table(decisions, output)
        click.echo(f"wrote {len(decisions)} decisions to {output}", err=True)
    if raters_path is not None:
        write_table(raters, raters_path)
        click.echo(f"wrote {len(raters)} raters to {raters_path}", err=True)


@click.command("stopping-replay")
@votes_option(
    help_template=VOTES_HELP + " Replayed in answered_at order where the file has that column, else in file order."
)
@click.option("--question", default=None, help="The question to replay, when the file has a question column.")
@click.option("--rule", required=True, type=click.Choice(["curtail", "predictive"]), help="The stopping rule.")
@click.option(
    "--confidence",
    default=0.99,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="predictive: stop once P(full-quota decision = current one) reaches this.",
)
@click.option(
    "--min-votes", default=5, show_default=True, type=click.IntRange(min=1), help="predictive: never stop earlier."
)
@click.option("--quota", default=20, show_default=True, type=click.IntRange(min=1), help="Votes per item (complete).")
@click.option(
    "--min-share",
    default=None,
    type=click.FloatRange(0, 1),
    help="The workflow's min_agreement: a winning share below it is a decision of its own (it goes to experts).",
)
def stopping_replay_command(
    votes_path: Path,
    question: str | None,
    rule: str,
    confidence: float,
    min_votes: int,
    quota: int,
    min_share: float | None,
) -> None:
    """Replay each item's votes through a stopping rule and print one JSON object: items, votes_total, votes_used,
    saved_fraction, identical_fraction and changed_items (the items whose decision at the stop differs from the
    decision on all their votes), with the settings and the order replayed. The labels are the values the file holds
    for the question; the decision is the plurality (a tie is its own decision)."""
    from studio.results.stopping import DecidedQuestion, replay

    votes = load_votes(votes_path, question)
    frame = votes.frame
    if votes.timed:
        frame = frame.sort_values("answered_at", kind="stable")
    orders = {str(item): list(group["value"]) for item, group in frame.groupby("item", sort=False)}
    _check_quota(votes_path, frame, quota)
    labels = tuple(sorted(frame["value"].unique()))
    decided = DecidedQuestion(question or "", labels, "plurality", min_share)
    result = replay(orders, quota=quota, question=decided, rule=rule, confidence=confidence, min_votes=min_votes)  # type: ignore[arg-type]
    report = {
        **result.to_dict(),
        "question": question,
        "labels": list(labels),
        "rule": rule,
        "quota": quota,
        "min_share": min_share,
        "order": "answered_at" if votes.timed else "file order (the file has no answered_at column)",
        "items_below_quota": sum(len(values) < quota for values in orders.values()),
    }
    if rule == "predictive":
        report |= {"confidence": confidence, "min_votes": min_votes}
    click.echo(json.dumps(report, ensure_ascii=False))


def _check_quota(path: Path, frame: pd.DataFrame, quota: int) -> None:
    """An item with more votes than ``quota`` cannot be replayed against it: name the first vote past the quota."""
    from pipeline.jsonl import RecordError

    position = frame.groupby("item", sort=False).cumcount()
    extra = frame[position == quota]
    if not extra.empty:
        problems = [
            RecordError(
                path, int(line), "item", f"item {item!r} has more than --quota {quota} votes; this is vote {quota + 1}"
            )
            for item, line in zip(extra["item"], extra["line"], strict=True)
        ]
        _fail(problems)


COMMANDS: tuple[click.Command, ...] = (consensus_command, stopping_replay_command)
