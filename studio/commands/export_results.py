"""``h2h export {leaderboard,leaderboard-ppi,sap,instruction,agreement,adjudicated,dataset}``: result tables.

The format follows the output's suffix, looked up in the registry of export formats (.csv — UTF-8 with a byte-order
mark, formula-safe —, .jsonl, .parquet, …; see ``studio.results.export_formats``); the ``-o`` help lists the
registry's formats (:class:`FormatsHelpOption`). :data:`RESULT_EXPORTS` are added to the ``export`` group.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from studio.commands.options import db_option, open_store
from studio.results.defaults import DEFAULT_RESAMPLES

if TYPE_CHECKING:
    import pandas as pd
    from sqlmodel import Session

    from studio.services.research import LeaderboardView

Output = click.Path(dir_okay=False, path_type=Path)


class FormatsHelpOption(click.Option):
    """An option whose help names the registry's export formats when it is shown: ``help_template`` with
    ``{formats}`` replaced by ``studio.results.export_formats.describe_formats()`` (a format registered after this
    module was imported is named too)."""

    def __init__(self, *args: Any, help_template: str, **kwargs: Any) -> None:
        # the registry is read when the help is shown, not at import: ``h2h`` starts without loading pandas
        kwargs["help"] = help_template.format(formats="a registered export format")
        super().__init__(*args, **kwargs)
        self.help_template = help_template

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from studio.results.export_formats import describe_formats

        self.help = self.help_template.format(formats=describe_formats())
        return super().get_help_record(ctx)


def output_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``-o/--output FILE``: a file of one of the registered export formats (chosen by its suffix)."""
    return click.option(
        "-o",
        "--output",
        required=True,
        type=Output,
        cls=FormatsHelpOption,
        help_template="Output file: {formats}.",
    )(function)


@contextmanager
def store_session(db_url: str | None) -> Iterator[Session]:
    """A read session on the migrated store; service errors become click errors."""
    from studio.db import read_session

    with open_store(db_url) as engine, read_session(engine) as session:
        yield session


def write(frame: pd.DataFrame, output: Path, what: str) -> None:
    """Write ``frame`` by suffix and say so; an unknown suffix is a usage error."""
    from studio.results.export_formats import write_table

    try:
        write_table(frame, output)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--output") from None
    click.echo(f"wrote {len(frame)} {what} rows to {output}")


@click.command("leaderboard")
@output_option
@click.option("--variant", default=None, help="with_sap or without_sap (needed when the store holds both).")
@click.option("--signature", default=None, help="Score signature label (needed when the store holds several).")
@click.option("--judge", default=None, help="Judge label judge=MODEL|prompt=VERSION (needed when several).")
@click.option(
    "--coverage",
    "coverage_path",
    type=Output,
    default=None,
    help=(
        "Also write each cell's coverage here (model, column, counted, pending, subtasks_counted, subtasks; format "
        "by suffix)."
    ),
)
@click.option(
    "--intervals",
    "intervals_path",
    type=Output,
    default=None,
    help="Also write every cell's 95% bootstrap interval here (model, column, value, lower, upper; format by suffix).",
)
@click.option(
    "--fragility",
    "fragility_path",
    type=Output,
    default=None,
    help="Also write each adjacent pair's rank fragility here (format by suffix).",
)
@db_option
def leaderboard_export(
    output: Path,
    variant: str | None,
    signature: str | None,
    judge: str | None,
    coverage_path: Path | None,
    intervals_path: Path | None,
    fragility_path: Path | None,
    db_url: str | None,
) -> None:
    """Paper Table 2 from the store (``h2h leaderboard``'s definition): J_final for itinerary I–III once
    adjudicated; items awaiting adjudication are pending, left out of the means and reported per model and subtask;
    a dimension's average over fewer than all its subtasks is left empty and reported per model. Every cell's 95%
    interval, each model's rank range and each adjacent pair's rank fragility are the Research page's (one seeded
    computation); the method is printed on stderr."""
    from studio.services.research import leaderboard

    # The table alone is summed in the store (well under a second at the paper's size); the per-item rows and the
    # bootstrap only when an interval or fragility file is asked for.
    uncertainty = intervals_path is not None or fragility_path is not None
    with store_session(db_url) as session:
        view = leaderboard(session, variant=variant, signature=signature, judge=judge, intervals=uncertainty)
    write(view.table, output, "leaderboard")
    if coverage_path is not None:
        write(view.coverage, coverage_path, "coverage")
    _write_uncertainty(view, intervals_path=intervals_path, fragility_path=fragility_path)
    from pipeline.leaderboard import AVERAGES_RULE, describe_partial, describe_pending

    for line in describe_pending(view.board):
        click.echo(f"pending: {line}", err=True)
    partial = describe_partial(view.board)
    for line in partial:
        click.echo(f"partial: {line}", err=True)
    if partial:
        click.echo(AVERAGES_RULE, err=True)


def _write_uncertainty(view: LeaderboardView, *, intervals_path: Path | None, fragility_path: Path | None) -> None:
    """Write the leaderboard view's intervals and fragility where asked, and state on stderr how they were computed
    and each adjacent pair's fragility."""
    from pipeline.leaderboard_fragility import FRAGILITY_WORDS, format_fragility

    if view.intervals is not None:
        if intervals_path is not None:
            write(view.intervals.long(), intervals_path, "interval")
        click.echo(view.intervals.words(), err=True)
    if view.fragility is not None:
        if fragility_path is not None:
            write(view.fragility, fragility_path, "fragility")
        for line in format_fragility(view.fragility):
            click.echo(f"fragility: {line}", err=True)
        click.echo(FRAGILITY_WORDS, err=True)


@click.command("leaderboard-ppi")
@output_option
@click.option("--variant", default=None, help="with_sap or without_sap (needed when the store holds both).")
@click.option("--signature", default=None, help="Score signature label (needed when the store holds several).")
@click.option("--judge", default=None, help="Judge label judge=MODEL|prompt=VERSION (needed when several).")
@db_option
def leaderboard_ppi_export(
    output: Path, variant: str | None, signature: str | None, judge: str | None, db_url: str | None
) -> None:
    """Prediction-powered itinerary scores per model and judged subtask (``studio.results.ppi``): the judge on every
    judged item rectified by the experts on the seeded random audit, with Table 2's classic mean, the audit's own
    mean and interval, and the effective n. The rule goes to stderr."""
    from studio.services.research_ppi import ppi_table

    with store_session(db_url) as session:
        view = ppi_table(session, variant=variant, signature=signature, judge=judge)
    write(view.table, output, "leaderboard-ppi")
    click.echo(view.rule, err=True)


@click.command("sap")
@output_option
@click.option("--campaign", default=None, help="One sap_safety campaign (default: all of them).")
@click.option("--by-model", is_flag=True, help="One row per model and variant instead of per variant.")
@click.option("--signature", default=None, help="Score signature of BLEU-4/ROUGE-L/SS (needed when several).")
@click.option("--plot", type=Output, default=None, help="Also draw the violation rates (PNG/SVG/PDF).")
@db_option
def sap_export(
    output: Path, campaign: str | None, by_model: bool, signature: str | None, plot: Path | None, db_url: str | None
) -> None:
    """Paper Table 3: safety perception, violation rate, BLEU-4, ROUGE-L and SS per variant (complete items).

    Says the violation rule it counted by (the workflow's ``violation_tie``; the file's violation_tie column)."""
    from studio.results.tables import plot_safety, table3_rule
    from studio.services.research import sap_table

    with store_session(db_url) as session:
        table = sap_table(session, campaign=campaign, by_model=by_model, signature=signature)
    write(table, output, "SAP safety")
    click.echo(f"Table 3's {table3_rule(table)}")
    if plot is not None:
        plot_safety(table, plot)


@click.command("instruction")
@output_option
@click.option("--campaign", default=None, help="One instruction_following campaign (default: all of them).")
@click.option("--variant", default=None, help="Only responses of this variant (default: all).")
@click.option("--plot", type=Output, default=None, help="Also draw Fig. 7 (PNG/SVG/PDF), intervals as error bars.")
@click.option(
    "--intervals",
    "intervals_path",
    type=Output,
    default=None,
    help="Also write each cell's 95% interval here (model, kind, rating, low, high, responses; format by suffix).",
)
@db_option
def instruction_export(
    output: Path,
    campaign: str | None,
    variant: str | None,
    plot: Path | None,
    intervals_path: Path | None,
    db_url: str | None,
) -> None:
    """Instruction following per model and request kind (mean need-recognised rating): paper Fig. 7 as a table;
    each cell's 95% interval (responses, then raters within each response, resampled) with --intervals."""
    from studio.results.table_intervals import table_interval_words
    from studio.results.tables import plot_instruction_following
    from studio.services.research import instruction_table, instruction_table_intervals

    with store_session(db_url) as session:
        table = instruction_table(session, campaign=campaign, variant=variant)
        bounds = instruction_table_intervals(session, campaign=campaign, variant=variant)
    write(table, output, "instruction following")
    if intervals_path is not None:
        write(bounds, intervals_path, "interval")
        click.echo(f"Intervals: {table_interval_words()}", err=True)
    if plot is not None:
        plot_instruction_following(table.set_index("model"), plot, intervals=bounds)


@click.command("agreement")
@output_option
@click.option("--campaign", required=True, help="Campaign name.")
@click.option(
    "--items",
    type=click.Choice(["complete", "all"]),
    default="complete",
    show_default=True,
    help="The items every figure is computed over: the complete ones (those aggregation counts: answered by the "
    "campaign's complete_at) or all answered items. The output's item_set column says which, and how many were left "
    "out.",
)
@click.option(
    "--annotators",
    type=Output,
    default=None,
    help="Also write per-annotator agreement here (on nominal questions with each rater's estimated reliability: "
    "dawid_skene_reliability, mace_competence).",
)
@click.option("--gold", type=Output, default=None, help="Also write gold-item accuracy here.")
@click.option(
    "--resamples",
    default=DEFAULT_RESAMPLES,
    show_default=True,
    type=click.IntRange(min=0),
    help="Bootstrap resamples for α's interval.",
)
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@db_option
def agreement_export(
    output: Path,
    campaign: str,
    items: str,
    annotators: Path | None,
    gold: Path | None,
    resamples: int,
    seed: int,
    db_url: str | None,
) -> None:
    """Agreement per question (α with CI, Fleiss κ, percent agreement, counts) of one campaign, all over one item set
    (``--items``); ``h2h agreement`` on the exported votes with ``--quota`` at the campaign's complete_at gives the same
    numbers for the same seed."""
    from studio.services.research_quality import campaign_agreement

    with store_session(db_url) as session:
        view = campaign_agreement(session, campaign=campaign, items=items, resamples=resamples, seed=seed)
    write(view.by_question, output, "agreement")
    click.echo(f"items: agreement {view.item_set.describe()}", err=True)
    if annotators is not None:
        write(view.annotators, annotators, "annotator")
    if gold is not None:
        write(view.gold, gold, "gold")


@click.command("adjudicated")
@output_option
@click.option("--variant", default=None, help="Only this variant.")
@db_option
def adjudicated_export(output: Path, variant: str | None, db_url: str | None) -> None:
    """Itinerary I–III scores per response: S, J_judge, J, the experts' J_human and J_final (pending = empty)."""
    from pipeline.records import JUDGED_SUBTASKS
    from studio.services.research import leaderboard_rows

    with store_session(db_url) as session:
        rows = leaderboard_rows(session, variant=variant)
    rows = rows[rows["subtask"].isin(JUDGED_SUBTASKS)]
    columns = [
        "scenario_id",
        "model",
        "variant",
        "subtask",
        "S",
        "J_judge",
        "J",
        "J_human",
        "J_final",
        "needs_adjudication",
        "signature",
        "judge",
    ]
    write(rows[columns].reset_index(drop=True), output, "adjudicated")


@click.command("dataset")
@output_option
@click.option("--version", "version", required=True, help="Published dataset version name.")
@db_option
def dataset_export(output: Path, version: str, db_url: str | None) -> None:
    """A published dataset version's scenarios (JSONL loads with ``datasets.load_dataset("json", ...)``)."""
    import pandas as pd

    from studio.services.curation import dataset_version_records

    with store_session(db_url) as session:
        records = dataset_version_records(session, version=version)
    from studio.results.export_formats import format_for

    frame = pd.DataFrame.from_records(records)
    try:
        export_format = format_for(output)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--output") from None
    if export_format.text_cells:  # nested fields as JSON text: a CSV cell holds no structure
        for column in ("history", "tags", "context"):
            frame[column] = [json.dumps(value, ensure_ascii=False) for value in frame[column]]
    write(frame, output, "dataset")


RESULT_EXPORTS: tuple[click.Command, ...] = (
    leaderboard_export,
    leaderboard_ppi_export,
    sap_export,
    instruction_export,
    agreement_export,
    adjudicated_export,
    dataset_export,
)
