"""``h2h export`` result subcommands and ``h2h aggregate`` against a real store (SQLite and PostgreSQL) through click,
reading every file back; a published dataset version loads with Hugging Face ``datasets`` offline."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from studio.commands.aggregate import aggregate_command
from studio.commands.export_results import RESULT_EXPORTS
from studio.db import read_session, write_session
from studio.models import CampaignPublic, UserPublic
from studio.results.export_formats import read_table
from studio.services import curation
from studio.services.research import leaderboard
from tests.studio.helpers import crowd_vote

FORMULA = '=HYPERLINK("http://evil.example","点我")'


def export(db_url: str, *args: str) -> click.testing.Result:
    group = click.Group("export", commands=list(RESULT_EXPORTS))
    return CliRunner().invoke(group, [*args, "--db", db_url], catch_exceptions=False)


def test_leaderboard_sap_instruction_agreement_and_adjudicated_exports(
    studied: Engine, db_url: str, tmp_path: Path
) -> None:
    mixed = export(db_url, "leaderboard", "-o", str(tmp_path / "lb.csv"))
    assert mixed.exit_code == 1 and "variant" in mixed.output
    bounds = ["--intervals", str(tmp_path / "lb-ci.csv"), "--fragility", str(tmp_path / "lb-frag.jsonl")]
    done = export(db_url, "leaderboard", "-o", str(tmp_path / "lb.csv"), "--variant", "with_sap", *bounds)
    assert done.exit_code == 0, done.output
    with read_session(studied) as session:
        view = leaderboard(session, variant="with_sap")  # the page's and the REST API's computation
    pd.testing.assert_frame_equal(
        read_table(tmp_path / "lb-ci.csv"), view.intervals.long().reset_index(drop=True), check_dtype=False
    )
    assert read_table(tmp_path / "lb-frag.jsonl")["upper"].tolist() == view.fragility["upper"].tolist()
    assert "Intervals: 95% percentile bootstrap over items" in done.output  # the method, stated
    alone = export(db_url, "leaderboard", "-o", str(tmp_path / "lb-alone.csv"), "--variant", "with_sap")
    assert alone.exit_code == 0 and "Intervals:" not in alone.output  # no bootstrap unless an interval file is asked
    pd.testing.assert_frame_equal(read_table(tmp_path / "lb-alone.csv"), read_table(tmp_path / "lb.csv"))
    board = read_table(tmp_path / "lb.csv")
    assert list(board["model"]) == sorted(board["model"], key=lambda m: -board.set_index("model").loc[m, "overall"])
    assert set(board["model"]) == {"model-alpha", "model-beta"} and "pending" not in done.output
    sap_done = export(db_url, "sap", "-o", str(tmp_path / "sap.parquet"), "--plot", str(tmp_path / "sap.png"))
    assert sap_done.exit_code == 0, sap_done.output
    sap = read_table(tmp_path / "sap.parquet").set_index("variant")
    assert sap.loc["without_sap", "violation_rate"] == 1.0 and {"BLEU-4", "ROUGE-L", "SS"} <= set(sap.columns)
    assert (tmp_path / "sap.png").read_bytes()[:4] == b"\x89PNG"
    figure = tmp_path / "fig7.png"
    fig7_ci = tmp_path / "fig7-ci.csv"
    args = ["instruction", "-o", str(tmp_path / "fig7.jsonl"), "--plot", str(figure), "--intervals", str(fig7_ci)]
    assert export(db_url, *args).exit_code == 0
    cells = read_table(fig7_ci).set_index(["model", "kind"])
    assert cells.loc[("model-alpha", "explicit"), "rating"] == 5.0
    assert (cells["low"] <= cells["rating"]).all() and (cells["rating"] <= cells["high"]).all()
    fig7 = [json.loads(line) for line in (tmp_path / "fig7.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {row["model"]: row["explicit"] for row in fig7} == {"model-alpha": 5.0, "model-beta": 2.0}
    assert figure.read_bytes()[:4] == b"\x89PNG"
    result = export(
        db_url,
        "agreement",
        "-o",
        str(tmp_path / "ag.csv"),
        "--campaign",
        "vote",
        "--resamples",
        "50",
        "--annotators",
        str(tmp_path / "people.csv"),
    )
    assert result.exit_code == 0, result.output
    assert list(read_table(tmp_path / "ag.csv")["question"]) == ["verdict", "subtask_label"]
    assert set(read_table(tmp_path / "people.csv")["annotator"]) == {"ann-1", "ann-2"}
    assert export(db_url, "adjudicated", "-o", str(tmp_path / "adj.jsonl"), "--variant", "with_sap").exit_code == 0
    adjudicated = read_table(tmp_path / "adj.jsonl")
    assert len(adjudicated) == 6 and adjudicated["J_final"].notna().all()
    assert (adjudicated.loc[adjudicated["J_human"].notna(), "J_human"] == 2.0).all()


def test_bad_suffix_and_unknown_names_are_clear_errors(
    store: Engine, corpus: Engine, db_url: str, tmp_path: Path
) -> None:
    wrong = export(db_url, "adjudicated", "-o", str(tmp_path / "x.xlsx"))
    assert wrong.exit_code == 2 and "unknown export format" in wrong.output
    missing = export(db_url, "dataset", "-o", str(tmp_path / "d.jsonl"), "--version", "v9")
    assert missing.exit_code == 1 and "no dataset version 'v9'" in missing.output
    assert not (tmp_path / "d.jsonl").exists()


def test_published_dataset_exports_load_with_hf_datasets_and_csv_is_formula_safe(
    store: Engine,
    campaign: CampaignPublic,
    users: dict[str, UserPublic],
    password_hash: str,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crowd_vote(store, password_hash)
    result = CliRunner().invoke(aggregate_command, ["--db", db_url], catch_exceptions=False)
    assert result.exit_code == 0 and '"campaign": "vote"' in result.output
    again = CliRunner().invoke(aggregate_command, ["--db", db_url, "--campaign", "vote"], catch_exceptions=False)
    assert '"changed": 0' in again.output
    with write_session(store) as session:
        curation.decide_scenario(
            session,
            actor=users["curator"].username,
            scenario_id="dlg-1",
            action="edit",
            reason="test formula",
            edits={"reference": FORMULA},
        )
        version, _ = curation.publish_dataset(session, actor=users["curator"].username, name="v1")
    for suffix in ("jsonl", "csv", "parquet"):
        done = export(db_url, "dataset", "-o", str(tmp_path / f"v1.{suffix}"), "--version", "v1")
        assert done.exit_code == 0, done.output
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    loaded = datasets.load_dataset(
        "json", data_files=str(tmp_path / "v1.jsonl"), split="train", cache_dir=str(tmp_path / "hf-cache")
    )
    assert loaded.num_rows == version.n_scenarios == 2  # dlg-1 (the curator's) and iti-2 (the crowd's rule)
    row = loaded[0]
    assert row["id"] == "dlg-1" and row["reference"] == FORMULA and row["history"][0]["content"] == "你好"
    with (tmp_path / "v1.csv").open(encoding="utf-8-sig", newline="") as handle:
        cells, _iti2 = list(csv.DictReader(handle))
    assert cells["reference"] == "'" + FORMULA and json.loads(cells["history"])[1]["content"] == "你好呀"
    assert read_table(tmp_path / "v1.parquet")["reference"].tolist()[0] == FORMULA
