"""The studio's ``h2h`` commands, registered with the pipeline's CLI as the ``h2h.commands`` plugin ``studio``.

``h2h`` itself is ``pipeline.cli`` (the pipeline installs without the studio). :func:`commands` gives the studio's
commands where the ``[studio]`` extra is installed, and otherwise one stand-in per command that says how to add it
(``pip install 'h2htalk-studio[studio]'``) instead of failing with a traceback. This module imports nothing beyond
click and the standard library, so it loads in a pipeline-only install too.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

import click

from pipeline.cli import CommandEntry, lazy_commands
from pipeline.cli import build_cli as build_cli  # re-exported: ``h2h`` with every installed plugin
from pipeline.cli import main as main

DISTRIBUTION = "h2htalk-studio"
EXTRA = "studio"
INSTALL_HINT = f"pip install '{DISTRIBUTION}[{EXTRA}]'"
#: The studio's commands by name and module (imported only when a command runs: see ``pipeline.cli``);
#: tests/studio/commands/test_cli_plugin.py checks them against the modules' own ``COMMANDS``.
STUDIO_COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry(
        "validate",
        "studio.commands.validate",
        "Check scenario, response, score, judgment and result JSONL files and annotation_schemas YAML files.",
    ),
    CommandEntry(
        "ingest", "studio.commands.store", "Ingest a run's scenarios, responses, scores and judge results (idempotent)."
    ),
    CommandEntry("db", "studio.commands.store", "The studio's database."),
    CommandEntry("users", "studio.commands.users", "People and roles."),
    CommandEntry("campaign", "studio.commands.campaigns", "Annotation campaigns."),
    CommandEntry(
        "studio",
        "studio.commands.serve",
        "Serve the studio in the browser over a store (migrated to the latest schema first).",
    ),
    CommandEntry(
        "demo",
        "studio.commands.serve",
        "Run the pipeline on the bundled demo data, fill a store, create demo accounts and campaigns, serve it.",
    ),
    CommandEntry("export", "studio.commands.export", "Export votes, scores and reports."),
    CommandEntry(
        "agreement",
        "studio.commands.agreement",
        "Print Krippendorff's α (+ bootstrap 95% CI), Fleiss' κ and percent agreement of one question as JSON,",
    ),
    CommandEntry(
        "consensus",
        "studio.commands.consensus",
        "Decide each item of one question: one row per item with item, decision, confidence (the model's posterior",
    ),
    CommandEntry(
        "stopping-replay",
        "studio.commands.consensus",
        "Replay each item's votes through a stopping rule and print one JSON object: items, votes_total, votes_used,",
    ),
    CommandEntry(
        "aggregate",
        "studio.commands.aggregate",
        "Majority / criteria / median / mean per the schema; writes statuses, review items and J_human / J_final.",
    ),
    CommandEntry(
        "ingest-curation",
        "studio.commands.curation",
        "Ingest an `h2h refine` FOLDER: cleaned scenarios, flags and PII replacements, LLM pre-screen verdicts",
    ),
    CommandEntry(
        "export-pairs",
        "studio.commands.curation",
        'Write the campaign\'s items as `h2h judge-pairs` input ({"id": "item-<n>", "prompt", "response_a", '
        '"response_b"}),',
    ),
    CommandEntry(
        "publish",
        "studio.commands.curation",
        "Publish the accepted scenarios (curators' edits applied) as an immutable dataset version, saying first",
    ),
    CommandEntry(
        "rater-agreement",
        "studio.commands.curation",
        "How often the LLM rater's verdict equals the humans' majority on the campaign's items (and Cohen's kappa).",
    ),
    CommandEntry(
        "simulate-sessions",
        "studio.commands.simulate_sessions",
        "Hold simulated live sessions: USER_MODEL plays each scenario's person against the campaign's blinded"
        " companion,",
    ),
    CommandEntry(
        "judge-card",
        "studio.commands.judge_card",
        "The judge-bias card on adjudicated items: each measure with n, a 95% interval and whether it is material",
    ),
    CommandEntry(
        "ranking",
        "studio.commands.ranking",
        "Rank the systems by Bradley–Terry (arena-rank, 95% sandwich intervals); print the table, the position",
    ),
)
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(entry.module for entry in STUDIO_COMMANDS))
#: The names of the studio's commands (the stand-ins have them too).
COMMAND_NAMES: tuple[str, ...] = tuple(entry.name for entry in STUDIO_COMMANDS)
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
    """The studio's commands (the ``h2h.commands`` entry point ``studio``), each imported when it runs; stand-ins
    where its extra is missing."""
    missing = missing_requirements()
    if missing:
        return [stand_in(name, missing) for name in COMMAND_NAMES]
    return lazy_commands(STUDIO_COMMANDS)


if __name__ == "__main__":
    main()
