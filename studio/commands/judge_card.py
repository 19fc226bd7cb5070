"""``h2h judge-card``: the judge-bias card (position flips, length bias, calibration error, the J < τ decision's κ)
from the store's adjudicated items and, for the position rows, an ``h2h judge-pairs`` file.

Reads the store as the research exports do (``studio.commands.export_results.store_session``; one variant,
signature and judge); a bad line of ``--pairs`` is named ``file:line: field: problem``.
"""

from __future__ import annotations

from pathlib import Path

import click

from studio.commands.export_results import Output, store_session, write
from studio.commands.options import db_option


@click.command("judge-card")
@click.option(
    "--pairs",
    "pairs_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="An h2h judge-pairs judgments.jsonl: the position-flip rate and the first-shown preference.",
)
@click.option("--variant", default=None, help="with_sap or without_sap (needed when the store holds both).")
@click.option("--signature", default=None, help="Score signature label (needed when the store holds several).")
@click.option("--judge", default=None, help="Judge label judge=MODEL|prompt=VERSION (needed when several).")
@click.option(
    "-o", "--output", type=Output, default=None, help="Write the card (one row per measure) here, format by suffix."
)
@db_option
def judge_card_command(
    pairs_path: Path | None,
    variant: str | None,
    signature: str | None,
    judge: str | None,
    output: Path | None,
    db_url: str | None,
) -> None:
    """The judge-bias card on adjudicated items: each measure with n, a 95% interval and whether it is material by
    the threshold its sentence states; the summary last. Without -o the sentences are printed."""
    from pipeline.curation.records import PairJudgment
    from pipeline.jsonl import RecordError, read_records
    from studio.services.research_judge import judge_bias

    pairs = None
    if pairs_path is not None:
        try:
            pairs = read_records(pairs_path, PairJudgment)
        except RecordError as error:
            raise click.ClickException(str(error)) from None
    with store_session(db_url) as session:
        card = judge_bias(session, variant=variant, signature=signature, judge=judge, pairs=pairs)
    if output is not None:
        write(card.table(), output, "judge-bias")
    else:
        for measure in card.measures:
            click.echo(f"{measure.measure} (n = {measure.n}): {measure.sentence}")
    click.echo(card.summary)


COMMANDS: tuple[click.Command, ...] = (judge_card_command,)
