"""``h2h studio`` (serve an existing store) and ``h2h demo`` (prepare the demo, then serve it)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import click

from studio.commands.options import open_store

#: How long a stop (Ctrl+C, SIGTERM) waits for open requests and streams before it cancels them (seconds).
GRACEFUL_STOP_SECONDS = 5


def server_config(app: Any, *, host: str, port: int) -> Any:
    """The uvicorn configuration the studio is served with.

    uvicorn's own proxy-header handling is off: by default it believes ``X-Forwarded-For`` from loopback, which would
    let anyone on the machine pick the address the login throttle counts. The app believes proxy headers only from
    ``Settings.forwarded_allow_ips``. Connections are guarded (:mod:`studio.web.transport`: a head timeout and a cap
    per address) with the settings ``app`` was built with (``app.state.settings``; the defaults for another app).
    """
    from studio.settings import get_settings
    from studio.web.transport import guarded_config

    settings = getattr(app.state, "settings", None) or get_settings()
    return guarded_config(
        app,
        host=host,
        port=port,
        settings=settings,
        log_level="warning",
        proxy_headers=False,
        timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
    )


def freeze_startup_heap() -> None:
    """Move every object alive now (the app, Gradio's blocks, imported modules) out of the garbage collector's reach.

    Call it once the app is built, before serving. Why: the studio's heap after start-up holds a few million
    long-lived objects (Gradio, FastAPI, SQLAlchemy, pydantic), and each full (generation 2) collection walked them
    all: 180 ms pauses every few seconds under load, which were the p95/p99 of a paced annotator's next + submit
    (``benchmarks/bench_load.py``). Frozen objects are never collected, but they live as long as the process anyway;
    objects made while serving are collected as before.
    """
    import gc

    gc.collect()
    gc.freeze()


def _exit_on_sigterm(_signal: int, _frame: Any) -> None:
    raise SystemExit(0)  # unwinds like Ctrl+C does, so the ``finally`` of :func:`serve` cleans up


def serve(
    database_url: str, host: str, port: int, forwarded_allow_ips: str | None = None, *, migrate: bool = True
) -> None:
    """Serve the studio (REST API, login page, Gradio UI) over ``database_url`` with uvicorn until stopped;
    ``forwarded_allow_ips`` (default: ``$H2H_FORWARDED_ALLOW_IPS``) names the reverse proxies to believe. The store
    is migrated first unless ``migrate`` is False (a worker of ``--workers N``: its supervisor migrated it once)."""
    import uvicorn

    from studio.settings import get_settings
    from studio.web.app import create_app, remove_work_directory

    overrides = {"forwarded_allow_ips": forwarded_allow_ips} if forwarded_allow_ips is not None else {}
    settings = get_settings(database_url=database_url, **overrides)
    if migrate:
        with open_store(settings.database_url):  # migrate (or say why the store cannot be opened) before serving
            pass
    # SIGTERM stops the studio as Ctrl+C does: uvicorn shuts down gracefully, then raises the signal again with the
    # handler it found — by default SIGTERM's, which kills the process before any cleanup. This one exits instead.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    app = create_app(settings)
    freeze_startup_heap()
    try:
        click.echo(f"H2HTalk Studio on http://{host}:{port}/ (sign in at /login; Ctrl+C stops)", err=True)
        uvicorn.Server(server_config(app, host=host, port=port)).run()
    finally:
        remove_work_directory(app)  # the studio's temporary files (Gradio's cache, uploads, exports)


@click.command("studio")
@click.option(
    "--db",
    "database_url",
    envvar="H2H_DATABASE_URL",
    required=True,
    help="Store URL, e.g. sqlite:///studio.sqlite or postgresql://user@host/db (or $H2H_DATABASE_URL).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=7860, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--forwarded-allow-ips",
    default=None,
    metavar="IPS",
    help="Reverse proxies whose X-Forwarded-For/-Proto to believe: comma-separated addresses or networks, '*' for "
    "any (default $H2H_FORWARDED_ALLOW_IPS, else none: not even loopback).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Studio processes to serve, on ports PORT … PORT+N-1 (PostgreSQL only for N > 1; put a reverse proxy with "
    "sticky routing in front, e.g. deploy/nginx.conf). A worker that dies is restarted.",
)
def studio_command(database_url: str, host: str, port: int, forwarded_allow_ips: str | None, workers: int) -> None:
    """Serve the studio in the browser over a store (migrated to the latest schema first)."""
    if workers == 1:
        serve(database_url, host, port, forwarded_allow_ips)
        return
    from studio.commands.workers import refuse_sqlite, supervise
    from studio.settings import get_settings

    url = get_settings(database_url=database_url).database_url
    refuse_sqlite(url, workers)
    with open_store(url):  # migrate once, before any worker starts (each would otherwise race to)
        pass
    supervise(database_url=url, host=host, port=port, workers=workers, forwarded_allow_ips=forwarded_allow_ips)


@click.command("demo")
@click.option("--db", "database_url", default=None, help="Store URL (default: a SQLite file in --dir).")
@click.option(
    "--dir",
    "directory",
    default="h2h-demo",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the demo store and run directory.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=7860, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--annotators", default=50, show_default=True, type=click.IntRange(1, 999), help="How many demo annotator accounts."
)
@click.option("--no-serve", is_flag=True, help="Prepare everything, print the accounts, and exit.")
def demo_command(
    database_url: str | None, directory: Path, host: str, port: int, annotators: int, no_serve: bool
) -> None:
    """Run the pipeline on the bundled demo data, fill a store, create demo accounts and campaigns, serve it.

    Safe to run again: it resumes and reuses what exists. Demo passwords are the username followed by
    "-demo" (e.g. annotator01 / annotator01-demo) — for a local demo only. The live campaign (demo-live_safety)
    talks to a stand-in companion served beside the studio on 127.0.0.1:8765 (a free port, recorded in the campaign,
    when 8765 is taken).
    """
    from studio.commands.demo import prepare_demo, start_demo_companion, url_port

    summary = prepare_demo(directory, database_url=database_url, annotators=annotators)
    click.echo(f"store: {summary.database_url}")
    click.echo(f"run directory: {summary.run_dir} ({summary.scored} results, {summary.flagged} flagged)")
    click.echo("campaigns: " + ", ".join(summary.campaigns))
    for workflow, reason in summary.skipped_campaigns.items():
        click.echo(f"no campaign for {workflow}: {reason}")
    click.echo("accounts (username / password / role):")
    for account in summary.accounts:
        password = f"({account.note})" if account.note else account.password
        click.echo(f"  {account.username} / {password} / {account.role}")
    if no_serve:
        if summary.companion_url:
            click.echo(
                f"the live campaign talks to the stand-in companion at {summary.companion_url}: `h2h demo` serves it; "
                f"beside `h2h studio`, run `h2h standin-companion --port {url_port(summary.companion_url)}`"
            )
        return
    companion = start_demo_companion(summary.database_url)
    click.echo(
        f"stand-in companion for the live campaign: {companion.base_url} (it stops with the studio; beside "
        f"`h2h studio` later, run `h2h standin-companion --port {url_port(companion.base_url)}`)"
    )
    try:
        serve(summary.database_url, host, port)
    finally:
        companion.stop()


COMMANDS: tuple[click.Command, ...] = (studio_command, demo_command)
