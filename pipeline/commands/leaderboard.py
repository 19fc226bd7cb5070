"""``h2h leaderboard``: paper Table 2 from per-item scores or RUN/results.jsonl."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.leaderboard import Leaderboard


def check_run_results(scores_path: Path) -> None:
    """When ``scores_path`` is a run directory's ``results.jsonl``, refuse it if its scores changed since.

    Raises click.ClickException naming the mismatch and the command that rebuilds the file.
    """
    from pipeline.results import StaleResultsError, check_results_current
    from pipeline.rundir import RunDir

    run = RunDir(scores_path.parent)
    if scores_path.resolve() != run.results.resolve():
        return
    try:
        check_results_current(run)
    except StaleResultsError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("leaderboard")
@click.option(
    "--scores",
    "scores_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSONL with model, subtask, S (and J_final for itinerary I-III): e.g. RUN/results.jsonl.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the table as CSV here.")
@click.option(
    "--coverage",
    "coverage_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help=(
        "Write each cell's coverage as CSV here (model, column, counted, pending, subtasks_counted, subtasks): items "
        "counted and pending, and how many of the subtasks an average is over have counted items."
    ),
)
@click.option("--variant", type=click.Choice(["with_sap", "without_sap"]), help="Use only this variant's rows.")
@click.option("--signature", help="Use only rows with this score signature (the command lists those present).")
@click.option("--judge", help="Use only itinerary I-III rows of this judge model/prompt (the command lists those).")
@click.option(
    "--resamples",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples for the intervals and rank ranges (0 = no intervals, no fragility).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="The bootstrap's seed (same seed, same intervals)."
)
def leaderboard_command(
    scores_path: Path,
    output: Path | None,
    coverage_path: Path | None,
    variant: str | None,
    signature: str | None,
    judge: str | None,
    resamples: int,
    seed: int,
) -> None:
    """Build the leaderboard (paper Table 2): per-subtask means, dimension averages, item-weighted overall.

    Items flagged for human adjudication (J < 3.5 or no judge score) are pending until experts score them in the
    studio: they are left out of the means, and the command says how many per model and subtask. A dimension's
    average is left empty unless every one of its subtasks has counted items (the cell says how many have, the
    column is marked *); overall says how many of the 11 subtasks it covers when fewer than all.

    With --resamples N (default 1000) each cell shows its 95% percentile-bootstrap interval (items resampled within
    each subtask, paired across models by scenario), a rank-range column, and under the table each adjacent pair's
    fragility (fewest items whose removal swaps them). -o FILE.csv also writes FILE.intervals.csv and
    FILE.fragility.csv.
    """
    from pipeline.leaderboard import (
        LeaderboardError,
        build_leaderboard,
        describe_partial,
        describe_pending,
        load_score_rows,
        select_rows,
        write_coverage_csv,
        write_leaderboard_csv,
    )

    check_run_results(scores_path)
    try:
        rows = select_rows(load_score_rows(scores_path), variant=variant, signature=signature, judge=judge)
    except LeaderboardError as exc:
        raise click.ClickException(str(exc)) from exc
    if rows.empty:
        raise click.ClickException(f"{scores_path}: no score rows to tabulate")
    board = build_leaderboard(rows)
    for line in [*describe_pending(board), *describe_partial(board)]:
        click.echo(line, err=True)
    if coverage_path is not None:
        write_coverage_csv(board, coverage_path)
        click.echo(f"wrote the coverage of {len(board.table)} model row(s) to {coverage_path}", err=True)
    if output is None:
        click.echo(_printed(board, rows, resamples=resamples, seed=seed))
        return
    write_leaderboard_csv(board.table, output)
    click.echo(f"wrote {len(board.table)} model row(s) to {output}", err=True)
    if resamples:
        _write_uncertainty(rows, output, resamples=resamples, seed=seed)


def _printed(board: Leaderboard, rows: pd.DataFrame, *, resamples: int, seed: int) -> str:
    """The table for the terminal: with intervals, rank ranges, fragility and how they were computed unless
    ``resamples`` is 0."""
    from pipeline.leaderboard import format_leaderboard
    from pipeline.leaderboard_fragility import FRAGILITY_WORDS, format_fragility, leaderboard_fragility
    from pipeline.leaderboard_intervals import interval_cell_texts, leaderboard_intervals

    if not resamples:
        return format_leaderboard(board)
    intervals = leaderboard_intervals(rows, resamples=resamples, seed=seed)
    fragility = leaderboard_fragility(rows, intervals.board.table)
    text = format_leaderboard(intervals.board, shown=interval_cell_texts(intervals))
    return "\n".join([text, intervals.words(), "", *format_fragility(fragility), FRAGILITY_WORDS])


def _write_uncertainty(rows: pd.DataFrame, output: Path, *, resamples: int, seed: int) -> None:
    """Write OUTPUT's siblings FILE.intervals.csv and FILE.fragility.csv."""
    from pipeline.leaderboard_fragility import leaderboard_fragility, write_fragility_csv
    from pipeline.leaderboard_intervals import leaderboard_intervals, write_intervals_csv

    intervals = leaderboard_intervals(rows, resamples=resamples, seed=seed)
    intervals_path, fragility_path = output.with_suffix(".intervals.csv"), output.with_suffix(".fragility.csv")
    write_intervals_csv(intervals, intervals_path)
    write_fragility_csv(leaderboard_fragility(rows, intervals.board.table), fragility_path)
    click.echo(f"wrote intervals to {intervals_path} and fragility to {fragility_path}", err=True)


COMMANDS: tuple[click.Command, ...] = (leaderboard_command,)
