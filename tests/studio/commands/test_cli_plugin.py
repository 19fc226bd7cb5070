"""``h2h`` is the pipeline's CLI; the studio adds its commands as the ``h2h.commands`` plugin ``studio``, and stands in
for them with an install hint where the ``[studio]`` extra is missing. ``h2h --help`` imports no heavy library."""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pipeline.cli import PIPELINE_COMMANDS, PLUGIN_GROUP, CommandEntry, LazyCommand, build_cli, pipeline_commands
from studio import cli as studio_cli


def test_the_studio_registers_its_commands_through_the_plugin_group() -> None:
    (plugin,) = [point for point in entry_points(group=PLUGIN_GROUP) if point.name == "studio"]
    assert plugin.value == "studio.cli:commands"
    names = [command.name for command in plugin.load()()]
    assert tuple(names) == studio_cli.COMMAND_NAMES  # the stand-ins' names are the real commands' names
    modules = [name for module in studio_cli.COMMAND_MODULES for name in importlib.import_module(module).COMMANDS]
    assert [command.name for command in modules] == names
    assert all(isinstance(command, LazyCommand) for command in plugin.load()())
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
    kept = cli.commands["leaderboard"]
    assert isinstance(kept, LazyCommand) and kept.load().callback is not None and kept.load().help != "impostor"


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


@pytest.mark.parametrize("entries", [PIPELINE_COMMANDS, studio_cli.STUDIO_COMMANDS], ids=["pipeline", "studio"])
def test_every_registered_command_is_its_module_s_with_the_same_short_help(entries: tuple[CommandEntry, ...]) -> None:
    """The registry ``h2h --help`` reads instead of importing the command modules names each module's commands, in
    order, and shows the same short help the real command would at every width ``h2h --help`` can have."""
    for module in dict.fromkeys(entry.module for entry in entries):
        real = importlib.import_module(module).COMMANDS
        registered = [entry for entry in entries if entry.module == module]
        assert [entry.name for entry in registered] == [command.name for command in real]
        for entry, command in zip(registered, real, strict=True):
            for limit in range(10, 81):
                assert LazyCommand(entry).get_short_help_str(limit) == command.get_short_help_str(limit), entry.name


def test_a_lazy_command_runs_parses_and_helps_as_the_real_one(tmp_path: Path) -> None:
    """Through ``h2h``, a registered command's help, usage errors and groups are the real command's."""
    cli = build_cli()
    helped = CliRunner().invoke(cli, ["agreement", "--help"])
    assert helped.exit_code == 0 and "--level [nominal|ordinal|interval|ratio]" in helped.output
    assert "Usage: h2h agreement [OPTIONS]" in helped.output
    wrong = CliRunner().invoke(cli, ["agreement", "--votes", str(tmp_path / "absent.csv"), "--level", "nominal"])
    assert wrong.exit_code == 2 and "does not exist" in wrong.output
    group = CliRunner().invoke(cli, ["export", "--help"])
    assert group.exit_code == 0 and "votes" in group.output and "Usage: h2h export [OPTIONS] COMMAND" in group.output
    listed = CliRunner().invoke(cli, ["--help"])
    assert "agreement          Print Krippendorff's α (+ bootstrap 95% CI), Fleiss' κ..." in listed.output


def _modules_loaded(args: list[str]) -> set[str]:
    """The top-level packages imported by ``h2h ARGS`` run in a fresh interpreter (printed at exit, so a command
    that fails still reports)."""
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print('MODULES=' + json.dumps(sorted({m.split('.')[0] for m in sys.modules}))))\n"
        "from pipeline.cli import main\n"
        f"sys.argv = ['h2h', *{args!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("MODULES=")]
    return set(json.loads(line.removeprefix("MODULES=")))


def test_h2h_help_imports_no_command_module() -> None:
    """``h2h --help`` lists every command from the registry: no command module, no heavy library."""
    script = (
        "import json, sys\n"
        "from pipeline.cli import build_cli\n"
        "build_cli()(['--help'], prog_name='h2h', standalone_mode=False)\n"
        "print(json.dumps(sorted(m for m in sys.modules if '.commands.' in m)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert "score-pairs" in done.stdout and "agreement" in done.stdout


def test_h2h_agreement_imports_neither_the_web_stack_nor_torch(tmp_path: Path) -> None:
    """``h2h agreement --votes FILE`` loads what the statistics need (pyarrow, numpy; a clean CSV file not even
    pandas), not the studio's web stack, its store or the models' libraries."""
    votes = tmp_path / "votes.csv"
    votes.write_text("item,annotator,value\ns1,a,1\ns1,b,1\ns2,a,2\ns2,b,1\n", encoding="utf-8")
    loaded = _modules_loaded(["agreement", "--votes", str(votes), "--level", "nominal", "--resamples", "10"])
    assert "pyarrow" in loaded and "pandas" not in loaded
    assert not {"gradio", "torch", "sentence_transformers", "fastapi", "sqlalchemy", "sqlmodel"} & loaded


def test_h2h_score_pairs_help_imports_no_scoring_library() -> None:
    loaded = _modules_loaded(["score-pairs", "--help"])
    assert not {"pandas", "torch", "sacrebleu", "rouge_score", "gradio", "sqlalchemy"} & loaded
