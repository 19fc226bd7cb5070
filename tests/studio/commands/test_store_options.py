"""A forgotten or mistyped --db never creates an empty store behind the user's back: only the commands that put data
into a store create a missing SQLite file (before, every command silently created ``h2h-studio.sqlite``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from studio.cli import build_cli


@pytest.fixture
def in_empty_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("H2H_DATABASE_URL", raising=False)
    return tmp_path


def test_a_reading_command_without_db_refuses_and_creates_nothing(in_empty_directory: Path) -> None:
    result = CliRunner().invoke(build_cli(), ["aggregate"])
    assert result.exit_code == 1
    assert "no store at h2h-studio.sqlite (the default store: no --db was given" in result.output
    assert list(in_empty_directory.iterdir()) == []


def test_a_mistyped_db_is_refused_by_the_server_command(in_empty_directory: Path) -> None:
    result = CliRunner().invoke(build_cli(), ["studio", "--db", "sqlite:///h2h-demo/studo.sqlite"])
    assert result.exit_code == 1
    assert "no store at h2h-demo/studo.sqlite; pass --db URL" in result.output
    assert list(in_empty_directory.iterdir()) == []


def test_commands_that_store_data_create_the_store(in_empty_directory: Path) -> None:
    database = "sqlite:///new/studio.sqlite"
    added = CliRunner().invoke(build_cli(), ["users", "add", "ann", "--role", "annotator", "--password", "pw-123456"])
    assert added.exit_code == 0, added.output
    assert (in_empty_directory / "h2h-studio.sqlite").exists()
    upgraded = CliRunner().invoke(build_cli(), ["db", "upgrade", "--db", database])
    assert upgraded.exit_code == 0, upgraded.output
    listed = CliRunner().invoke(build_cli(), ["users", "list", "--db", database])
    assert listed.exit_code == 0 and listed.output == ""
