"""The studio's ``h2h`` commands, registered with the pipeline's CLI as the ``h2h.commands`` plugin ``studio``.

``h2h`` itself is ``pipeline.cli`` (the pipeline installs without the studio). :func:`commands` gives the studio's
commands where the ``[studio]`` extra is installed, and otherwise one stand-in per command that says how to add it
(``pip install 'h2htalk-studio[studio]'``) instead of failing with a traceback. This module imports nothing beyond
click and the standard library, so it loads in a pipeline-only install too.
"""

from __future__ import annotations

import importlib
import re
from importlib import metadata
from typing import Any

import click

from pipeline.cli import build_cli as build_cli  # re-exported: ``h2h`` with every installed plugin
from pipeline.cli import main as main

DISTRIBUTION = "h2htalk-studio"
EXTRA = "studio"
INSTALL_HINT = f"pip install '{DISTRIBUTION}[{EXTRA}]'"
COMMAND_MODULES: tuple[str, ...] = (
    "studio.commands.validate",
    "studio.commands.store",
    "studio.commands.users",
    "studio.commands.campaigns",
    "studio.commands.serve",
    "studio.commands.export",
    "studio.commands.agreement",
    "studio.commands.consensus",
    "studio.commands.aggregate",
    "studio.commands.curation",
    "studio.commands.simulate_sessions",
    "studio.commands.judge_card",
    "studio.commands.ranking",
)
#: The names of the commands the modules above define (the stand-ins need them without importing the modules;
#: tests/studio/commands/test_cli_plugin.py checks the two agree).
COMMAND_NAMES: tuple[str, ...] = (
    "validate",
    "ingest",
    "db",
    "users",
    "campaign",
    "studio",
    "demo",
    "export",
    "agreement",
    "consensus",
    "stopping-replay",
    "aggregate",
    "ingest-curation",
    "export-pairs",
    "publish",
    "rater-agreement",
    "simulate-sessions",
    "judge-card",
    "ranking",
)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA_MARKER = re.compile(rf"""extra\s*==\s*["']{EXTRA}["']""")


def missing_requirements(distribution: str = DISTRIBUTION) -> list[str]:
    """The distributions the ``[studio]`` extra of ``distribution`` requires that are not installed (sorted).

    Read from the installed package's metadata, so the list in ``pyproject.toml`` is the only one; empty when the
    package is not installed (a bare checkout on ``sys.path``: nothing to compare with).
    """
    try:
        requirements = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return []
    missing = set()
    for requirement in requirements:
        name_part, _, marker = requirement.partition(";")
        found = _NAME.match(name_part.strip())
        if found is None or not _EXTRA_MARKER.search(marker) or found.group(0) == distribution:
            continue
        try:
            metadata.version(found.group(0))
        except metadata.PackageNotFoundError:
            missing.add(found.group(0))
    return sorted(missing)


def stand_in(name: str, missing: list[str]) -> click.Command:
    """A command named ``name`` that takes any arguments and exits 1 saying how to add the studio."""

    def explain(**_: Any) -> None:
        raise click.ClickException(
            f"h2h {name} is part of the studio, which is not installed here "
            f"(missing: {', '.join(missing)}). Add it with: {INSTALL_HINT}"
        )

    return click.Command(
        name,
        callback=explain,
        help=f"(needs the studio: {INSTALL_HINT})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    )


def commands() -> list[click.Command]:
    """The studio's commands (the ``h2h.commands`` entry point ``studio``); stand-ins where its extra is missing."""
    missing = missing_requirements()
    if missing:
        return [stand_in(name, missing) for name in COMMAND_NAMES]
    found: list[click.Command] = []
    for module_name in COMMAND_MODULES:
        found.extend(importlib.import_module(module_name).COMMANDS)
    return found


if __name__ == "__main__":
    main()
