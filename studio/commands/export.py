"""``h2h export``: files out of the studio (subcommands added by their owners).

Every export writes a temporary file beside its output and renames it over the output at the end
(``pipeline.jsonl.atomic_target``): an export stopped by an error, Ctrl+C or SIGTERM leaves the output as it was and
no temporary behind it.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from studio.commands.export_results import FormatsHelpOption
from studio.commands.options import db_option, open_store

#: The exit status of an export stopped by SIGTERM (128 + the signal's number, as a shell reports it).
TERMINATED_EXIT = 128 + signal.SIGTERM


def _stop(signum: int, _frame: object) -> None:
    """SIGTERM as an exception: the writers' cleanup (``pipeline.jsonl.atomic_target``) runs, so the output file is
    left as it was and no temporary stays beside it (the default SIGTERM ends the process without running any)."""
    click.echo(f"export stopped (signal {signum}): the output file was left as it was", err=True)
    raise SystemExit(TERMINATED_EXIT)


def exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM into :class:`SystemExit` for the rest of this process (only the main thread may set it)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)


@click.group("export")
def export() -> None:
    """Export votes, scores and reports."""
    exit_cleanly_on_sigterm()


@export.command("votes")
@click.option("--campaign", required=True, help="Campaign name.")
@click.option("--question", default=None, help="Only this question's answers (the file h2h agreement reads).")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    cls=FormatsHelpOption,
    help_template="Output file: {formats}.",
)
@db_option
def votes(campaign: str, question: str | None, output: Path, db_url: str | None) -> None:
    """One row per stored answer per question: item, what was rated (model, variant; both sides of a pair as shown),
    annotator, question, value, time (format by suffix)."""
    from studio.services.votes_export import export_votes

    with open_store(db_url) as engine:  # an unknown campaign's NotFound becomes a click error there
        try:
            count = export_votes(engine, campaign, output, question=question)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--output/--question") from None
    click.echo(f"wrote {count} rows to {output}")


def add_result_exports(group: click.Group) -> click.Group:
    """Add the researchers' exports (leaderboard, sap, instruction, agreement, adjudicated, dataset), the live
    campaigns' (``sap`` on a live campaign, transcripts: ``studio.commands.export_live``) and the curators' stops."""
    from studio.commands.export_live import LIVE_EXPORTS
    from studio.commands.export_results import RESULT_EXPORTS
    from studio.commands.export_stops import stops_export

    for command in (*RESULT_EXPORTS, stops_export, *LIVE_EXPORTS):  # the live-aware sap replaces the batch one
        group.add_command(command)
    return group


COMMANDS: tuple[click.Command, ...] = (add_result_exports(export),)
