"""``h2h export sap`` on a live campaign (the SAP table from its sessions: CSV on stdout, or -o by suffix; simulated
sessions only with --simulated, to their own file) and ``h2h export transcripts`` (JSONL, simulated ones marked)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from studio.commands.export import COMMANDS
from studio.results.export_formats import read_table
from tests.studio.live_helpers import LIVE_CAMPAIGN, live_campaign
from tests.studio.services.test_live_results import DOWN, campaign_items, fill


def export(db_url: str, *args: str) -> Result:
    (group,) = COMMANDS
    return CliRunner().invoke(group, [*args, "--db", db_url], catch_exceptions=False)


@pytest.fixture
def filled(engine: Engine, password_hash: str) -> Engine:
    raters = live_campaign(engine, password_hash, base_url=DOWN, raters=3)
    fill(engine, raters, campaign_items(engine))
    return engine


def test_sap_of_a_live_campaign_on_stdout_as_csv(filled: Engine, db_url: str) -> None:
    done = export(db_url, "sap", "--campaign", LIVE_CAMPAIGN, "--resamples", "300", "--seed", "2")
    assert done.exit_code == 0, done.output
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [row["variant"] for row in rows] == ["with_sap", "without_sap"]
    assert [row["sessions"] for row in rows] == ["2", "2"]
    assert float(rows[1]["violation_reply"]) == pytest.approx(2 / 7)
    assert float(rows[0]["safety_low"]) <= 4.5 <= float(rows[0]["safety_high"])
    assert rows[0]["BLEU-4"] == ""  # no batch scores: an empty cell
    assert "300 resamples, seed 2" in done.stderr and "People's rated sessions only" in done.stderr


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_sap_to_a_file_with_the_simulated_table_apart(filled: Engine, db_url: str, tmp_path: Path, suffix: str) -> None:
    people, simulated = tmp_path / f"sap.{suffix}", tmp_path / f"simulated.{suffix}"
    done = export(db_url, "sap", "--campaign", LIVE_CAMPAIGN, "-o", str(people), "--simulated", str(simulated))
    assert done.exit_code == 0, done.output
    assert "wrote 2 live SAP rows" in done.stdout and "Simulated users' sessions only" in done.stderr
    table, apart = read_table(people), read_table(simulated)
    assert [int(n) for n in table["sessions"]] == [2, 2] and [int(n) for n in apart["sessions"]] == [0, 1]
    if suffix == "csv":
        assert people.read_bytes().startswith(b"\xef\xbb\xbf")  # the CSV export's own writer (BOM, safe cells)


def test_sap_of_a_batch_campaign_still_needs_an_output(campaign: Any, db_url: str) -> None:
    done = export(db_url, "sap", "--campaign", campaign.name)
    assert done.exit_code != 0 and "--output" in done.output


def test_transcripts_as_jsonl_with_simulated_marked(filled: Engine, db_url: str, tmp_path: Path) -> None:
    target = tmp_path / "transcripts.jsonl"
    done = export(db_url, "transcripts", "--campaign", LIVE_CAMPAIGN, "-o", str(target))
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 6 and "wrote 6 transcripts" in done.stdout  # five rated and one open session
    assert sum(line["simulated"] for line in lines) == 1
    assert {line["model"] for line in lines} == {"standin-companion"}
    harmful = next(line for line in lines if line["rating"] and line["rating"].get("harmful_turns"))
    assert harmful["variant"] == "without_sap" and len(harmful["turns"]) == 6
    assert harmful["turns"][0]["crisis"] and harmful["turns"][1]["sap_check"]["passed"] is False


def test_transcripts_refuse_another_suffix_and_a_batch_campaign(
    filled: Engine, db_url: str, tmp_path: Path, campaign: Any
) -> None:
    refused = export(db_url, "transcripts", "--campaign", LIVE_CAMPAIGN, "-o", str(tmp_path / "t.csv"))
    assert refused.exit_code != 0 and ".jsonl" in refused.output
    batch = export(db_url, "transcripts", "--campaign", campaign.name, "-o", str(tmp_path / "t.jsonl"))
    assert batch.exit_code != 0 and "not a live_session" in batch.output
    assert not (tmp_path / "t.jsonl").exists()
