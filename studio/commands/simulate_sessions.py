"""``h2h simulate-sessions``: a user model plays the scenario's person in a live campaign's sessions
(:mod:`studio.services.live_simulated`; ARCHITECTURE.md "Live sessions")."""

from __future__ import annotations

import json
import os

import click

from studio.commands.options import db_option, open_store


@click.command("simulate-sessions")
@click.option("--campaign", required=True, help="The live_session campaign (its companion is the one it names).")
@click.option("--user-model", required=True, help="The model that plays the user, as its endpoint names it.")
@click.option("--user-base-url", required=True, help="The user model's OpenAI-compatible API root (…/v1).")
@click.option(
    "--user-api-key-env",
    default=None,
    metavar="VAR",
    help="The environment variable holding the user model's API key (its name; default: no key is sent).",
)
@click.option("--sessions", type=click.IntRange(min=1), required=True, help="Simulated sessions in all, this model.")
@click.option("--turns", type=int, default=None, help="Replies per session (default: the workflow's max_turns).")
@click.option("--seed", type=int, default=None, help="Seed sent to the user model (session k gets seed + k).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@db_option
def simulate_sessions(
    campaign: str,
    user_model: str,
    user_base_url: str,
    user_api_key_env: str | None,
    sessions: int,
    turns: int | None,
    seed: int | None,
    no_progress: bool,
    db_url: str | None,
) -> None:
    """Hold simulated live sessions: USER_MODEL plays each scenario's person against the campaign's blinded
    companion, through the same turns, guards and tripwire as people, then rates the conversation as that person.

    Sessions are marked simulated and their ratings kept apart from people's (never an answer). Resumable: a rerun
    counts this user model's stored sessions, finishes any cut off and adds only the missing ones. Progress goes
    to stderr; the last line is a JSON summary.
    """
    from pipeline.live.companion import CompanionEndpoint, CompanionError, probe
    from studio.services.live_simulated import simulate

    if not user_base_url.startswith(("http://", "https://")):
        raise click.BadParameter("must start with http:// or https://", param_hint="--user-base-url")
    key = (os.environ.get(user_api_key_env) or None) if user_api_key_env else None
    user = CompanionEndpoint(base_url=user_base_url.rstrip("/"), model=user_model, api_key=key, seed=seed)
    try:
        probe(endpoint=user)
    except CompanionError as error:
        raise click.ClickException(
            f"--user-base-url: the user model {user_model!r} at {user_base_url} {error}"
        ) from None
    with open_store(db_url) as engine:
        result = simulate(
            engine, campaign=campaign, user=user, sessions=sessions, turns=turns, progress=not no_progress
        )
    click.echo(json.dumps(result.model_dump(), ensure_ascii=False))


COMMANDS: tuple[click.Command, ...] = (simulate_sessions,)
