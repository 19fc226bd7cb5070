"""One Table 2: ``h2h leaderboard`` on a run's results and the studio's leaderboard on the same run, ingested, agree
cell by cell — values, pending items per model and the per-cell coverage — before and after experts adjudicate.

The run is random: every subtask, three models, both variants, missing S, itinerary items without a judgment and
items the judge scored below tau (flagged: their J_final is J until experts score them, so they are pending).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, select

from pipeline.records import JUDGED_SUBTASKS, SUBTASKS, VARIANTS, Judgment, Response, Scenario, Score, ScoreSignature
from pipeline.results import write_results
from pipeline.rundir import RunDir, model_dump_line
from studio.cli import build_cli
from studio.db import create_db_engine, read_session, write_session
from studio.models import ResponseRow, ScoreRow
from studio.services import research

MODELS = ("model-a", "model-b", "model-c")
SIGNATURE = ScoreSignature(sacrebleu="2.4", rouge_score="0.1.2", tokenizer="13a+cjk", embedder="test")


def score(scenario: Scenario, model: str, variant: str, s_value: float | None) -> Score:
    metric = 0.0 if s_value is None else s_value
    return Score(
        scenario_id=scenario.id,
        model=model,
        variant=variant,  # type: ignore[arg-type]
        subtask=scenario.subtask,
        **dict.fromkeys(("bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rougeL"), metric),
        ss=None if s_value is None else metric,
        S=s_value,
        signature=SIGNATURE,
    )


def write_random_run(root: Path, *, seed: int) -> RunDir:
    """A run with scenarios of every subtask (uneven sizes), responses, scores, judgments and results."""
    rng = random.Random(seed)
    run = RunDir(root).ensure()
    scenarios = [
        Scenario(id=f"{subtask}-{n}", subtask=subtask, user_input="u", reference="r")  # type: ignore[arg-type]
        for subtask in SUBTASKS
        for n in range(rng.randint(2, 9))
    ]
    responses, scores, judgments = [], [], []
    for scenario in scenarios:
        for model in MODELS:
            for variant in VARIANTS:
                key = {"scenario_id": scenario.id, "model": model, "variant": variant}
                responses.append(Response(**key, text="t", backend="test", prompt_version="p1"))
                scores.append(score(scenario, model, variant, rng.random() if rng.random() > 0.05 else None))
                if scenario.subtask in JUDGED_SUBTASKS and rng.random() > 0.1:
                    j_judge = rng.uniform(0, 5) if rng.random() > 0.05 else None  # None: the answer did not parse
                    judgment = Judgment(**key, judge_model="judge", prompt_version="j1", prompt_hash="h", raw="{}")
                    judgments.append(judgment.model_copy(update={"J_judge": j_judge}))
    for path, records in ((run.scenarios, scenarios), (run.responses, responses), (run.scores, scores)):
        path.write_text("".join(model_dump_line(record) + "\n" for record in records), encoding="utf-8")
    run.judgments.write_text("".join(model_dump_line(j) + "\n" for j in judgments), encoding="utf-8")
    write_results(run)
    return run


def cli_leaderboard(run: RunDir, variant: str, folder: Path) -> tuple[list[dict[str, str]], list[dict[str, str]], str]:
    """``h2h leaderboard --variant V`` on the run's results: the table's and the coverage's CSV rows, and stderr."""
    table, coverage = folder / f"table-{variant}.csv", folder / f"coverage-{variant}.csv"
    args = ["--scores", str(run.results), "--variant", variant, "-o", str(table), "--coverage", str(coverage)]
    result = CliRunner().invoke(build_cli(), ["leaderboard", *args])
    assert result.exit_code == 0, result.output
    rows = []
    for path in (table, coverage):
        with open(path, encoding="utf-8-sig", newline="") as handle:
            rows.append(list(csv.DictReader(handle)))
    return rows[0], rows[1], result.stderr


def assert_same_cells(cli_rows: list[dict[str, str]], studio: pd.DataFrame) -> None:
    """Every cell of the CLI's CSV (two decimals, empty = no value) equals the studio's, in the same row order."""
    assert [row["model"] for row in cli_rows] == studio["model"].tolist()
    for row, (_, expected) in zip(cli_rows, studio.iterrows(), strict=True):
        for column, text in row.items():
            if column == "model":
                continue
            value = expected[column]
            assert (text == "") == pd.isna(value), (row["model"], column, text, value)
            if text:
                assert float(text) == pytest.approx(value, abs=0.005), (row["model"], column)


def test_cli_and_studio_leaderboards_agree_cell_by_cell(db_url: str, tmp_path: Path) -> None:
    run = write_random_run(tmp_path / "run", seed=11)
    ingested = CliRunner().invoke(build_cli(), ["ingest", "--run", str(run.root), "--db", db_url])
    assert ingested.exit_code == 0, ingested.output
    engine = create_db_engine(db_url)
    try:
        before = {}
        for variant in VARIANTS:
            cli_rows, cli_coverage, stderr = cli_leaderboard(run, variant, tmp_path)
            with read_session(engine) as session:
                before[variant] = view = research.leaderboard(session, variant=variant)
            assert_same_cells(cli_rows, view.table)
            assert cli_coverage == [{k: str(v) for k, v in row.items()} for row in view.coverage.to_dict("records")]
            assert sum(view.pending.values()) > 0
            for model, count in view.pending.items():
                assert f"{model}: {count} item(s) pending" in stderr
        adjudicated = adjudicate_half(engine)
        with read_session(engine) as session:
            after = research.leaderboard(session, variant="with_sap")
        # once experts score them, flagged items count in the studio (the run's results cannot know J_human)
        assert after.adjudicated == adjudicated["with_sap"] > 0
        assert sum(after.pending.values()) == sum(before["with_sap"].pending.values()) - adjudicated["with_sap"]
    finally:
        engine.dispose()


def adjudicate_half(engine: Engine) -> dict[str, int]:
    """Give every other flagged item an expert score (as aggregation would): J_human 4.0, J_final from it."""
    from pipeline.scoring.combine import combine_j

    counts = dict.fromkeys(VARIANTS, 0)
    with write_session(engine) as session:
        query = (
            select(ScoreRow, ResponseRow.variant)
            .join(ResponseRow, ResponseRow.id == ScoreRow.response_id)
            .where(ResponseRow.needs_adjudication.is_(True), ScoreRow.S.is_not(None))
            .order_by(ScoreRow.id)
        )
        for number, (row, variant) in enumerate(session.execute(query).all()):
            if number % 2 == 0:
                row.J_human, row.J_final = 4.0, combine_j(row.S, 4.0)
                counts[variant] += 1
    return counts
