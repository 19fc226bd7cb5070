"""``h2h generate``: generate responses with vLLM or an OpenAI-compatible endpoint into a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipeline.taxonomy import SUBTASKS, VARIANTS

if TYPE_CHECKING:
    from pipeline.generation.base import Backend
    from pipeline.generation.runner import GenerationSummary


def engine_options(
    *,
    max_model_len: int | None,
    dtype: str | None,
    gpu_memory_utilization: float | None,
    enforce_eager: bool,
    options: tuple[str, ...],
) -> dict[str, Any]:
    """The ``vllm.LLM`` keyword arguments given on the command line (only those given; ``--engine-option`` last,
    so it wins). A malformed ``--engine-option`` is a usage error."""
    from pipeline.generation.vllm_backend import parse_engine_option

    chosen: dict[str, Any] = {}
    named = {"max_model_len": max_model_len, "dtype": dtype, "gpu_memory_utilization": gpu_memory_utilization}
    chosen.update({key: value for key, value in named.items() if value is not None})
    if enforce_eager:
        chosen["enforce_eager"] = True
    for text in options:
        try:
            key, value = parse_engine_option(text)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--engine-option") from error
        chosen[key] = value
    return chosen


def make_backend(backend: str, *, model: str, options: dict[str, Any]) -> Backend:
    """Return the backend object named by ``--backend`` (imports only that backend's module).

    ``options``: the command's backend options (base_url, api_key, concurrency, timeout for openai;
    tensor_parallel_size, data_parallel, max_in_flight, engine_options for vllm).
    """
    if backend == "openai":
        from pipeline.generation.openai_compat import OpenAIBackend

        if options["base_url"] is None:
            raise click.UsageError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        return OpenAIBackend(
            model=model, base_url=options["base_url"], api_key=options["api_key"],
            concurrency=options["concurrency"], timeout=options["timeout"],
        )  # fmt: skip
    import importlib.util

    from pipeline.generation.vllm_backend import INSTALL_HINT, VLLMBackend

    if importlib.util.find_spec("vllm") is None:  # say so before scenarios are read and a progress bar starts
        raise click.ClickException(f"the vLLM backend needs the vllm package (not installed): {INSTALL_HINT}")
    return VLLMBackend(
        model=model, tensor_parallel_size=options["tensor_parallel_size"], data_parallel=options["data_parallel"],
        max_in_flight=options["max_in_flight"], engine_options=options["engine_options"],
    )  # fmt: skip


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
@click.option("--max-model-len", default=None, type=click.IntRange(min=1), help="vllm: context length [model's].")
@click.option("--dtype", default=None, help="vllm: weights/activations dtype (auto, bfloat16, float16, float32).")
@click.option(
    "--gpu-memory-utilization", default=None, type=click.FloatRange(min=0.0, max=1.0, min_open=True),
    help="vllm: share of GPU memory the engine may take [vLLM's 0.9].",
)  # fmt: skip
@click.option("--enforce-eager", is_flag=True, help="vllm: no CUDA graphs / compilation (faster start).")
@click.option(
    "--engine-option", "engine_option_texts", multiple=True, metavar="KEY=VALUE",
    help="vllm: any other vllm.LLM argument, repeatable; VALUE is JSON where it parses (64, true, null), else text.",
)  # fmt: skip
@click.option(
    "--max-in-flight", default=1024, show_default=True, type=click.IntRange(min=1),
    help="vllm: requests handed to the engine at a time (it batches them itself); each response is written as it ends.",
)  # fmt: skip
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
    max_model_len: int | None,
    dtype: str | None,
    gpu_memory_utilization: float | None,
    enforce_eager: bool,
    engine_option_texts: tuple[str, ...],
    max_in_flight: int,
    limit: int | None,
    subtasks: tuple[str, ...],
    no_progress: bool,
) -> None:
    """Generate the missing responses of SCENARIOS into RUN/responses.jsonl (resumable; rerun to retry failures).

    The backend's settings (for vllm: the engine arguments, platform defaults included) go into RUN/manifest.json.
    """
    from pipeline.generation.base import SamplingParams

    engine = engine_options(
        max_model_len=max_model_len, dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
        enforce_eager=enforce_eager, options=engine_option_texts,
    )  # fmt: skip
    chosen = make_backend(
        backend, model=model,
        options={
            "base_url": base_url, "api_key": api_key, "concurrency": concurrency, "timeout": timeout,
            "tensor_parallel_size": tensor_parallel_size, "data_parallel": data_parallel,
            "max_in_flight": max_in_flight, "engine_options": engine,
        },
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
    and the stage's refusals (scenarios without user input among them) become click errors, with nothing written
    and no request sent."""
    from pipeline.dataset import load_scenarios
    from pipeline.generation.base import BackendUnavailable
    from pipeline.generation.runner import MissingUserInput, ScenarioConflict, run_generation
    from pipeline.jsonl import RecordError
    from pipeline.rundir import RunDir

    try:
        scenarios = load_scenarios(scenarios_path)
        return run_generation(
            RunDir(run_path), scenarios, backend, progress=progress, source=str(scenarios_path), **selection
        )
    except (ScenarioConflict, MissingUserInput, BackendUnavailable, RecordError) as error:
        raise click.ClickException(str(error)) from error
    finally:
        close = getattr(backend, "close", None)  # an engine the backend started (vllm) stops here
        if callable(close):
            close()


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
