"""``h2h aggregate``: aggregate one campaign's answers (or every campaign's) by their schemas' rules."""

from __future__ import annotations

import json

import click

from studio.commands.options import db_option, open_store


@click.command("aggregate")
@click.option("--campaign", default=None, help="Campaign name (default: every campaign, oldest first).")
@db_option
def aggregate_command(campaign: str | None, db_url: str | None) -> None:
    """Majority / criteria / median / mean per the schema; writes statuses, review items and J_human / J_final.

    Idempotent: running it again changes nothing more. Prints one JSON summary line per campaign.
    """
    from studio.services.aggregation import aggregate

    with open_store(db_url) as engine:
        summaries = aggregate(engine, campaign=campaign or None)
    if not summaries:
        click.echo("no campaign to aggregate", err=True)
    for summary in summaries:
        click.echo(json.dumps(summary.model_dump(exclude={"table"}), ensure_ascii=False))


COMMANDS: tuple[click.Command, ...] = (aggregate_command,)
