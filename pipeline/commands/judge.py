"""``h2h judge``: grade itinerary I-III responses with an LLM judge, then write RUN/results.jsonl."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from pipeline.generation.openai_compat import OpenAIBackend
    from pipeline.rundir import RunDir


@click.command("judge")
@click.option("--run", "run_path", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--judge-model", default=None, help="The judge's model id on the endpoint (e.g. gpt-4o).")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint (default: the openai package's).")
@click.option("--api-key", default=None, envvar="OPENAI_API_KEY", help="API key (env OPENAI_API_KEY).")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--timeout", default=120.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds/request.")
@click.option(
    "--cache",
    "cache_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Judge answer cache directory [default: RUN/judge_cache].",
)
@click.option("--rejudge", is_flag=True, help="Replace judgments made by another judge model or rubric (kept aside).")
@click.option("--no-judge", is_flag=True, help="No endpoint: J_judge stays empty and every itinerary I-III is flagged.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def judge(
    run_path: Path,
    judge_model: str | None,
    base_url: str | None,
    api_key: str | None,
    concurrency: int,
    timeout: float,
    cache_dir: Path | None,
    rejudge: bool,
    no_judge: bool,
    no_progress: bool,
) -> None:
    """Judge RUN's itinerary I-III responses (cached, resumable), then write RUN/results.jsonl from its scores.

    A results file left stale by a rescore is detected and rebuilt (said on stderr). A run without scores, or
    with a response to judge whose scenario has no user input, is refused before any judge call.
    """
    from pipeline.llm import openai_backend
    from pipeline.results import require_scores
    from pipeline.rundir import RunDir

    run = RunDir(run_path)
    if not no_judge and not judge_model:
        raise click.UsageError("give --judge-model, or --no-judge when no endpoint is available")
    try:
        require_scores(run)  # the results need them: fail before paying for every judge call
    except FileNotFoundError as error:
        raise click.ClickException(str(error)) from error
    failures = 0
    if no_judge or judge_model is None:
        run.record_stage("judge", judge_model=None, no_judge=True, **formula())
    else:
        backend = openai_backend(
            model=judge_model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout
        )
        cache = cache_dir or run.root / "judge_cache"
        progress = not no_progress
        failures = judge_with(run, backend, cache_dir=cache, base_url=base_url, rejudge=rejudge, progress=progress)
    rebuild_results(run, use_judgments=not no_judge)
    if failures:
        click.echo(f"{failures} judge requests failed; rerun the same command to retry them", err=True)
        raise SystemExit(1)


def formula() -> dict[str, object]:
    """The J formula, alpha and tau, as the judge stage records them: Eq. 3 with S scaled to [0, 5] is this project's
    reading (README "Where this project departs from the paper"), so the manifest says which one made the numbers."""
    from pipeline.scoring.combine import J_FORMULA
    from pipeline.taxonomy import ALPHA, TAU

    return {"j_formula": J_FORMULA, "alpha": ALPHA, "tau": TAU}


def rebuild_results(run: RunDir, *, use_judgments: bool) -> None:
    """Write RUN/results.jsonl from the scores (and judgments); say so when the file it replaces was stale."""
    from pipeline.jsonl import RecordError
    from pipeline.results import stale_results_reason, write_results

    try:
        stale = stale_results_reason(run)
    except RecordError as error:
        if error.path != str(run.results):
            raise click.ClickException(str(error)) from error
        stale = f"{error} (an unreadable results file)"  # derived data: rebuilding it loses nothing
    try:
        count, flagged = write_results(run, use_judgments=use_judgments)
    except (FileNotFoundError, RecordError) as error:
        raise click.ClickException(str(error)) from error
    if stale is not None:
        click.echo(f"{stale}; rebuilt it from the current scores", err=True)
    click.echo(f"results: {count} written to {run.results}; {flagged} flagged for human adjudication")


def judge_with(
    run: RunDir, backend: OpenAIBackend, *, cache_dir: Path, base_url: str | None, rejudge: bool, progress: bool
) -> int:
    """Run the judge (the model is ``backend.model``), record the stage in the manifest, print its counts;
    return how many requests failed. Bad run contents and a judge that would mix become click errors."""
    from pipeline.jsonl import RecordError
    from pipeline.judge import JudgeInputError, run_judge

    judge_model = backend.model
    try:
        summary = run_judge(
            run, judge_model=judge_model, backend=backend, cache_dir=cache_dir, rejudge=rejudge, progress=progress
        )
    except (JudgeInputError, RecordError) as error:
        raise click.ClickException(str(error)) from error
    failures = len(summary.failures)
    run.record_stage(
        "judge", judge_model=judge_model, base_url=base_url, planned=summary.planned, calls=summary.calls,
        from_cache=summary.from_cache, written=summary.written, tokens=summary.tokens, failures=failures, **formula(),
    )  # fmt: skip
    click.echo(
        f"judge: {summary.planned} to judge, {summary.from_cache} from cache, {summary.calls} calls, "
        f"{summary.written} written, {failures} failed; tokens {summary.tokens}"
    )
    return failures


COMMANDS: tuple[click.Command, ...] = (judge,)
