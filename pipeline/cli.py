"""The ``h2h`` command: one entry point for every stage, in a pipeline-only install and with the studio alike.

The pipeline's own command modules each list their commands in a module-level ``COMMANDS`` tuple. Other packages
add theirs as plugins: an entry point in the group ``h2h.commands`` naming a function that returns click commands
(the studio's is ``studio.cli:commands``; in an install without the studio's dependencies it returns commands that
say how to add them). The pipeline never imports the studio: it only loads what the installed packages register.
Command modules import heavy libraries inside their functions, so ``h2h --help`` stays fast.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points

import click

logger = logging.getLogger(__name__)

#: The entry-point group other packages register ``h2h`` commands in.
PLUGIN_GROUP = "h2h.commands"
PIPELINE_COMMAND_MODULES: tuple[str, ...] = (
    "pipeline.commands.data",
    "pipeline.commands.generate",
    "pipeline.commands.score",
    "pipeline.commands.judge",
    "pipeline.commands.leaderboard",
    "pipeline.commands.curation",
    "pipeline.commands.faireval",
    "pipeline.commands.tinymodels",
    "pipeline.commands.standin",
)


def configure_logging(verbosity: int) -> None:
    """Log to stderr; ``-v`` shows INFO from our packages, ``-vv`` DEBUG."""
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("pipeline", "studio"):
        logging.getLogger(name).setLevel(level)


def pipeline_commands() -> list[click.Command]:
    """The pipeline's own commands, in :data:`PIPELINE_COMMAND_MODULES` order."""
    commands: list[click.Command] = []
    for module_name in PIPELINE_COMMAND_MODULES:
        commands.extend(importlib.import_module(module_name).COMMANDS)
    return commands


def plugin_commands(plugins: Iterable[EntryPoint] | None = None) -> list[click.Command]:
    """The commands every installed ``h2h.commands`` plugin registers (each entry point names a function returning
    click commands). A plugin that fails to load is logged and left out: the other commands still work."""
    commands: list[click.Command] = []
    for plugin in entry_points(group=PLUGIN_GROUP) if plugins is None else plugins:
        try:
            provider: Callable[[], Iterable[click.Command]] = plugin.load()
            commands.extend(provider())
        except Exception as error:  # a broken plugin must not take the pipeline's commands down with it
            logger.warning("h2h: the commands of plugin %r could not be loaded: %s", plugin.value, error)
    return commands


def build_cli(plugins: Iterable[EntryPoint] | None = None) -> click.Group:
    """Return the ``h2h`` click group: the pipeline's commands and every plugin's (``plugins``: the installed
    ``h2h.commands`` entry points unless given). A plugin command never replaces a pipeline command."""

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
    def h2h(verbose: int) -> None:
        """H2HTalk Studio: evaluate LLMs as emotional companions."""
        configure_logging(verbose)

    for command in pipeline_commands():
        h2h.add_command(command)
    for command in plugin_commands(plugins):
        if command.name in h2h.commands:
            logger.warning("h2h: a plugin's command %r clashes with an existing one and is left out", command.name)
            continue
        h2h.add_command(command)
    return h2h


def main() -> None:
    """Console-script entry point."""
    build_cli()(prog_name="h2h")


if __name__ == "__main__":
    main()
