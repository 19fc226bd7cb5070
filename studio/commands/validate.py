"""``h2h validate``: check scenario, response, score files and annotation schemas."""

from __future__ import annotations

from pathlib import Path

import click


def problems_of(path: Path) -> tuple[str, list[str]]:
    """Return ``(kind, problems)`` for one file: YAML files are workflows, JSONL files pipeline records."""
    if path.suffix in {".yaml", ".yml"}:
        from studio.workflows import check_schema_file

        return "workflow schema", check_schema_file(path)
    from pipeline.dataset import check_file, detect_kind

    # an undetectable file is named "unknown kind" in the summary line, never "None"
    return detect_kind(path) or "unknown kind", [str(problem) for problem in check_file(path)]


@click.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def validate_command(files: tuple[Path, ...]) -> None:
    """Check scenario, response, score, judgment and result JSONL files and annotation_schemas YAML files.

    Prints every problem as FILE:LINE: FIELD: PROBLEM and exits 1 if any file has one.
    """
    failed = False
    for path in files:
        kind, problems = problems_of(path)
        for problem in problems:
            click.echo(problem, err=True)
        failed = failed or bool(problems)
        status = f"{len(problems)} problem(s)" if problems else "ok"
        click.echo(f"{path}: {kind}: {status}")
    if failed:
        raise SystemExit(1)


COMMANDS: tuple[click.Command, ...] = (validate_command,)
