"""``h2h users``: add people, list them, change roles, deactivate and reactivate them, reset passwords, revoke
sessions. Every change is audit-logged with the actor ``cli``."""

from __future__ import annotations

import click

from studio.commands.options import db_option, open_store
from studio.policies import ROLES  # no ORM import: ``h2h --help`` stays fast


@click.group("users")
def users() -> None:
    """People and roles."""


@users.command("add")
@click.argument("name")
@click.option("--role", required=True, type=click.Choice(ROLES))
@click.option(
    "--password",
    prompt=True,
    hide_input=True,
    confirmation_prompt=True,
    help="Asked for when not given (prefer that: command lines end up in shell history).",
)
@db_option
def add(name: str, role: str, password: str, db_url: str | None) -> None:
    """Add person NAME with a role and password."""
    from studio.db import write_session
    from studio.services.auth import create_user

    with open_store(db_url, create=True) as engine, write_session(engine) as session:
        user = create_user(session, username=name, password=password, role=role, actor="cli")
    click.echo(f"added {user.username} ({user.role})")


@users.command("list")
@db_option
def list_(db_url: str | None) -> None:
    """List people: name (hidden characters written out), role, active, last sign-in."""
    from studio.db import read_session
    from studio.services.auth import last_logins, list_users
    from studio.services.usernames import visible_username

    with open_store(db_url) as engine, read_session(engine) as session:
        logins = last_logins(session)
        for user in list_users(session):
            last = logins.get(user.id)
            shown = last.isoformat(timespec="seconds") if last else "never"
            state = "active" if user.is_active else "inactive"
            click.echo(f"{visible_username(user.username)}\t{user.role}\t{state}\tlast sign-in {shown}")


@users.command("set-role")
@click.argument("name")
@click.argument("role", type=click.Choice(ROLES))
@db_option
def set_role_command(name: str, role: str, db_url: str | None) -> None:
    """Give person NAME the role ROLE."""
    from studio.db import write_session
    from studio.services.auth import set_role

    with open_store(db_url) as engine, write_session(engine) as session:
        user = set_role(session, username=name, role=role, actor="cli")
    click.echo(f"{user.username} is now {user.role}")


def _set_active(name: str, active: bool, db_url: str | None) -> None:
    from studio.db import write_session
    from studio.services.auth import set_active

    with open_store(db_url) as engine, write_session(engine) as session:
        user = set_active(session, username=name, active=active, actor="cli")
    click.echo(f"{user.username} is now {'active' if user.is_active else 'inactive'}")


@users.command("deactivate")
@click.argument("name")
@db_option
def deactivate(name: str, db_url: str | None) -> None:
    """Deactivate person NAME: their sessions end at once and they cannot sign in (the last active admin stays)."""
    _set_active(name, False, db_url)


@users.command("activate")
@click.argument("name")
@db_option
def activate(name: str, db_url: str | None) -> None:
    """Reactivate person NAME (no old session comes back)."""
    _set_active(name, True, db_url)


@users.command("reset-password")
@click.argument("name")
@click.option("--generate", is_flag=True, help="Generate a password and print it once (instead of asking for one).")
@click.option("--password", default=None, help="The new password (asked for when neither this nor --generate).")
@db_option
def reset_password_command(name: str, generate: bool, password: str | None, db_url: str | None) -> None:
    """Give person NAME a new password; their sessions are revoked."""
    from studio.db import write_session
    from studio.services.auth import generate_password, reset_password

    if generate and password is not None:
        raise click.UsageError("give --password or --generate, not both")
    if generate:
        password = generate_password()
    elif password is None:
        password = click.prompt("New password", hide_input=True, confirmation_prompt=True)
    with open_store(db_url) as engine, write_session(engine) as session:
        user = reset_password(session, username=name, password=str(password), actor="cli")
    click.echo(f"new password set for {user.username}; their sessions were revoked")
    if generate:
        click.echo(f"password (shown once): {password}")


@users.command("revoke-sessions")
@click.argument("name")
@db_option
def revoke_sessions_command(name: str, db_url: str | None) -> None:
    """Sign person NAME out everywhere (every live session token revoked)."""
    from studio.db import write_session
    from studio.services.auth import revoke_sessions

    with open_store(db_url) as engine, write_session(engine) as session:
        revoked = revoke_sessions(session, username=name, actor="cli")
    click.echo(f"{revoked} session(s) of {name} revoked")


COMMANDS: tuple[click.Command, ...] = (users,)
