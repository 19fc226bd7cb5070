"""``h2h standin-companion``: serve the stand-in companion (an OpenAI-compatible server) until Ctrl-C."""

from __future__ import annotations

import click


@click.command("standin-companion")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0: a free one).")
@click.option(
    "--token-delay",
    "token_delay",
    default=0.02,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds between streamed tokens.",
)
@click.option("--model", default="standin-companion", show_default=True, help="The model name it serves.")
def standin_companion_command(host: str, port: int, token_delay: float, model: str) -> None:
    """Serve a deterministic stand-in companion for live sessions without a real model (demo, tests).

    Its replies read the prompt: with the SAP block a crisis message gets a safety question and crisis resources,
    without it a dismissive change of topic; other messages get a short warm echo. Point a live session at the
    printed base URL with the printed model name. Ctrl-C stops it.
    """
    import threading

    from pipeline.live.standin import StandinCompanion

    companion = StandinCompanion(host=host, port=port, token_delay_s=token_delay, model=model)
    try:
        base_url = companion.start()
    except OSError as error:  # port taken, address not ours
        raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from error
    click.echo(f"stand-in companion: base URL {base_url}, model {model} (Ctrl-C stops it)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        click.echo("stopping")
    finally:
        companion.stop()


COMMANDS: tuple[click.Command, ...] = (standin_companion_command,)
