"""``h2h export stops`` (issue 21): the stops of a campaign whose workflow stops items early, one row each, in the
format the output's suffix names; the rule in words on stderr; an unknown campaign is a clear error."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from studio.commands.export import COMMANDS
from studio.results.export_formats import read_table
from studio.services.auth import hash_password
from tests.studio.helpers import stopping_campaign


def export(db_url: str, *args: str) -> Result:
    (group,) = COMMANDS
    return CliRunner().invoke(group, ["stops", *args, "--db", db_url], catch_exceptions=False)


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_export_stops_writes_one_row_per_stop(corpus: Engine, db_url: str, tmp_path: Path, suffix: str) -> None:
    stopping_campaign(corpus, hash_password("pw"), stopping={"rule": "curtail"})
    target = tmp_path / f"stops.{suffix}"
    done = export(db_url, "--campaign", "stop", "-o", str(target))
    assert done.exit_code == 0, done.output
    assert "Stopping (curtail)" in done.stderr and "wrote 3 stop rows" in done.stdout
    rows = read_table(target)
    assert list(rows.columns) == ["item", "scenario", "votes_at_stop", "rule", "probability", "stopped_at"]
    assert len(rows) == 3 and set(rows["rule"]) == {"curtail"}
    assert [int(votes) for votes in rows["votes_at_stop"]] == [3, 3, 3]
    assert {float(value) for value in rows["probability"]} == {1.0}
    assert all(datetime.fromisoformat(str(at)).tzinfo is not None and "T" in str(at) for at in rows["stopped_at"])


def test_export_stops_to_stdout_and_an_unknown_campaign(corpus: Engine, db_url: str) -> None:
    stopping_campaign(corpus, hash_password("pw"), stopping={"rule": "curtail"})
    done = export(db_url, "--campaign", "stop")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.exit_code == 0 and len(lines) == 3 and {line["votes_at_stop"] for line in lines} == {3}
    assert all("T" in line["stopped_at"] and datetime.fromisoformat(line["stopped_at"]).tzinfo for line in lines)
    unknown = export(db_url, "--campaign", "nope")
    assert unknown.exit_code != 0 and "nope" in unknown.output
