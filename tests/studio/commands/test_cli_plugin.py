"""``h2h`` is the pipeline's CLI; the studio adds its commands as the ``h2h.commands`` plugin ``studio``, and stands in
for them with an install hint where the ``[studio]`` extra is missing. ``h2h --help`` imports no heavy library."""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points

import click
import pytest
from click.testing import CliRunner

from pipeline.cli import PLUGIN_GROUP, build_cli, pipeline_commands
from studio import cli as studio_cli


def test_the_studio_registers_its_commands_through_the_plugin_group() -> None:
    (plugin,) = [point for point in entry_points(group=PLUGIN_GROUP) if point.name == "studio"]
    assert plugin.value == "studio.cli:commands"
    names = [command.name for command in plugin.load()()]
    assert tuple(names) == studio_cli.COMMAND_NAMES  # the stand-ins' names are the real commands' names
    modules = [name for module in studio_cli.COMMAND_MODULES for name in importlib.import_module(module).COMMANDS]
    assert [command.name for command in modules] == names
    cli = build_cli()
    assert set(cli.commands) == set(names) | {command.name for command in pipeline_commands()}
    assert not {command.name for command in pipeline_commands()} & set(names)


def test_without_the_studio_extra_every_studio_command_explains_how_to_add_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(studio_cli, "missing_requirements", lambda: ["fastapi", "gradio", "sqlmodel"])
    cli = build_cli()
    helped = CliRunner().invoke(cli, ["--help"])
    assert helped.exit_code == 0 and "(needs the studio: pip install 'h2htalk-studio[studio]')" in helped.output
    for args in (["studio", "--db", "sqlite:///x", "--port", "1"], ["export", "votes", "--help"], ["users"]):
        refused = CliRunner().invoke(cli, args)
        assert refused.exit_code == 1, refused.output
        assert f"h2h {args[0]} is part of the studio" in refused.output
        assert "missing: fastapi, gradio, sqlmodel" in refused.output
        assert "pip install 'h2htalk-studio[studio]'" in refused.output and refused.exception is not None
        assert isinstance(refused.exception, SystemExit)  # a click error, no traceback


def test_missing_requirements_reads_the_studio_extra_from_the_installed_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert studio_cli.missing_requirements() == []  # this environment has the [studio] extra (via [dev])
    requires = [
        "click>=8.1",
        'fastapi>=0.115; extra == "studio"',
        "h2htalk-studio[minilm]; extra == 'studio'",
        'no-such-distribution-h2h>=1; extra == "studio"',
        'another-missing-one; extra == "dev"',
    ]
    monkeypatch.setattr(studio_cli.metadata, "requires", lambda _name: requires)
    assert studio_cli.missing_requirements() == ["no-such-distribution-h2h"]
    assert studio_cli.missing_requirements("not-installed-anywhere-h2h") == ["no-such-distribution-h2h"]


def test_a_broken_plugin_is_logged_and_leaves_the_other_commands(caplog: pytest.LogCaptureFixture) -> None:
    broken = EntryPoint(name="broken", value="no_such_module_h2h:commands", group=PLUGIN_GROUP)
    clash = EntryPoint(name="clash", value="tests.studio.commands.test_cli_plugin:clashing", group=PLUGIN_GROUP)
    with caplog.at_level(logging.WARNING, logger="pipeline.cli"):
        cli = build_cli(plugins=[broken, clash])
    assert set(cli.commands) == {command.name for command in pipeline_commands()}
    assert "no_such_module_h2h:commands" in caplog.text and "'leaderboard' clashes" in caplog.text
    assert cli.commands["leaderboard"].callback is not None and cli.commands["leaderboard"].help != "impostor"


def clashing() -> list[click.Command]:
    """A plugin that tries to replace a pipeline command."""
    return [click.Command("leaderboard", help="impostor", callback=lambda: None)]


def test_help_imports_no_heavy_library() -> None:
    """``h2h --help`` builds every command (the studio's included) without importing pandas, SQLAlchemy, Gradio,
    torch and the like: commands import those inside their functions."""
    script = (
        "import json, sys\n"
        "from pipeline.cli import build_cli\n"
        "build_cli()(['--help'], prog_name='h2h', standalone_mode=False)\n"
        "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    heavy = {"pandas", "numpy", "sqlalchemy", "sqlmodel", "gradio", "fastapi", "torch", "pydantic", "matplotlib"}
    assert "studio" in loaded and "click" in loaded
    assert not heavy & loaded, heavy & loaded
