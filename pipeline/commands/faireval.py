"""``h2h prescreen``, ``h2h judge-pairs`` and ``h2h simulate``: the LLM stages of building a dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pipeline.commands.curation import IN_FILE, OUT_FILE, endpoint_options, make_backend, queue_lines, read_or_fail
from pipeline.taxonomy import SUBTASKS


def _cache(cache_path: Path | None, output: Path, name: str) -> Path:
    return cache_path or output.parent / f"{name}_cache.jsonl"


@click.command("prescreen")
@click.argument("source", type=IN_FILE)
@click.option("-o", "--output", required=True, type=OUT_FILE, help="Verdict JSONL (one PrescreenVerdict per scenario).")
@click.option("--judge-model", required=True, help="The pre-screen LLM's model id on the endpoint.")
@click.option(
    "--samples", default=3, show_default=True, type=click.IntRange(min=1), help="Evidence samples per scenario (k)."
)
@click.option("--temperature", default=0.7, show_default=True, type=click.FloatRange(0.0, 2.0))
@click.option(
    "--queue",
    "queue_path",
    default=None,
    type=OUT_FILE,
    help="Review queue JSONL [default: OUTPUT's folder/queue.jsonl].",
)
@click.option(
    "--cache",
    "cache_path",
    default=None,
    type=OUT_FILE,
    help="Answer cache [default: OUTPUT's folder/prescreen_cache.jsonl].",
)
@endpoint_options
def prescreen_command(
    source: Path,
    output: Path,
    judge_model: str,
    samples: int,
    temperature: float,
    queue_path: Path | None,
    cache_path: Path | None,
    **endpoint: Any,
) -> None:
    """Assess each scenario keep / revise / discard (evidence first, k samples, majority, entropy as uncertainty)."""
    from pipeline.curation.prescreen import prescreen
    from pipeline.curation.review_queue import prescreen_queue
    from pipeline.jsonl import write_records

    scenarios = read_or_fail(source)
    verdicts, summary = prescreen(
        scenarios,
        judge_model=judge_model,
        backend=make_backend(judge_model, endpoint),
        cache_path=_cache(cache_path, output, "prescreen"),
        samples=samples,
        temperature=temperature,
        progress=not endpoint["no_progress"],
    )
    queue = prescreen_queue(verdicts)
    write_records(output, verdicts)
    write_records(queue_path or output.parent / "queue.jsonl", queue)
    counts = ", ".join(f"{name} {count}" for name, count in sorted(summary.verdicts.items()))
    click.echo(
        f"prescreen: {summary.written} screened ({counts}); {summary.needs_human} need a person; "
        f"{summary.stats.calls} calls, {summary.stats.from_cache} from cache"
    )
    for line in queue_lines(queue):
        click.echo(line)
    if summary.incomplete:
        click.echo(
            f"{len(summary.incomplete)} scenario(s) lack an answer; rerun the same command to retry them", err=True
        )
        raise SystemExit(1)


@click.command("judge-pairs")
@click.argument("source", type=IN_FILE)
@click.option("-o", "--output", required=True, type=OUT_FILE, help="Judgment JSONL (one PairJudgment per pair).")
@click.option("--judge-model", required=True, help="The judge's model id on the endpoint.")
@click.option(
    "--samples", default=1, show_default=True, type=click.IntRange(min=1), help="Samples per order (k; 1 = greedy)."
)
@click.option("--temperature", default=0.7, show_default=True, type=click.FloatRange(0.0, 2.0), help="Used when k > 1.")
@click.option(
    "--queue",
    "queue_path",
    default=None,
    type=OUT_FILE,
    help="Review queue JSONL [default: OUTPUT's folder/pairs_queue.jsonl].",
)
@click.option(
    "--cache",
    "cache_path",
    default=None,
    type=OUT_FILE,
    help="Answer cache [default: OUTPUT's folder/pairs_cache.jsonl].",
)
@endpoint_options
def judge_pairs_command(
    source: Path,
    output: Path,
    judge_model: str,
    samples: int,
    temperature: float,
    queue_path: Path | None,
    cache_path: Path | None,
    **endpoint: Any,
) -> None:
    """Judge {"id","prompt","response_a","response_b"} pairs in both orders ([[A]]/[[B]]/[[C]]); a judge that
    contradicts itself across orders gives no winner and the pair needs a person."""
    from pipeline.curation.pairs import judge_pairs
    from pipeline.curation.records import PairInput
    from pipeline.curation.review_queue import pairs_queue
    from pipeline.jsonl import validate_lines, write_records

    records, problems = validate_lines(source, PairInput)
    for problem in problems:
        click.echo(str(problem), err=True)
    if problems:
        raise click.ClickException(f"{len(problems)} bad line(s) in {source}; nothing written")
    judgments, summary = judge_pairs(
        [pair for _, pair in records],
        judge_model=judge_model,
        backend=make_backend(judge_model, endpoint),
        cache_path=_cache(cache_path, output, "pairs"),
        samples=samples,
        temperature=temperature,
        progress=not endpoint["no_progress"],
    )
    write_records(output, judgments)
    queue = pairs_queue(judgments)
    write_records(queue_path or output.parent / "pairs_queue.jsonl", queue)
    winners = ", ".join(f"{name} {count}" for name, count in sorted(summary.winners.items()))
    click.echo(
        f"judge-pairs: {summary.written} judged, {summary.consistent} consistent across orders (winners: {winners}); "
        f"{summary.needs_human} need a person; {summary.stats.calls} calls, {summary.stats.from_cache} from cache"
    )
    if summary.incomplete:
        click.echo(f"{len(summary.incomplete)} pair(s) lack an answer; rerun the same command to retry them", err=True)
        raise SystemExit(1)


@click.command("simulate")
@click.option("--out", "folder", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
@click.option("--subtask", required=True, type=click.Choice(SUBTASKS))
@click.option("--count", required=True, type=click.IntRange(min=1), help="Conversations to simulate.")
@click.option("--user-model", required=True, help="The LLM that plays the user.")
@click.option("--companion-model", required=True, help="The LLM that plays the companion (writes the references).")
@click.option("--companion-base-url", default=None, help="The companion's endpoint when it differs from --base-url.")
@click.option("--turns", default=2, show_default=True, type=click.IntRange(min=1), help="User turns per conversation.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--axes", "axes_path", default=None, type=IN_FILE, help="Axes YAML [default: the bundled one].")
@click.option("--user-temperature", default=0.9, show_default=True, type=click.FloatRange(0.0, 2.0))
@click.option("--companion-temperature", default=0.7, show_default=True, type=click.FloatRange(0.0, 2.0))
@click.option("--near-threshold", default=0.9, show_default=True, type=click.FloatRange(0.5, 1.0))
@click.option("--chunk", default=32, show_default=True, type=click.IntRange(min=1), help="Conversations per batch.")
@endpoint_options
def simulate_command(
    folder: Path,
    subtask: str,
    count: int,
    user_model: str,
    companion_model: str,
    companion_base_url: str | None,
    turns: int,
    seed: int,
    axes_path: Path | None,
    user_temperature: float,
    companion_temperature: float,
    near_threshold: float,
    chunk: int,
    **endpoint: Any,
) -> None:
    """Simulate COUNT conversations of SUBTASK (an LLM plays the user) into scenarios with provenance (resumable)."""
    from pipeline.curation.simulate import Side, SimulationDir, simulate
    from pipeline.curation.simulate_plan import AxesError, load_axes

    try:
        axes = load_axes(axes_path)
    except AxesError as error:
        raise click.ClickException(str(error)) from error
    user = Side(user_model, make_backend(user_model, endpoint), user_temperature)
    companion_endpoint = {**endpoint, "base_url": companion_base_url or endpoint["base_url"]}
    companion = Side(companion_model, make_backend(companion_model, companion_endpoint), companion_temperature)
    out = SimulationDir(folder)
    summary = simulate(
        out,
        subtask=subtask,
        count=count,
        seed=seed,
        turns=turns,
        axes=axes,
        user=user,
        companion=companion,
        near_threshold=near_threshold,
        chunk=chunk,
        progress=not endpoint["no_progress"],
    )
    from pipeline.curation.simulate import diversity

    report = diversity(out)
    click.echo(
        f"simulate: {summary.planned} to do, {summary.written} written, {summary.duplicates} near-duplicates "
        f"left out, {len(summary.failed)} failed; {summary.stats.calls} calls, {summary.stats.from_cache} from cache"
    )
    click.echo(
        f"kept {report['kept']}, duplicates removed {report['duplicates_removed']}, "
        f"distinct-1 {report['distinct_1']}, distinct-2 {report['distinct_2']}"
    )
    for axis, counts in report["axes"].items():  # type: ignore[attr-defined]
        click.echo(f"{axis}: " + ", ".join(f"{value} {count}" for value, count in counts.items()))
    if summary.failed:
        click.echo(f"{len(summary.failed)} conversation(s) failed; rerun the same command to retry them", err=True)
        raise SystemExit(1)


COMMANDS: tuple[click.Command, ...] = (simulate_command, prescreen_command, judge_pairs_command)
