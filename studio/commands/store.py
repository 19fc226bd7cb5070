"""``h2h ingest`` (a run directory into the store) and ``h2h db upgrade`` (migrations)."""

from __future__ import annotations

from pathlib import Path

import click

from studio.commands.options import db_option, open_store


@click.command("ingest")
@click.option(
    "--run",
    "run_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The run directory (scenarios, responses, scores, judgments / results).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Overwrite stored scores made with another score signature or judge (refused otherwise).",
)
@db_option
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
def ingest(run_dir: Path, replace: bool, db_url: str | None, no_progress: bool) -> None:
    """Ingest a run's scenarios, responses, scores and judge results (idempotent)."""
    from pipeline.jsonl import RecordError
    from studio.services.ingest import IngestError, ingest_run

    with open_store(db_url, create=True) as engine:
        try:
            report = ingest_run(engine, run_dir, replace=replace, progress=not no_progress)
        except IngestError as error:
            for problem in error.problems:  # every bad line, one per line; the message lists the first ones
                click.echo(str(problem), err=True)
            summary = f"{len(error.problems)} problem(s) in {run_dir}; nothing was stored" if error.problems else ""
            raise click.ClickException(summary or str(error)) from None
        except RecordError as error:
            raise click.ClickException(str(error)) from None
    for repeat in report.repeated_lines:
        click.echo(f"note: {repeat}", err=True)
    for name, value in report.model_dump(exclude={"repeated_lines"}).items():
        click.echo(f"{name}: {value}")
    if report.repeated_lines:
        click.echo(f"repeated_lines: {len(report.repeated_lines)} (identical lines, ingested once; listed above)")


@click.group("db")
def db_group() -> None:
    """The studio's database."""


@db_group.command("upgrade")
@db_option
def upgrade(db_url: str | None) -> None:
    """Create or migrate the database to the latest schema."""
    with open_store(db_url, create=True):
        click.echo("database is at the latest revision")


COMMANDS: tuple[click.Command, ...] = (ingest, db_group)
