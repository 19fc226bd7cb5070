"""studio.ui.research_flow without a browser, on the real store (SQLite and PostgreSQL): role checks on every call,
the leaderboard with its pending count, Table 3, Fig. 7, agreement, calibration, progress, distributions, figures
and downloads (formula-safe CSV, JSONL, Parquet) written only where the server says."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Engine

from studio.db import read_session, write_session
from studio.models import UserPublic
from studio.results.export_formats import read_table
from studio.results.store_views import score_frame
from studio.services.auth import login
from studio.services.errors import InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from studio.ui import research_flow
from studio.ui.curate_flow import new_download_dir
from tests.studio.helpers import PASSWORD

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def token(engine: Engine, username: str) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=PASSWORD)


def test_only_researchers_curators_and_admins_read_results(
    studied: Engine, users: dict[str, UserPublic], tmp_path: Path
) -> None:
    calls = [
        lambda t: research_flow.score_options(studied, t),
        lambda t: research_flow.leaderboard(studied, t, variant="with_sap"),
        lambda t: research_flow.safety_table(studied, t),
        lambda t: research_flow.instruction_table(studied, t),
        lambda t: research_flow.agreement(studied, t, "vote", resamples=20),
        lambda t: research_flow.calibration(studied, t),
        lambda t: research_flow.progress(studied, t),
        lambda t: research_flow.distribution(studied, t),
        lambda t: research_flow.export_table(studied, t, "progress_campaigns", "csv", tmp_path),
    ]
    for role in ("annotator", "expert"):
        refused = token(studied, role)
        for call in calls:
            with pytest.raises(PermissionDenied):
                call(refused)
    for call in calls:
        with pytest.raises(NotAuthenticated):
            call("forged")
    assert not list(tmp_path.glob("h2h-*"))
    for role in ("researcher", "curator", "admin"):
        allowed = token(studied, role)
        campaigns = research_flow.progress(studied, allowed)[0]["campaign"].tolist()
        assert campaigns == ["adj", "if", "sap", "vote", "vote-review"]


def test_leaderboard_table3_and_fig7(studied: Engine, users: dict[str, UserPublic], tmp_path: Path) -> None:
    researcher = token(studied, "researcher")
    options = research_flow.score_options(studied, researcher)
    assert options.variants == ["with_sap", "without_sap"] and len(options.signatures) == 1
    with read_session(studied) as session:
        scores = score_frame(session)
    assert options.signatures == sorted(set(scores["signature"])) and options.variants == sorted(set(scores["variant"]))
    with pytest.raises(InvalidInput, match="variant"):
        research_flow.leaderboard(studied, researcher)
    board = research_flow.leaderboard(studied, researcher, variant="with_sap", signature=options.signatures[0])
    assert board.table["model"].tolist() == sorted(
        board.table["model"], key=lambda m: -float(board.table.set_index("model").loc[m, "overall"])
    )
    assert set(board.table["model"]) == {"model-alpha", "model-beta"}
    assert {"dialogue_base", "itinerary_basic", "overall"} <= set(board.table.columns)
    assert "pending adjudication" in board.caption and "adjudicated." in board.caption

    safety = research_flow.safety_table(studied, researcher)
    assert safety["variant"].tolist() == ["with_sap", "without_sap"]
    assert safety.set_index("variant").loc["with_sap", "violation_rate"] == 0.0
    assert safety.set_index("variant").loc["without_sap", "violation_rate"] == 1.0
    by_model = research_flow.safety_table(studied, researcher, by_model=True)
    assert set(by_model["model"]) == {"model-alpha", "model-beta"}

    fig7 = research_flow.instruction_table(studied, researcher)
    assert fig7.set_index("model").loc["model-alpha", "explicit"] == 5.0
    plot = research_flow.instruction_plot(studied, researcher, tmp_path)
    assert plot == tmp_path / "instruction_following.png" and plot.read_bytes().startswith(PNG_MAGIC)


def test_agreement_calibration_progress_and_distribution(
    studied: Engine, users: dict[str, UserPublic], tmp_path: Path
) -> None:
    researcher = token(studied, "researcher")
    by_question, annotators = research_flow.agreement(studied, researcher, "vote", resamples=20)
    assert {"verdict", "subtask_label"} <= set(by_question["question"])
    assert {"ann-1", "ann-2"} == set(annotators["annotator"])
    with pytest.raises(InvalidInput, match="campaign"):
        research_flow.agreement(studied, researcher, None)
    with pytest.raises(NotFound):
        research_flow.agreement(studied, researcher, "nope")

    stats, pairs, plot = research_flow.calibration(studied, researcher, tmp_path)
    assert stats.loc[0, "n"] == len(pairs) > 0 and set(pairs["J_human"]) == {2.0}
    assert plot is not None and plot.read_bytes().startswith(PNG_MAGIC)

    campaigns, people = research_flow.progress(studied, researcher)
    assert campaigns.set_index("campaign").loc["vote", "answers"] == 12
    vote = people[people["campaign"] == "vote"].set_index("annotator")
    assert vote.loc["ann-1", "answers"] == 6 and vote.loc["ann-1", "median_seconds"] == 3.0

    histogram = research_flow.distribution(studied, researcher, metric="S", bins=10, variant="with_sap")
    assert histogram.groupby("model")["count"].sum().to_dict() == {"model-alpha": 6, "model-beta": 6}
    picture = research_flow.distribution_plot(studied, researcher, tmp_path, metric="S", bins=10)
    assert picture.name == "distribution-S.png" and picture.read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(InvalidInput, match="metric"):
        research_flow.distribution(studied, researcher, metric="__class__")


def test_export_tables_in_three_formats(studied: Engine, users: dict[str, UserPublic]) -> None:
    researcher = token(studied, "researcher")
    directory = new_download_dir()
    params = {"variant": "with_sap", "campaign": "vote"}
    csv = research_flow.export_table(studied, researcher, "leaderboard", "csv", directory, **params)
    assert csv == directory / "h2h-leaderboard.csv"
    board = research_flow.leaderboard(studied, researcher, variant="with_sap").table
    written = read_table(csv)
    assert written["model"].tolist() == board["model"].tolist()
    assert written["overall"].round(9).tolist() == board["overall"].round(9).tolist()  # full precision
    jsonl = research_flow.export_table(studied, researcher, "agreement", "jsonl", directory, **params)
    assert {json.loads(line)["question"] for line in jsonl.read_text(encoding="utf-8").splitlines()} >= {"verdict"}
    parquet = research_flow.export_table(studied, researcher, "table3", "parquet", directory, **params)
    assert pd.read_parquet(parquet)["variant"].tolist() == ["with_sap", "without_sap"]
    for table in research_flow.TABLE_NAMES:
        assert research_flow.export_table(studied, researcher, table, "csv", directory, **params).exists()
    with pytest.raises(InvalidInput, match="table"):
        research_flow.export_table(studied, researcher, "../secrets", "csv", directory)
    with pytest.raises(InvalidInput, match="format"):
        research_flow.export_table(studied, researcher, "leaderboard", "exe", directory)
    assert sorted(path.name for path in directory.iterdir()) == sorted(
        {f"h2h-{table}.csv" for table in research_flow.TABLE_NAMES} | {"h2h-agreement.jsonl", "h2h-table3.parquet"}
    )


def test_a_formula_model_name_is_neutralised_in_csv(
    tmp_path: Path, users: dict[str, UserPublic], store: Engine
) -> None:
    from pipeline.records import Response, Score, ScoreSignature
    from pipeline.rundir import RunDir, model_dump_line
    from studio.ingest import ingest_run
    from tests.studio.helpers import make_scenarios

    scenario = make_scenarios()[0]
    run = RunDir(tmp_path / "run").ensure()
    evil = "=cmd|' /C calc'!A0"
    response = Response(
        scenario_id=scenario.id, model=evil, variant="with_sap", backend="t", prompt_version="p", text="hi"
    )
    score = Score(
        scenario_id=scenario.id,
        model=evil,
        variant="with_sap",
        subtask=scenario.subtask,
        bleu1=0.5,
        bleu2=0.5,
        bleu3=0.5,
        bleu4=0.5,
        rouge1=0.5,
        rougeL=0.5,
        ss=0.5,
        S=0.5,
        signature=ScoreSignature(sacrebleu="2.4", rouge_score="0.1.2", tokenizer="t", embedder="e"),
    )
    for path, records in ((run.scenarios, [scenario]), (run.responses, [response]), (run.scores, [score])):
        path.write_text(model_dump_line(records[0]) + "\n", encoding="utf-8")
    ingest_run(store, run)
    path = research_flow.export_table(store, token(store, "researcher"), "leaderboard", "csv", tmp_path)
    assert read_table(path)["model"].tolist() == ["'" + evil]
    assert research_flow.leaderboard(store, token(store, "researcher")).table["model"].tolist() == [evil]
