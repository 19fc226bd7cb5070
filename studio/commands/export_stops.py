"""``h2h export stops``: the items a campaign's ``stopping:`` rule stopped early (ARCHITECTURE.md "Crowd decisions").

One row per stop — item, scenario, votes_at_stop, rule, probability, stopped_at — in the order they happened, in the
format the output's suffix names (the registry of ``studio.results.export_formats``); without ``-o``, one JSON object
per line on stdout. The rule in words goes to stderr, as every table's rule is stated where it is shown.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from studio.commands.export_results import FormatsHelpOption, Output, store_session, write
from studio.commands.options import db_option


@click.command("stops")
@click.option("--campaign", required=True, help="Campaign name.")
@click.option(
    "-o",
    "--output",
    default=None,
    type=Output,
    cls=FormatsHelpOption,
    help_template="Output file: {formats}. Default: one JSON object per line on stdout.",
)
@db_option
def stops_export(campaign: str, output: Path | None, db_url: str | None) -> None:
    """The items the campaign's stopping rule stopped before their quota: item, scenario, votes_at_stop, rule,
    probability (that the decision stays; 1 for curtail), stopped_at."""
    import pandas as pd

    from studio.services.stopping import STOP_COLUMNS, stops_report

    with store_session(db_url) as session:
        report = stops_report(session, campaign=campaign)
    click.echo(report.statement, err=True)
    # ISO 8601 with its "T", as the votes export writes answered_at, so the two files join on time as written
    stops = [stop | {"stopped_at": stop["stopped_at"].isoformat()} for stop in report.stops]
    if output is not None:
        write(pd.DataFrame.from_records(stops, columns=list(STOP_COLUMNS)), output, "stop")
        return
    for stop in stops:
        click.echo(json.dumps(stop, ensure_ascii=False, default=str))
