"""``h2h import-upstream``: bring the public H2HTalk release into our scenario format."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from pipeline.dataset import UpstreamFile, UpstreamImport


def summary_lines(result: UpstreamImport) -> list[str]:
    """Return the per-subtask summary table (imported, bad, paper Table 1 count, file) as text lines."""
    from pipeline.records import SUBTASKS, TABLE1_COUNTS

    by_subtask: dict[str, UpstreamFile] = {}
    for summary in result.files:
        if summary.subtask:  # a second file for one subtask is refused; the first one is the subtask's file
            by_subtask.setdefault(summary.subtask, summary)
    lines = [f"{'subtask':<28} {'imported':>8} {'bad':>5} {'table1':>7}  file"]
    for subtask in SUBTASKS:
        found = by_subtask.get(subtask)
        imported, bad = (found.imported, found.bad) if found else (0, 0)
        name = found.path.name if found else "(no file)"
        lines.append(f"{subtask:<28} {imported:>8} {bad:>5} {TABLE1_COUNTS[subtask]:>7}  {name}")
    total = sum(summary.imported for summary in by_subtask.values())
    lines.append(f"{'total':<28} {total:>8} {len(result.problems):>5} {sum(TABLE1_COUNTS.values()):>7}")
    return lines


@click.command("import-upstream")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Scenario JSONL.")
@click.option("--skip-bad", is_flag=True, help="Write the good lines even when some are bad (the bad are listed).")
def import_upstream_command(directory: Path, output: Path, skip_bad: bool) -> None:
    """Import the public H2HTalk layout: one {"response": ...} JSONL file per subtask in DIRECTORY."""
    from pipeline.dataset import import_upstream
    from pipeline.jsonl import write_records

    result = import_upstream(directory)
    for line in summary_lines(result):
        click.echo(line)
    for summary in result.files:
        for warning in summary.warnings:
            click.echo(f"warning: {summary.path}: {warning}", err=True)
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


COMMANDS: tuple[click.Command, ...] = (import_upstream_command,)
