"""Cross-command flows through the real ``h2h`` CLI, as a researcher runs them from the README.

Each test is a defect a first user hit: ``validate`` naming an unknown file's kind "None", ``ingest`` of a folder
that is no run directory "succeeding" with nothing stored, ``export votes`` writing CSV into .jsonl and .parquet
files, and ``h2h agreement`` refusing ``export votes``' own file (it holds every question of the campaign).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine, func, select

from pipeline.rundir import RunDir
from studio.cli import build_cli
from studio.commands.agreement import plain_value, select_question
from studio.db import read_session
from studio.models import ScenarioRow


def h2h(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


def agreement_json(result: Result) -> dict[str, object]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_validate_names_an_unrecognised_file_and_exits_1(tmp_path: Path) -> None:
    unknown = tmp_path / "mystery.jsonl"
    unknown.write_text('{"foo": 1}\n', encoding="utf-8")
    result = h2h("validate", str(unknown))
    assert result.exit_code == 1
    assert f"{unknown}: unknown kind: 1 problem(s)" in result.stdout and "None" not in result.output
    assert f"{unknown}:1: (file): cannot tell what kind of file this is" in result.stderr


def test_ingest_refuses_a_folder_that_is_not_a_run_directory(db_url: str, run_dir: RunDir, tmp_path: Path) -> None:
    release = tmp_path / "release"  # the upstream layout: one {"response"} file per subtask, no scenarios.jsonl
    release.mkdir()
    (release / "dialogue_emotion.jsonl").write_text('{"response": "我懂你"}\n', encoding="utf-8")
    assert h2h("ingest", "--run", str(run_dir.root), "--db", db_url).exit_code == 0
    refused = h2h("ingest", "--run", str(release), "--db", db_url)
    assert refused.exit_code == 1
    assert f"{release / 'scenarios.jsonl'}: not found" in refused.output and "not a run directory" in refused.output
    from studio.db import create_db_engine

    engine = create_db_engine(db_url)
    with read_session(engine) as session:
        assert session.execute(select(func.count()).select_from(ScenarioRow)).scalar_one() == 6  # nothing lost
    engine.dispose()


def test_campaign_create_takes_a_schema_file_and_names_a_broken_one(
    corpus: Engine, db_url: str, tmp_path: Path
) -> None:
    from studio.workflows import default_schemas_dir

    folder = tmp_path / "schemas"
    folder.mkdir()
    crowd = (default_schemas_dir() / "crowd_vote.yaml").read_text(encoding="utf-8")
    mine = folder / "my_vote.yaml"
    mine.write_text(crowd.replace("name: crowd_vote", "name: my_vote"), encoding="utf-8")
    assert h2h("validate", str(mine)).exit_code == 0
    by_name = h2h("campaign", "create", "mine", "--schema", "my_vote", "--db", db_url)
    assert by_name.exit_code == 2 and "give its YAML file, or --schemas-dir DIR" in by_name.output
    by_path = h2h("campaign", "create", "mine", "--schema", str(mine), "--people-per-item", "2", "--db", db_url)
    assert by_path.exit_code == 0 and "created campaign mine (my_vote, 2 per item, queue: fill)" in by_path.output
    broken = folder / "broken.yaml"
    broken.write_text(crowd.replace("type: single_choice", "type: singel"), encoding="utf-8")
    from_folder = h2h(
        "campaign", "create", "other", "--schema", "my_vote", "--schemas-dir", str(folder), "--db", db_url
    )
    line = crowd.splitlines().index("  - id: verdict") + 1  # the first question (the file's guidelines come before)
    assert from_folder.exit_code == 2 and f"{broken}:{line}: questions.0: Input tag 'singel'" in from_folder.output
    assert "Traceback" not in from_folder.output
    assert [line.split("\t")[0] for line in h2h("campaign", "list", "--db", db_url).output.splitlines()] == ["mine"]


def test_reingesting_a_rescored_run_keeps_j_human_and_recomputes_j_final(
    studied: Engine, db_url: str, run_dir: RunDir
) -> None:
    from pipeline.scoring.combine import combine_j
    from studio.models import ScoreRow

    def adjudicated() -> dict[int, tuple[float, float, float]]:
        with read_session(studied) as session:
            rows = session.execute(select(ScoreRow).where(ScoreRow.J_human.is_not(None))).scalars().all()
            return {row.response_id: (row.S, row.J_human, row.J_final) for row in rows}

    before = adjudicated()
    assert before and all(j_final == pytest.approx(combine_j(s, j_human)) for s, j_human, j_final in before.values())
    rescored = [json.loads(line) for line in run_dir.scores.read_text(encoding="utf-8").splitlines()]
    for score in rescored:
        score["S"] = round(score["S"] / 2 + 0.025, 6)  # a new similarity model, say: every S moves
    run_dir.scores.write_text("".join(json.dumps(score) + "\n" for score in rescored), encoding="utf-8")
    assert h2h("ingest", "--run", str(run_dir.root), "--db", db_url).exit_code == 0
    after = adjudicated()
    assert after.keys() == before.keys()
    for response_id, (s, j_human, j_final) in after.items():
        assert j_human == before[response_id][1] and s != before[response_id][0]
        assert j_final == pytest.approx(combine_j(s, j_human))


def test_ingest_never_silently_replaces_scores_of_another_signature_or_judge(
    db_url: str, run_dir: RunDir, tmp_path: Path
) -> None:
    import shutil

    from studio.db import create_db_engine
    from studio.models import ScoreRow

    def judged() -> int:
        engine = create_db_engine(db_url)
        with read_session(engine) as session:
            count = session.execute(select(func.count()).where(ScoreRow.J_judge.is_not(None))).scalar_one()
        engine.dispose()
        return count

    assert h2h("ingest", "--run", str(run_dir.root), "--db", db_url).exit_code == 0
    assert judged() == 8  # iti-1 and iti-2 x 2 models x 2 variants (helpers.write_run)
    unjudged = RunDir(shutil.copytree(run_dir.root, tmp_path / "unjudged"))
    unjudged.judgments.unlink()
    refused = h2h("ingest", "--run", str(unjudged.root), "--db", db_url)
    assert refused.exit_code == 1 and "8 stored score(s) came from another scoring or judge" in refused.output
    assert "judge_model judge → None" in refused.output and judged() == 8  # nothing written
    rescored = RunDir(shutil.copytree(run_dir.root, tmp_path / "rescored"))
    rescored.scores.write_text(
        rescored.scores.read_text(encoding="utf-8").replace('"embedder": "test"', '"embedder": "other"')
    )
    other = h2h("ingest", "--run", str(rescored.root), "--db", db_url)
    assert other.exit_code == 1 and "24 stored score(s)" in other.output and "emb=test → " in other.output
    assert h2h("ingest", "--run", str(run_dir.root), "--db", db_url).output.count(": 0") == 6  # same run: no-op
    replaced = h2h("ingest", "--run", str(unjudged.root), "--replace", "--db", db_url)
    assert replaced.exit_code == 0 and "scores_updated: 8" in replaced.output and judged() == 0


def test_studio_migrates_a_new_store_and_names_one_it_cannot_open(tmp_path: Path) -> None:
    import socket

    from sqlalchemy import inspect

    from studio.db import create_db_engine

    fresh = tmp_path / "fresh.sqlite"
    refused = h2h("studio", "--db", f"sqlite:///{fresh}")  # no such file: a typo must not serve a new, empty store
    assert refused.exit_code == 1 and f"no store at {fresh}" in refused.output and not fresh.exists()
    fresh.touch()  # an empty SQLite file: a store of no schema yet
    with socket.socket() as taken:  # a port in use: the studio gets as far as binding, then stops
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        # a real process: uvicorn's logging set-up inside CliRunner would outlive the runner's streams
        command = [
            sys.executable,
            "-c",
            "from studio.cli import main; main()",
            "studio",
            "--db",
            f"sqlite:///{fresh}",
            "--port",
            str(taken.getsockname()[1]),
        ]
        served = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert served.returncode == 3, served.stderr  # uvicorn: startup failed (the port is taken)
    assert "no such table" not in served.stderr and "Traceback" not in served.stderr
    engine = create_db_engine(f"sqlite:///{fresh}")
    assert {"campaign", "answer", "user"} <= set(inspect(engine).get_table_names())  # migrated before serving
    engine.dispose()
    missing = h2h("studio", "--db", "postgresql+psycopg://postgres@127.0.0.1:5432/h2h_no_such_database_t1")
    assert missing.exit_code == 1 and 'database "h2h_no_such_database_t1" does not exist' in missing.output
    assert "cannot open the store" in missing.output and "Traceback" not in missing.output
    bad_url = h2h("users", "list", "--db", "not-a-url")
    assert bad_url.exit_code == 1 and "not-a-url: not a database URL" in bad_url.output


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def test_votes_export_follows_the_suffix_and_feeds_h2h_agreement(voted: Engine, db_url: str, tmp_path: Path) -> None:
    paths = {suffix: tmp_path / f"votes{suffix}" for suffix in (".csv", ".jsonl", ".parquet")}
    for path in paths.values():
        written = h2h("export", "votes", "--campaign", "vote", "--db", db_url, "-o", str(path))
        assert written.exit_code == 0 and "wrote 36 rows" in written.output  # 6 items x 2 people x 3 questions
    as_csv = pd.DataFrame(read_csv_rows(paths[".csv"]))
    assert all(float(seconds) >= 0 for seconds in as_csv["server_seconds"])  # every answer has the server's time
    as_jsonl = pd.read_json(paths[".jsonl"], lines=True, dtype=False)
    as_parquet = pd.read_parquet(paths[".parquet"])
    assert paths[".parquet"].read_bytes()[:4] == b"PAR1" and paths[".jsonl"].read_text(encoding="utf-8")[0] == "{"
    for frame in (as_jsonl, as_parquet):
        assert list(frame.columns) == list(as_csv.columns)
        assert frame["value"].astype(str).tolist() == as_csv["value"].tolist()
        assert frame["annotator"].tolist() == as_csv["annotator"].tolist()

    several = h2h("agreement", "--votes", str(paths[".csv"]), "--level", "nominal")
    assert several.exit_code == 2 and "comment, subtask_label, verdict; pick one" in several.output
    verdict = agreement_json(
        h2h(
            "agreement",
            "--votes",
            str(paths[".csv"]),
            "--level",
            "nominal",
            "--question",
            "verdict",
            "--resamples",
            "50",
        )
    )
    assert verdict["n_items"] == 6 and verdict["n_annotators"] == 2
    assert verdict["percent_agreement"] == pytest.approx(4 / 6)  # dlg-3 and iti-3 split (helpers.CROWD_VOTES)
    only_labels = tmp_path / "labels.csv"
    assert (
        h2h(
            "export",
            "votes",
            "--campaign",
            "vote",
            "--question",
            "subtask_label",
            "--db",
            db_url,
            "-o",
            str(only_labels),
        ).exit_code
        == 0
    )
    assert {row["question"] for row in read_csv_rows(only_labels)} == {"subtask_label"}
    labels = agreement_json(h2h("agreement", "--votes", str(only_labels), "--level", "nominal", "--resamples", "50"))
    picked = agreement_json(
        h2h(
            "agreement",
            "--votes",
            str(paths[".csv"]),
            "--level",
            "nominal",
            "--question",
            "subtask_label",
            "--resamples",
            "50",
        )
    )
    assert labels == picked and labels["percent_agreement"] == pytest.approx(5 / 6)
    for other in (paths[".jsonl"], paths[".parquet"]):  # the export's other formats read the same
        assert (
            agreement_json(
                h2h(
                    "agreement",
                    "--votes",
                    str(other),
                    "--level",
                    "nominal",
                    "--question",
                    "subtask_label",
                    "--resamples",
                    "50",
                )
            )
            == labels
        )
    binary = tmp_path / "binary.csv"
    binary.write_bytes(paths[".parquet"].read_bytes())
    not_text = h2h("agreement", "--votes", str(binary), "--level", "nominal")
    assert not_text.exit_code == 2 and "not UTF-8 CSV text" in not_text.output


def test_votes_export_refuses_an_unknown_format_question_or_campaign(
    voted: Engine, db_url: str, tmp_path: Path
) -> None:
    xlsx = h2h("export", "votes", "--campaign", "vote", "--db", db_url, "-o", str(tmp_path / "v.xlsx"))
    assert xlsx.exit_code == 2 and "unknown export format '.xlsx'" in xlsx.output
    question = h2h(
        "export", "votes", "--campaign", "vote", "--question", "nope", "--db", db_url, "-o", str(tmp_path / "v.csv")
    )
    assert question.exit_code == 2
    assert "has no question 'nope'; it has verdict, subtask_label, comment" in question.output
    campaign = h2h("export", "votes", "--campaign", "ghost", "--db", db_url, "-o", str(tmp_path / "v.csv"))
    assert campaign.exit_code == 1 and "no campaign 'ghost'" in campaign.output
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith("v.")) == []


def test_agreement_reports_lines_of_the_given_file_and_reads_guarded_numbers(tmp_path: Path) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_text(
        'item,annotator,question,value\n1,a,q,"\'-2"\n1,b,q,3\n1,c,other,x\n2,a,q,oops\n2,b,q,"two\nlines"\n3,a,q\n',
        encoding="utf-8",
    )
    result = h2h("agreement", "--votes", str(votes), "--level", "interval", "--question", "q")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"{votes}:5: value: interval data needs a number, got 'oops'",
        f"{votes}:6: value: interval data needs a number, got 'two\\nlines'",
        f"{votes}:8: (row): number of fields differs from the header",
    ]
    assert [plain_value(cell) for cell in ("'-2", "'=A1", "'plain", "-2", "")] == ["-2", "=A1", "'plain", "-2", ""]
    clean = tmp_path / "clean.csv"
    clean.write_text("item,annotator,question,value\n1,a,q,'-2\n1,b,q,-2\n2,a,q,1\n2,b,q,4\n", encoding="utf-8")
    target, lines = select_question(clean, "q", tmp_path / "selected.csv")
    assert lines == {2: 2, 3: 3, 4: 4, 5: 5}
    assert [row["value"] for row in read_csv_rows(target)] == ["-2", "-2", "1", "4"]
    assert agreement_json(
        h2h("agreement", "--votes", str(clean), "--level", "interval", "--question", "q", "--resamples", "20")
    )["percent_agreement"] == pytest.approx(0.5)
