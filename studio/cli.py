"""The ``h2h`` command: one entry point for every stage, pipeline and studio alike.

Each command module owns its commands and lists them in a module-level ``COMMANDS`` tuple; this
module only assembles them. Command modules import heavy libraries inside their functions, so
``h2h --help`` stays fast.
"""

from __future__ import annotations

import importlib
import logging

import click

COMMAND_MODULES: tuple[str, ...] = (
    "pipeline.commands.data",
    "pipeline.commands.generate",
    "pipeline.commands.score",
    "pipeline.commands.judge",
    "pipeline.commands.leaderboard",
    "pipeline.commands.curation",
    "pipeline.commands.faireval",
    "studio.commands.validate",
    "studio.commands.store",
    "studio.commands.users",
    "studio.commands.campaigns",
    "studio.commands.serve",
    "studio.commands.export",
    "studio.commands.agreement",
    "studio.commands.aggregate",
)


def configure_logging(verbosity: int) -> None:
    """Log to stderr; ``-v`` shows INFO from our packages, ``-vv`` DEBUG."""
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("pipeline", "studio"):
        logging.getLogger(name).setLevel(level)


def build_cli() -> click.Group:
    """Return the ``h2h`` click group with every command module's commands added."""

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
    def h2h(verbose: int) -> None:
        """H2HTalk Studio: evaluate LLMs as emotional companions."""
        configure_logging(verbose)

    for module_name in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        for command in module.COMMANDS:
            h2h.add_command(command)
    return h2h


def main() -> None:
    """Console-script entry point."""
    build_cli()(prog_name="h2h")


if __name__ == "__main__":
    main()
