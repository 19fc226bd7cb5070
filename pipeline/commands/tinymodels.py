"""``h2h tiny-models``: build the tiny random-weight chat model and embedder (offline, seconds)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("tiny-models")
@click.option(
    "--out",
    "out",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Build into this directory [default: the cache, ${XDG_CACHE_HOME:-~/.cache}/h2h-studio/tiny-models/DIGEST].",
)
def tiny_models_command(out: Path | None) -> None:
    """Build a random-weight Qwen2 chat model and XLM-RoBERTa embedder with tokenizers trained on the bundled data.

    For trying vLLM (`h2h generate --backend vllm --model OUT/chat`, `vllm serve OUT/chat`) and BGE-M3
    (`h2h score --embedder-model OUT/embedder`) without weights. Their text is noise. The same recipe gives the
    same files; a directory that already holds this build is reused. Prints the two model directories.
    """
    from pipeline.tinymodels import build_tiny_models, cached_tiny_models

    try:
        models = cached_tiny_models() if out is None else build_tiny_models(out)
    except FileExistsError as error:
        raise click.ClickException(str(error)) from error
    except ImportError as error:  # a pipeline-only install: transformers and torch come with the minilm extra
        raise click.ClickException(
            f"h2h tiny-models needs transformers, tokenizers and torch ({error}): "
            "pip install torch==2.13.0 'h2htalk-studio[minilm]'"
        ) from error
    click.echo(f"chat model: {models.chat}")
    click.echo(f"embedder: {models.embedder}")


COMMANDS: tuple[click.Command, ...] = (tiny_models_command,)
