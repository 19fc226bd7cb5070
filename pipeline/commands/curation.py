"""``h2h preprocess`` and ``h2h refine``: clean scenarios, then pre-screen them and order them for people."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pipeline.curation.preprocess import PreprocessSummary
    from pipeline.curation.records import QueueItem
    from pipeline.generation.base import Backend

IN_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
OUT_FILE = click.Path(dir_okay=False, path_type=Path)


def endpoint_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--base-url, --api-key, --concurrency, --timeout, --no-progress: how every LLM stage reaches its endpoint."""
    for option in reversed(
        [
            click.option(
                "--base-url", default=None, help="OpenAI-compatible endpoint (default: the openai package's)."
            ),
            click.option("--api-key", default=None, envvar="OPENAI_API_KEY", help="API key (env OPENAI_API_KEY)."),
            click.option("--concurrency", default=8, show_default=True, type=click.IntRange(min=1)),
            click.option(
                "--timeout", default=120.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds/request."
            ),
            click.option("--no-progress", is_flag=True, help="Hide the progress bar."),
        ]
    ):
        command = option(command)
    return command


def make_backend(model: str, endpoint: dict[str, Any]) -> Backend:
    from pipeline.llm import openai_backend

    return openai_backend(
        model=model,
        base_url=endpoint["base_url"],
        api_key=endpoint["api_key"],
        concurrency=endpoint["concurrency"],
        timeout=endpoint["timeout"],
    )


def read_or_fail(source: Path) -> Any:
    """The scenarios of ``source``; every bad line on stderr as ``file:line: field: problem``, then exit 1."""
    from pipeline.curation.preprocess import InputProblems, read_input

    try:
        return read_input(source)
    except InputProblems as error:
        for problem in error.problems:
            click.echo(str(problem), err=True)
        raise click.ClickException(f"{len(error.problems)} bad line(s) in {source}; nothing written") from error


def summary_lines(summary: PreprocessSummary) -> list[str]:
    """The terminal table: per flag kind the scenarios flagged and the flags; PII per entity."""
    from pipeline.curation.records import FLAG_KINDS

    lines = [f"{'flag kind':<20} {'scenarios':>9} {'flags':>6}"]
    lines += [f"{kind:<20} {summary.flagged_scenarios[kind]:>9} {summary.flags[kind]:>6}" for kind in FLAG_KINDS]
    lines.append(f"{'scenarios':<20} {summary.scenarios:>9}   changed: {summary.changed}")
    if summary.entities:
        lines.append("pii: " + ", ".join(f"{entity} {count}" for entity, count in sorted(summary.entities.items())))
    if summary.classifier is not None:
        stats = summary.classifier
        lines.append(f"classifier: {stats.calls} calls, {stats.from_cache} from cache, {len(stats.failures)} failed")
    return lines


@click.command("preprocess")
@click.argument("source", type=IN_FILE)
@click.option("-o", "--output", required=True, type=OUT_FILE, help="Cleaned scenario JSONL.")
@click.option("--report", "report_path", required=True, type=OUT_FILE, help="Report JSONL: one line per scenario.")
@click.option(
    "--keep-name", "keep_names", multiple=True, help="A name never replaced (the companion's, if the persona hides it)."
)
@click.option(
    "--near-threshold",
    default=0.9,
    show_default=True,
    type=click.FloatRange(0.5, 1.0),
    help="rapidfuzz ratio of a near duplicate.",
)
@click.option(
    "--classifier-model", default=None, help="LLM that flags sensitive content (optional; temperature 0, cached)."
)
@click.option(
    "--cache",
    "cache_path",
    default=None,
    type=OUT_FILE,
    help="Classifier answer cache [default: REPORT's folder/classifier_cache.jsonl].",
)
@endpoint_options
def preprocess_command(
    source: Path,
    output: Path,
    report_path: Path,
    keep_names: tuple[str, ...],
    near_threshold: float,
    classifier_model: str | None,
    cache_path: Path | None,
    **endpoint: Any,
) -> None:
    """Replace personal identifiers, remove meta-commentary, flag sensitive content, role-play breaks, templated
    references and duplicates. SOURCE is never modified; every scenario is written, none dropped."""
    from pipeline.curation.preprocess import Classifier, preprocess
    from pipeline.jsonl import write_records

    if source.resolve() in {output.resolve(), report_path.resolve()}:
        raise click.UsageError("the input file is never overwritten: give other -o/--report paths")
    scenarios = read_or_fail(source)
    classifier = None
    if classifier_model:
        cache = cache_path or report_path.parent / "classifier_cache.jsonl"
        classifier = Classifier(classifier_model, make_backend(classifier_model, endpoint), cache)
    cleaned, reports, summary = preprocess(
        scenarios,
        keep_names=keep_names,
        near_threshold=near_threshold,
        classifier=classifier,
        progress=not endpoint["no_progress"],
    )
    write_records(output, cleaned)
    write_records(report_path, reports)
    for line in summary_lines(summary):
        click.echo(line)
    click.echo(f"wrote {len(cleaned)} scenarios to {output} and {len(reports)} report lines to {report_path}", err=True)
    if summary.classifier is not None and summary.classifier.failures:
        click.echo(f"{len(summary.classifier.failures)} classifier requests failed; rerun to retry them", err=True)
        raise SystemExit(1)


def queue_lines(queue: list[QueueItem], limit: int = 10) -> list[str]:
    """The head of the review queue as text lines."""
    lines = [f"{'rank':>4} {'uncert.':>7} {'human':>5} {'verdict':<8} id / reason"]
    for item in queue[:limit]:
        human = "yes" if item.needs_human else "no"
        lines.append(f"{item.rank:>4} {item.uncertainty:>7.3f} {human:>5} {item.verdict!s:<8} {item.id}: {item.reason}")
    if len(queue) > limit:
        lines.append(f"... {len(queue) - limit} more")
    return lines


@click.command("refine")
@click.argument("source", type=IN_FILE)
@click.option("--out", "folder", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
@click.option("--judge-model", default=None, help="The pre-screen LLM (keep/revise/discard, k samples).")
@click.option("--no-judge", is_flag=True, help="No pre-screen: the queue follows the preprocess flags alone.")
@click.option(
    "--samples", default=3, show_default=True, type=click.IntRange(min=1), help="Pre-screen samples per scenario."
)
@click.option("--classifier-model", default=None, help="LLM that flags sensitive content (optional).")
@click.option("--keep-name", "keep_names", multiple=True, help="A name never replaced.")
@endpoint_options
def refine_command(
    source: Path,
    folder: Path,
    judge_model: str | None,
    no_judge: bool,
    samples: int,
    classifier_model: str | None,
    keep_names: tuple[str, ...],
    **endpoint: Any,
) -> None:
    """Preprocess SOURCE, pre-screen it with an LLM (FairEval), and write the review queue, into FOLDER (resumable)."""
    from pipeline.curation.refine import Judge, RefineDir, refine

    if not judge_model and not no_judge:
        raise click.UsageError("give --judge-model, or --no-judge to order the queue by the preprocess flags alone")
    read_or_fail(source)
    judge = None if no_judge or not judge_model else Judge(judge_model, make_backend(judge_model, endpoint), samples)
    classifier_backend = make_backend(classifier_model, endpoint) if classifier_model else None
    out = RefineDir(folder)
    summary = refine(
        source,
        out,
        judge=judge,
        classifier_model=classifier_model,
        classifier_backend=classifier_backend,
        keep_names=keep_names,
        progress=not endpoint["no_progress"],
    )
    for line in summary_lines(summary.preprocess):
        click.echo(line)
    failed = 0
    if summary.prescreen is not None:
        screen = summary.prescreen
        verdicts = ", ".join(f"{name} {count}" for name, count in sorted(screen.verdicts.items()))
        click.echo(
            f"prescreen: {screen.written} screened ({verdicts}); {screen.needs_human} need a person; "
            f"{screen.stats.calls} calls, {screen.stats.from_cache} from cache"
        )
        failed = len(screen.incomplete)
    click.echo("queue for people (most uncertain first):")
    for line in queue_lines(summary.queue):
        click.echo(line)
    written = [out.cleaned, out.report] + ([out.prescreen] if summary.prescreen is not None else []) + [out.queue]
    click.echo(f"files in {out.root}: {', '.join(path.name for path in written)}", err=True)
    if failed:
        click.echo(f"{failed} scenario(s) lack a pre-screen answer; rerun the same command to retry them", err=True)
        raise SystemExit(1)


COMMANDS: tuple[click.Command, ...] = (preprocess_command, refine_command)
