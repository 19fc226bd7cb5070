"""``h2h users``: add people, list them, change roles."""

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
    """List people: name, role, active."""
    from studio.db import read_session
    from studio.services.auth import list_users

    with open_store(db_url) as engine, read_session(engine) as session:
        for user in list_users(session):
            click.echo(f"{user.username}\t{user.role}\t{'active' if user.is_active else 'inactive'}")


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


COMMANDS: tuple[click.Command, ...] = (users,)
