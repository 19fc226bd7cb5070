"""``h2h export``: files out of the studio (subcommands added by their owners)."""

from __future__ import annotations

from pathlib import Path

import click

from studio.commands.options import db_option, open_store


@click.group("export")
def export() -> None:
    """Export votes, scores and reports."""


@export.command("votes")
@click.option("--campaign", required=True, help="Campaign name.")
@click.option("--question", default=None, help="Only this question's answers (the file h2h agreement reads).")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file: .csv (UTF-8 with BOM, formula-safe), .jsonl or .parquet.",
)
@db_option
def votes(campaign: str, question: str | None, output: Path, db_url: str | None) -> None:
    """One row per stored answer per question: item, what was rated (model, variant; both sides of a pair as shown),
    annotator, question, value, time (format by suffix)."""
    from studio.exports_votes import export_votes

    with open_store(db_url) as engine:  # an unknown campaign's NotFound becomes a click error there
        try:
            count = export_votes(engine, campaign, output, question=question)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--output/--question") from None
    click.echo(f"wrote {count} rows to {output}")


def add_result_exports(group: click.Group) -> click.Group:
    """Add the researchers' exports (leaderboard, sap, instruction, agreement, adjudicated, dataset)."""
    from studio.commands.export_results import RESULT_EXPORTS

    for command in RESULT_EXPORTS:
        group.add_command(command)
    return group


COMMANDS: tuple[click.Command, ...] = (add_result_exports(export),)
