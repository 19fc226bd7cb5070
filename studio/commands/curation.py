"""``h2h ingest-curation`` (a refine folder into the store), ``h2h export-pairs`` (a pairwise campaign's items as
``h2h judge-pairs`` input), ``h2h publish`` (the accepted scenarios as a dataset version) and ``h2h rater-agreement``
(the LLM rater against the humans on a pairwise campaign)."""

from __future__ import annotations

from pathlib import Path

import click

from studio.commands.options import db_option, open_store


@click.command("ingest-curation")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--pairs",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="h2h judge-pairs output over `h2h export-pairs` items (ids item-<n>): the LLM rater of a pairwise campaign.",
)
@db_option
def ingest_curation_command(folder: Path, pairs: Path | None, db_url: str | None) -> None:
    """Ingest an `h2h refine` FOLDER: cleaned scenarios, flags and PII replacements, LLM pre-screen verdicts and the
    review order (idempotent; every bad line is listed and nothing is stored)."""
    from studio.services.curation_ingest import ingest_curation
    from studio.services.ingest import IngestError

    with open_store(db_url, create=True) as engine:
        try:
            report = ingest_curation(engine, folder, pairs=pairs)
        except IngestError as error:
            for problem in error.problems:
                click.echo(str(problem), err=True)
            raise click.ClickException(
                f"{len(error.problems)} problem(s); nothing was stored" if error.problems else str(error)
            ) from None
    for repeat in report.repeated_lines:
        click.echo(f"note: {repeat}", err=True)
    for name, value in report.model_dump(exclude={"repeated_lines"}).items():
        click.echo(f"{name}: {value}")


@click.command("export-pairs")
@click.option("--campaign", required=True, help="A pairwise campaign.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="JSONL out.")
@db_option
def export_pairs_command(campaign: str, output: Path, db_url: str | None) -> None:
    """Write the campaign's items as `h2h judge-pairs` input ({"id": "item-<n>", "prompt", "response_a",
    "response_b"}), so its verdicts can be ingested beside the humans' (`h2h ingest-curation --pairs`)."""
    from pipeline.jsonl import write_records
    from studio.db import read_session
    from studio.services.rater import pair_inputs

    with open_store(db_url) as engine, read_session(engine) as session:
        pairs = pair_inputs(session, campaign=campaign)
    write_records(output, pairs)
    click.echo(f"wrote {len(pairs)} pairs to {output}")


@click.command("publish")
@click.option("--name", required=True, help="The version's name (e.g. v1).")
@click.option("--note", default=None, help="A note stored with the version.")
@click.option("--dry-run", is_flag=True, help="Only say what would be published and why; publish nothing.")
@db_option
def publish_command(name: str, note: str | None, dry_run: bool, db_url: str | None) -> None:
    """Publish the accepted scenarios (curators' edits applied) as an immutable dataset version, saying first what is
    published and why (by a curator, by the crowd's or the experts' rule); `h2h export dataset --version NAME -o FILE`
    writes it out."""
    from studio.db import write_session
    from studio.services.curation import decisions_text, publish_dataset, publish_preview

    with open_store(db_url) as engine, write_session(engine) as session:
        preview = publish_preview(session)
        click.echo(preview.words())
        for row in preview.rows:
            click.echo(f"  {row.scenario_id}\t{row.subtask}\t{row.decided_by}\t{row.why}")
        if dry_run:
            return
        version, created = publish_dataset(
            session, actor="h2h publish", name=name, note=note, expected_hash=preview.content_hash
        )
    counts = decisions_text(version.summary)
    state = "published" if created else "already published as"
    click.echo(f"{state} {version.name}: {version.n_scenarios} scenarios ({counts}); sha256 {version.content_hash}")


@click.command("rater-agreement")
@click.option("--campaign", required=True, help="A pairwise campaign with ingested LLM verdicts.")
@db_option
def rater_agreement_command(campaign: str, db_url: str | None) -> None:
    """How often the LLM rater's verdict equals the humans' majority on the campaign's items (and Cohen's kappa)."""
    from studio.db import read_session
    from studio.services.rater import llm_human_agreement

    with open_store(db_url) as engine, read_session(engine) as session:
        agreement = llm_human_agreement(session, campaign=campaign)
    for name, value in agreement.model_dump().items():
        click.echo(f"{name}: {value}")


COMMANDS: tuple[click.Command, ...] = (
    ingest_curation_command,
    export_pairs_command,
    publish_command,
    rater_agreement_command,
)
