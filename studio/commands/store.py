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
def ingest(run_dir: Path, replace: bool, db_url: str | None) -> None:
    """Ingest a run's scenarios, responses, scores and judge results (idempotent)."""
    from pipeline.jsonl import RecordError
    from studio.ingest import IngestError, ingest_run

    with open_store(db_url) as engine:
        try:
            report = ingest_run(engine, run_dir, replace=replace)
        except (IngestError, RecordError) as error:
            raise click.ClickException(str(error)) from None
    for name, value in report.model_dump().items():
        click.echo(f"{name}: {value}")


@click.group("db")
def db_group() -> None:
    """The studio's database."""


@db_group.command("upgrade")
@db_option
def upgrade(db_url: str | None) -> None:
    """Create or migrate the database to the latest schema."""
    with open_store(db_url):
        click.echo("database is at the latest revision")


COMMANDS: tuple[click.Command, ...] = (ingest, db_group)
