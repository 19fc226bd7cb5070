"""``h2h ranking``: a Bradley–Terry ranking of the systems a pairwise campaign compared, from its votes file.

Reads ``h2h export votes``' file (CSV, JSONL or Parquet) as ``h2h consensus`` does — ``--question`` picks one
question, the export's formula guard is taken off, an empty ``value_shown`` is no vote — and needs per vote
``model_a``, ``variant_a``, ``model_b``, ``variant_b`` and ``value_shown`` (A, B or tie). Every bad row is reported
as ``file:line: field: problem`` and nothing is written. The fit and the rest: :mod:`studio.results.ranking`.
"""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from studio.commands.agreement import in_file_numbering, plain_value, select_question, votes_option
from studio.commands.consensus import _echo_table, _fail
from studio.commands.export_results import FormatsHelpOption, Output

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.jsonl import RecordError

#: What the table printed on stdout shows (``-o`` writes wins, losses and ties too).
SHOWN_COLUMNS = ("competitor", "rating", "lower", "upper", "rank", "votes")


def _row_problems(path: Path, line: int, row: dict[str, str]) -> list[RecordError]:
    from pipeline.jsonl import RecordError
    from studio.results.ranking import CHOICES

    problems = [
        RecordError(path, line, field, "empty: the vote must name both sides")
        for field in ("model_a", "model_b")
        if not row.get(field)
    ]
    choice = row.get("value_shown") or ""
    if choice and choice not in CHOICES:
        problems.append(RecordError(path, line, "value_shown", f"{choice!r} is not one of {', '.join(CHOICES)}"))
    return problems


def load_pair_votes(path: Path, question: str | None) -> pd.DataFrame:
    """``question``'s votes in ``path`` with both sides named and a choice (rows with an empty ``value_shown`` left
    out); ends the command, naming every bad row, on missing columns or bad rows."""
    import pandas as pd

    from pipeline.jsonl import RecordError
    from studio.results.ranking import VOTE_COLUMNS

    with tempfile.TemporaryDirectory() as folder:
        target, lines = select_question(path, question, Path(folder) / "votes.csv")
        with open(target, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [column for column in VOTE_COLUMNS if column not in (reader.fieldnames or [])]
            if missing:
                raise click.BadParameter(f"{path} lacks the columns {', '.join(missing)}", param_hint="--votes")
            rows, problems = [], []
            line = reader.line_num
            for row in reader:
                start, line = line + 1, reader.line_num
                if None in row or any(row.get(column) is None for column in VOTE_COLUMNS):
                    problems.append(RecordError(path, start, "(row)", "the row's cell count differs from the header"))
                    continue
                plain = {column: plain_value(row[column] or "") for column in VOTE_COLUMNS}
                if plain["value_shown"]:
                    problems.extend(_row_problems(path, start, plain))
                    rows.append(plain)
    if problems:
        _fail(in_file_numbering(problems, path=path, original_lines=lines))
    return pd.DataFrame(rows, columns=list(VOTE_COLUMNS))


def _write_outputs(ranking: object, output: Path) -> None:
    from studio.results.export_formats import write_table
    from studio.results.ranking import Ranking, win_rate_rows

    assert isinstance(ranking, Ranking)
    write_table(ranking.table, output)
    stem = output.with_suffix("")
    write_table(win_rate_rows(ranking), stem.with_name(stem.name + ".winrates.csv"))
    write_table(ranking.fragility, stem.with_name(stem.name + ".fragility.csv"))
    click.echo(f"wrote {len(ranking.table)} systems to {output} (+ .winrates.csv, .fragility.csv)", err=True)


@click.command("ranking")
@votes_option(
    help_template="A pairwise campaign's votes (h2h export votes' file: {formats}) with model_a, variant_a, "
    "model_b, variant_b and value_shown (A, B or tie; empty = no vote)."
)
@click.option("--question", default=None, help="The pairwise question, when the file has several (e.g. preference).")
@click.option(
    "-o",
    "--output",
    type=Output,
    default=None,
    cls=FormatsHelpOption,
    help_template="Also write one row per system here ({formats}), with <stem>.winrates.csv and "
    "<stem>.fragility.csv beside it.",
)
def ranking_command(votes_path: Path, question: str | None, output: Path | None) -> None:
    """Rank the systems by Bradley–Terry (arena-rank, 95% sandwich intervals); print the table, the position bias
    and how many votes would swap each two neighbours (a greedy upper bound)."""
    from studio.results.export_formats import format_for
    from studio.results.ranking import bradley_terry
    from studio.results.ranking_fragility import fragility_lines

    if output is not None:
        try:
            format_for(output)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--output") from None
    votes = load_pair_votes(votes_path, question)
    try:
        ranking = bradley_terry(votes)
    except (ValueError, RuntimeError) as error:
        raise click.ClickException(f"{votes_path}: {error}") from None
    _echo_table(ranking.table[list(SHOWN_COLUMNS)].round({"rating": 1, "lower": 1, "upper": 1}))
    click.echo(str(ranking.position_bias["sentence"]))
    for line in fragility_lines(ranking.fragility):
        click.echo(line)
    if output is not None:
        _write_outputs(ranking, output)


COMMANDS: tuple[click.Command, ...] = (ranking_command,)
