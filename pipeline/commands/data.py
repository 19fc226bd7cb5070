"""``h2h import-upstream``: bring the public H2HTalk release into our scenario format."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from pipeline.dataset import UpstreamFile, UpstreamImport

#: Said after every import: the release cannot feed `h2h generate` / `h2h judge` (they refuse it, naming the file).
REFERENCES_ONLY = (
    "note: the public release holds references only (no persona, no user input): its scenarios can serve as "
    "references (curation: h2h refine, the studio's import; scoring responses you already have: h2h score-pairs) "
    "but cannot be generated for or judged — h2h generate and h2h judge refuse them. For a full run bring your own "
    "scenario JSONL with persona and user_input (h2h validate checks it)."
)


def summary_lines(result: UpstreamImport) -> list[str]:
    """Return the per-subtask summary table (imported, bad, paper Table 1 count, files) as text lines; a subtask
    fed by two files (one of them through ``--as``) shows their sums and both names."""
    from pipeline.records import SUBTASKS, TABLE1_COUNTS

    by_subtask: dict[str, list[UpstreamFile]] = {}
    for summary in result.files:
        if summary.subtask and not summary.refused:  # a refused second file imported nothing
            by_subtask.setdefault(summary.subtask, []).append(summary)
    lines = [f"{'subtask':<28} {'imported':>8} {'bad':>5} {'table1':>7}  file"]
    for subtask in SUBTASKS:
        found = by_subtask.get(subtask, [])
        imported, bad = sum(item.imported for item in found), sum(item.bad for item in found)
        names = " + ".join(item.path.name for item in found) or "(no file)"
        lines.append(f"{subtask:<28} {imported:>8} {bad:>5} {TABLE1_COUNTS[subtask]:>7}  {names}")
    total = sum(item.imported for found in by_subtask.values() for item in found)
    lines.append(f"{'total':<28} {total:>8} {len(result.problems):>5} {sum(TABLE1_COUNTS.values()):>7}")
    return lines


def warning_lines(result: UpstreamImport) -> list[str]:
    """Every file's warnings, with the ``--as`` option that imports it as the subtask its line count suggests (or
    that imports a file whose name is no subtask)."""
    lines = []
    for summary in result.files:
        for warning in summary.warnings:
            if summary.likely:
                warning += f"; import it as that with --as {summary.path.name}={summary.likely[0]}"
            elif summary.subtask is None:
                warning += f" (--as {summary.path.name}=SUBTASK imports it as SUBTASK)"
            lines.append(f"warning: {summary.path}: {warning}")
    return lines


def parse_as(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """``--as FILE=SUBTASK`` values as ``{FILE: SUBTASK}``; a malformed or repeated FILE is a usage error naming
    the value."""
    chosen: dict[str, str] = {}
    for value in values:
        name, sep, subtask = value.partition("=")
        name, subtask = name.strip(), subtask.strip()
        if not sep or not name or not subtask:
            example = "itinerary_initialize.jsonl=dialogue_schedule"
            raise click.BadParameter(f"{value!r}: expected FILE=SUBTASK, e.g. {example}")
        if chosen.get(name, subtask) != subtask:
            raise click.BadParameter(f"{value!r}: {name} is already imported as {chosen[name]}; give one subtask")
        chosen[name] = subtask
    return chosen


@click.command("import-upstream")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Scenario JSONL.")
@click.option("--skip-bad", is_flag=True, help="Write the good lines even when some are bad (the bad are listed).")
@click.option(
    "--as", "as_subtasks", multiple=True, metavar="FILE=SUBTASK", callback=parse_as,
    help="Import FILE of DIRECTORY as SUBTASK (repeatable), e.g. a file whose line count is another subtask's; "
    "its ids become SUBTASK-<file stem>-<line>.",
)  # fmt: skip
def import_upstream_command(directory: Path, output: Path, skip_bad: bool, as_subtasks: dict[str, str]) -> None:
    """Import the public H2HTalk layout: one {"response": ...} JSONL per subtask in DIRECTORY (references only)."""
    from pipeline.dataset import checked_as_subtasks, import_upstream
    from pipeline.jsonl import write_records

    try:
        chosen = checked_as_subtasks(directory, as_subtasks)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--as") from error
    result = import_upstream(directory, as_subtasks=chosen)
    for line in summary_lines(result):
        click.echo(line)
    for line in warning_lines(result):
        click.echo(line, err=True)
    for problem in result.problems:
        click.echo(f"bad line: {problem}", err=True)
    if result.problems and not skip_bad:
        raise click.ClickException(
            f"{len(result.problems)} bad line(s); nothing written to {output} (use --skip-bad to write the good ones)"
        )
    if not result.scenarios:
        raise click.ClickException(f"{directory}: no scenarios found (expected files such as dialogue_base.jsonl)")
    count = write_records(output, result.scenarios)
    skipped = f", skipped {len(result.problems)} bad line(s)" if result.problems else ""
    click.echo(f"wrote {count} scenarios to {output}{skipped}", err=True)
    click.echo(REFERENCES_ONLY)


COMMANDS: tuple[click.Command, ...] = (import_upstream_command,)
