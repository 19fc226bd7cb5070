"""``h2h generate``: generate responses with vLLM or an OpenAI-compatible endpoint into a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipeline.taxonomy import SUBTASKS, VARIANTS

if TYPE_CHECKING:
    from pipeline.generation.base import Backend
    from pipeline.generation.runner import GenerationSummary


def make_backend(
    backend: str,
    *,
    model: str,
    base_url: str | None,
    api_key: str | None,
    concurrency: int,
    timeout: float,
    tensor_parallel_size: int,
    data_parallel: int,
) -> Backend:
    """Return the backend object named by ``--backend`` (imports only that backend's module)."""
    if backend == "openai":
        from pipeline.generation.openai_compat import OpenAIBackend

        if base_url is None:
            raise click.UsageError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        return OpenAIBackend(model=model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout)
    import importlib.util

    from pipeline.generation.vllm_backend import INSTALL_HINT, VLLMBackend

    if importlib.util.find_spec("vllm") is None:  # say so before scenarios are read and a progress bar starts
        raise click.ClickException(f"the vLLM backend needs the vllm package (not installed): {INSTALL_HINT}")
    return VLLMBackend(model=model, tensor_parallel_size=tensor_parallel_size, data_parallel=data_parallel)


@click.command("generate")
@click.option(
    "--scenarios", "scenarios_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--model", required=True, help="Model name (the endpoint's model id, or the vLLM model path).")
@click.option("--backend", type=click.Choice(["vllm", "openai"]), required=True)
@click.option("--variant", type=click.Choice(list(VARIANTS)), required=True)
@click.option("--run", "run_path", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
@click.option("--api-key", default=None, envvar="OPENAI_API_KEY", help="API key (env OPENAI_API_KEY).")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--timeout", default=120.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds/request.")
@click.option("--temperature", default=0.7, show_default=True, type=click.FloatRange(min=0.0))
@click.option("--top-p", default=1.0, show_default=True, type=click.FloatRange(min=0.0, max=1.0))
@click.option("--max-tokens", default=1024, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--tensor-parallel-size", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--data-parallel", default=1, show_default=True, type=click.IntRange(min=1), help="Ray shards (vllm).")
@click.option("--limit", default=None, type=click.IntRange(min=1), help="Only the first N selected scenarios.")
@click.option("--subtask", "subtasks", multiple=True, type=click.Choice(list(SUBTASKS)), help="Repeatable filter.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def generate(
    scenarios_path: Path,
    model: str,
    backend: str,
    variant: str,
    run_path: Path,
    base_url: str | None,
    api_key: str | None,
    concurrency: int,
    timeout: float,
    temperature: float,
    top_p: float,
    max_tokens: int,
    seed: int,
    tensor_parallel_size: int,
    data_parallel: int,
    limit: int | None,
    subtasks: tuple[str, ...],
    no_progress: bool,
) -> None:
    """Generate the missing responses of SCENARIOS into RUN/responses.jsonl (resumable; rerun to retry failures)."""
    from pipeline.generation.base import SamplingParams

    chosen = make_backend(
        backend, model=model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout,
        tensor_parallel_size=tensor_parallel_size, data_parallel=data_parallel,
    )  # fmt: skip
    sampling = SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
    summary = generate_into_run(
        run_path, scenarios_path, chosen, model=model, variant=variant, sampling=sampling, subtasks=subtasks,
        limit=limit, progress=not no_progress,
    )  # fmt: skip
    report(summary)


def generate_into_run(
    run_path: Path, scenarios_path: Path, backend: Backend, *, progress: bool, **selection: Any
) -> GenerationSummary:
    """Run the generate stage (``selection``: model, variant, sampling, subtasks, limit as
    :func:`pipeline.generation.runner.run_generation` takes them); bad input files (``file:line: field: problem``)
    and the stage's refusals become click errors, with nothing written."""
    from pipeline.dataset import load_scenarios
    from pipeline.generation.base import BackendUnavailable
    from pipeline.generation.runner import ScenarioConflict, run_generation
    from pipeline.jsonl import RecordError
    from pipeline.rundir import RunDir

    try:
        return run_generation(RunDir(run_path), load_scenarios(scenarios_path), backend, progress=progress, **selection)
    except (ScenarioConflict, BackendUnavailable, RecordError) as error:
        raise click.ClickException(str(error)) from error


def report(summary: GenerationSummary) -> None:
    """Print the run's counts; exit 1 listing the first failures when some requests failed."""
    click.echo(
        f"generate: {summary.selected} selected, {summary.skipped} already done, "
        f"{summary.written} written, {len(summary.failures)} failed"
    )
    if summary.failures:
        for key, error in summary.failures[:10]:
            click.echo(f"  failed {key}: {error}", err=True)
        click.echo("rerun the same command to retry the failed requests", err=True)
        raise SystemExit(1)


COMMANDS: tuple[click.Command, ...] = (generate,)
