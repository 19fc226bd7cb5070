"""``h2h export sap`` for live campaigns and ``h2h export transcripts`` (ARCHITECTURE.md "Live sessions").

``h2h export sap --campaign NAME`` on a ``live_session`` campaign writes the SAP table from its sessions
(``studio.services.live_results``): CSV on stdout by default, or the format ``-o``'s suffix names (the registry of
``studio.results.export_formats``; CSV cells a spreadsheet would run get an apostrophe); simulated users' sessions go
to ``--simulated FILE``, never into the people's table. The rule in words and the agreement go to stderr. On any
other campaign (or none) it is the batch Table 3 export of ``studio.commands.export_results`` as before.

``h2h export transcripts --campaign NAME -o FILE.jsonl`` writes one transcript per line, simulated ones marked.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from studio.commands.export_results import FormatsHelpOption, Output, sap_export, store_session, write
from studio.commands.options import db_option, open_store

if TYPE_CHECKING:
    import pandas as pd

    from studio.results.live_sap import LiveSapReport


def _is_live(campaign: str, db_url: str | None) -> bool:
    """Whether ``campaign`` names a live_session campaign (an unknown one is a click error there)."""
    from studio.services.queue import get_campaign

    with store_session(db_url) as session:
        return get_campaign(session, campaign).target_kind == "live_session"


def _csv_to_stdout(frame: pd.DataFrame) -> None:
    """The table as the CSV export writes it (formula-safe cells), on stdout without the byte-order mark."""
    from studio.results.export_formats import write_csv

    with tempfile.TemporaryDirectory() as folder:
        path = write_csv(frame, Path(folder) / "sap.csv")
        click.echo(path.read_text(encoding="utf-8-sig"), nl=False)


@click.command("sap")
@click.option(
    "-o",
    "--output",
    default=None,
    type=Output,
    cls=FormatsHelpOption,
    help_template="Output file: {formats}. A live campaign's table goes to stdout as CSV without it.",
)
@click.option("--campaign", default=None, help="A live_session or sap_safety campaign (default: all sap_safety ones).")
@click.option("--by-model", is_flag=True, help="sap_safety: one row per model and variant instead of per variant.")
@click.option("--signature", default=None, help="Score signature of BLEU-4/ROUGE-L/SS (needed when several).")
@click.option("--plot", type=Output, default=None, help="sap_safety: also draw the violation rates (PNG/SVG/PDF).")
@click.option("--batch-model", default=None, help="Live: whose batch scores stand beside it (default: the companion).")
@click.option("--simulated", "simulated", type=Output, default=None, help="Live: write simulated sessions' table here.")
@click.option("--resamples", default=2000, show_default=True, type=click.IntRange(min=0), help="Live: bootstrap n.")
@click.option("--seed", default=0, show_default=True, help="Live: bootstrap seed.")
@db_option
@click.pass_context
def sap_command(
    ctx: click.Context,
    /,
    output: Path | None,
    campaign: str | None,
    by_model: bool,
    signature: str | None,
    plot: Path | None,
    batch_model: str | None,
    simulated: Path | None,
    resamples: int,
    seed: int,
    db_url: str | None,
) -> None:
    """Paper Table 3: from a live campaign's sessions (per variant: sessions, raters, safety perception and violation
    rates per session and per reply with bootstrap intervals over sessions, tripwire hits, SAP-check pass rate,
    beside the batch BLEU-4, ROUGE-L, SS), or from sap_safety campaigns' ratings of responses."""
    if campaign is None or not _is_live(campaign, db_url):
        if output is None:
            raise click.UsageError("Missing option '-o' / '--output' (required for sap_safety tables).")
        ctx.invoke(
            sap_export,
            output=output,
            campaign=campaign,
            by_model=by_model,
            signature=signature,
            plot=plot,
            db_url=db_url,
        )
        return
    from studio.services.live_results import live_sap_report

    with store_session(db_url) as session:
        report = live_sap_report(
            session, campaign=campaign, signature=signature, batch_model=batch_model, resamples=resamples, seed=seed
        )
    _write_live(report, output=output, simulated=simulated)


def _write_live(report: LiveSapReport, *, output: Path | None, simulated: Path | None) -> None:
    """People's table to ``output`` (CSV on stdout without it), simulated users' to ``simulated``, words to stderr."""
    if output is not None:
        write(report.human, output, "live SAP")
    else:
        _csv_to_stdout(report.human)
    if simulated is not None:
        write(report.simulated, simulated, "simulated-session SAP")
        click.echo(report.simulated_rule, err=True)
    click.echo(report.rule, err=True)
    alpha = report.agreement.alpha if report.agreement is not None else None
    click.echo(f"{report.agreement_note}: alpha {alpha if alpha is not None else '(none)'}", err=True)


@click.command("transcripts")
@click.option("--campaign", required=True, help="A live_session campaign.")
@click.option("-o", "--output", required=True, type=Output, help="Output file (.jsonl): one transcript per line.")
@db_option
def transcripts_export(campaign: str, output: Path, db_url: str | None) -> None:
    """Every session of a live campaign, one JSON transcript per line (turns, tripwire signals, SAP checks, latency,
    tokens, the rating; simulated sessions marked ``"simulated": true``)."""
    from pipeline.jsonl import write_records
    from studio.db import read_session
    from studio.services.live_results import live_campaign
    from studio.services.live_transcripts import campaign_transcripts

    if output.suffix != ".jsonl":
        raise click.BadParameter("transcripts are written as JSONL: name a .jsonl file", param_hint="--output")
    with open_store(db_url) as engine, read_session(engine) as session:
        found = live_campaign(session, campaign)
        count = write_records(output, campaign_transcripts(session, campaign_id=int(found.id or 0)))
    click.echo(f"wrote {count} transcripts to {output}")


#: Added to the ``export`` group by ``studio.commands.export.add_result_exports`` (``sap`` in place of the batch one).
LIVE_EXPORTS: tuple[click.Command, ...] = (sap_command, transcripts_export)
