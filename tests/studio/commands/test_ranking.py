"""``h2h ranking`` on real files: a pairwise campaign's own votes export from a SQLite store, a written CSV, and bad
rows named by file, line and field with nothing written."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from studio.commands.ranking import ranking_command
from studio.db import write_session
from studio.models import UserPublic
from studio.results.export_formats import read_table
from studio.results.ranking import bradley_terry
from studio.services.campaigns import create_campaign
from studio.services.votes_export import export_votes
from studio.workflows import load_schemas
from tests.studio.helpers import add_people, answer_all

HEADER = "item,annotator,question,model_a,variant_a,model_b,variant_b,value,value_shown"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(ranking_command, list(args))
    return result.exit_code, result.stdout, result.stderr


def written(path: Path) -> Path:
    rows = []
    plan = [("x", "y", "A")] * 6 + [("y", "x", "A")] * 2 + [("y", "z", "B")] * 3 + [("z", "y", "tie"), ("x", "z", "A")]
    plan += [("z", "x", "A"), ("y", "z", "A")]
    for number, (a, b, choice) in enumerate(plan, start=1):
        rows.append(f"{number},ann,preference,{a},base,{b},base,,{choice}")
    rows.append("99,ann,comment,x,base,y,base,nice,")  # another question: not read
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def test_prints_the_table_bias_and_fragility_and_writes_three_files(tmp_path: Path) -> None:
    votes = written(tmp_path / "votes.csv")
    output = tmp_path / "ranking.csv"
    code, out, err = run("--votes", str(votes), "--question", "preference", "-o", str(output))
    assert code == 0, err
    frame = pd.read_csv(votes)
    expected = bradley_terry(frame[frame["question"] == "preference"]).table
    table = read_table(output)
    assert table["competitor"].tolist() == expected["competitor"].tolist() == ["x", "z", "y"]
    assert table["rating"].to_numpy() == pytest.approx(expected["rating"].to_numpy(), abs=1e-6)
    assert table.loc[0, "wins"] == 7 and table.loc[0, "votes"] == 10  # x: 6 + 1 wins of its 10 votes
    assert out.splitlines()[0] == "competitor,rating,lower,upper,rank,votes"
    assert out.splitlines()[1].startswith(f"x,{float(expected['rating'].iloc[0]):.1f},")
    assert "Position bias: the side shown first (A) won 11 of 14 decided votes" in out
    assert "x over z" in out and "greedy upper bound" in out
    rates = pd.read_csv(tmp_path / "ranking.winrates.csv")
    assert rates.loc[0, "y"] == "0.750 (8)"
    fragility = pd.read_csv(tmp_path / "ranking.fragility.csv")
    assert fragility["upper"].tolist() == ["x", "z"] and (fragility["votes"] == 15).all()


def test_bad_rows_are_named_and_nothing_written(tmp_path: Path) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_text(
        "\n".join([HEADER, "1,ann,preference,x,,y,,,A", "2,ann,preference,,,y,,,B", "3,ann,preference,x,,y,,,C"])
        + "\n",
        encoding="utf-8",
    )
    output = tmp_path / "ranking.csv"
    code, _, err = run("--votes", str(votes), "-o", str(output))
    assert code == 1
    assert f"{votes}:3: model_a: empty" in err
    assert f"{votes}:4: value_shown: 'C' is not one of A, B, tie" in err
    assert not output.exists()


def test_missing_columns_are_a_usage_error(tmp_path: Path) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_text("item,annotator,value\n1,ann,A\n", encoding="utf-8")
    code, _, err = run("--votes", str(votes))
    assert code == 2 and "lacks the columns model_a" in err


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_on_a_pairwise_campaigns_own_votes_export(
    corpus: Engine, users: dict[str, UserPublic], password_hash: str, tmp_path: Path, db_url: str
) -> None:
    with write_session(corpus) as session:
        create_campaign(session, name="pairs", schema=load_schemas()["pairwise"], people_per_item=3)
    people = add_people(corpus, password_hash, ["p-1", "p-2", "p-3"], "annotator")
    # p-1 and p-2 pick what they saw as A, p-3 what they saw as B.
    answer_all(corpus, "pairs", people, lambda _i, _r, person: {"preference": "B" if person.username == "p-3" else "A"})
    for suffix in ("csv", "jsonl"):
        exported = tmp_path / f"pairs.{suffix}"
        export_votes(corpus, "pairs", exported)
        code, out, err = run("--votes", str(exported), "--question", "preference", "-o", str(tmp_path / "r.csv"))
        assert code == 0, err
        export = read_table(exported)
        votes = export[export["question"] == "preference"]
        decided = len(votes)
        first = int((votes["value_shown"] == "A").sum())
        assert first * 3 == decided * 2
        assert f"won {first} of {decided} decided votes" in out
        table = read_table(tmp_path / "r.csv")
        assert table["votes"].sum() == 2 * decided
