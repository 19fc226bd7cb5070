"""The ``h2h`` command: one entry point for every stage, in a pipeline-only install and with the studio alike.

The pipeline's own command modules each list their commands in a module-level ``COMMANDS`` tuple. Other packages
add theirs as plugins: an entry point in the group ``h2h.commands`` naming a function that returns click commands
(the studio's is ``studio.cli:commands``; in an install without the studio's dependencies it returns commands that
say how to add them). The pipeline never imports the studio: it only loads what the installed packages register.
Commands are registered by name (:class:`CommandEntry`: name, module, the first words of the help) and stand in
as :class:`LazyCommand` until one runs: ``h2h --help`` lists every command without importing a command module, and
``h2h NAME`` imports only NAME's module (which imports its heavy libraries inside its functions).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, NamedTuple

import click

logger = logging.getLogger(__name__)

#: The entry-point group other packages register ``h2h`` commands in.
PLUGIN_GROUP = "h2h.commands"


class CommandEntry(NamedTuple):
    """A command of ``h2h`` as registered before its module is imported: its name, the module whose ``COMMANDS``
    tuple holds it, and the first words of its help (what ``h2h --help`` shows; tests keep it equal to the real
    command's short help)."""

    name: str
    module: str
    summary: str


#: The pipeline's commands, in the order ``pipeline_commands`` gives them.
PIPELINE_COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry(
        "import-upstream",
        "pipeline.commands.data",
        'Import the public H2HTalk layout: one {"response": ...} JSONL per subtask in DIRECTORY (references only).',
    ),
    CommandEntry(
        "generate",
        "pipeline.commands.generate",
        "Generate the missing responses of SCENARIOS into RUN/responses.jsonl (resumable; rerun to retry failures).",
    ),
    CommandEntry(
        "score",
        "pipeline.commands.score",
        "Score every response of RUN not scored yet (BLEU-1..4, ROUGE-1/L, SS, S); resumes after a kill.",
    ),
    CommandEntry(
        "score-pairs",
        "pipeline.commands.score",
        'Score {"id","hypothesis","reference"} lines; write id, bleu1..4, rouge1, rougeL, ss, S in input order.',
    ),
    CommandEntry(
        "judge",
        "pipeline.commands.judge",
        "Judge RUN's itinerary I-III responses (cached, resumable), then write RUN/results.jsonl from its scores.",
    ),
    CommandEntry(
        "leaderboard",
        "pipeline.commands.leaderboard",
        "Build the leaderboard (paper Table 2): per-subtask means, dimension averages, item-weighted overall.",
    ),
    CommandEntry(
        "preprocess",
        "pipeline.commands.curation",
        "Replace personal identifiers, remove meta-commentary, flag sensitive content, role-play breaks, templated",
    ),
    CommandEntry(
        "refine",
        "pipeline.commands.curation",
        "Preprocess SOURCE, pre-screen it with an LLM (FairEval), and write the review queue, into FOLDER (resumable).",
    ),
    CommandEntry(
        "simulate",
        "pipeline.commands.faireval",
        "Simulate COUNT conversations of SUBTASK (an LLM plays the user) into scenarios with provenance (resumable).",
    ),
    CommandEntry(
        "prescreen",
        "pipeline.commands.faireval",
        "Assess each scenario keep / revise / discard (evidence first, k samples, majority, entropy as uncertainty).",
    ),
    CommandEntry(
        "judge-pairs",
        "pipeline.commands.faireval",
        'Judge {"id","prompt","response_a","response_b"} pairs in both orders ([[A]]/[[B]]/[[C]]); a judge that',
    ),
    CommandEntry(
        "tiny-models",
        "pipeline.commands.tinymodels",
        "Build a random-weight Qwen2 chat model and XLM-RoBERTa embedder with tokenizers trained on the bundled",
    ),
    CommandEntry(
        "standin-companion",
        "pipeline.commands.standin",
        "Serve a deterministic stand-in companion for live sessions without a real model (demo, tests).",
    ),
)
PIPELINE_COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(entry.module for entry in PIPELINE_COMMANDS))


class LazyCommand(click.Command):
    """Stands for the command ``entry.name`` of ``entry.module`` until it is used: listed with its summary, and
    imported when it is invoked, asked for its help or completed (its own context is the real command's)."""

    def __init__(self, entry: CommandEntry) -> None:
        super().__init__(entry.name, help=entry.summary)
        self.entry = entry
        self._real: click.Command | None = None

    def load(self) -> click.Command:
        """The real command (its module imported on the first call)."""
        if self._real is None:
            module = importlib.import_module(self.entry.module)
            found = [command for command in module.COMMANDS if command.name == self.entry.name]
            if not found:
                raise LookupError(f"{self.entry.module} defines no command {self.entry.name!r}")
            self._real = found[0]
        return self._real

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        # the context belongs to the real command, so parsing, help and invocation are all the real command's
        return self.load().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        return self.load().invoke(ctx)

    def to_info_dict(self, ctx: click.Context) -> dict[str, Any]:
        return self.load().to_info_dict(ctx)


def lazy_commands(entries: Iterable[CommandEntry]) -> list[click.Command]:
    """One :class:`LazyCommand` per entry, in order."""
    return [LazyCommand(entry) for entry in entries]


def configure_logging(verbosity: int) -> None:
    """Log to stderr; ``-v`` shows INFO from our packages, ``-vv`` DEBUG."""
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("pipeline", "studio"):
        logging.getLogger(name).setLevel(level)


def pipeline_commands() -> list[click.Command]:
    """The pipeline's own commands, in :data:`PIPELINE_COMMANDS` order (none of their modules imported yet)."""
    return lazy_commands(PIPELINE_COMMANDS)


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
