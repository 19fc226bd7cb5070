"""``h2h judge-card`` against a real store (SQLite and PostgreSQL) through click: the card equals the service's, the
flip rate comes from ``--pairs`` and a bad line is named file:line: field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from studio.commands.judge_card import judge_card_command
from studio.db import read_session
from studio.results.export_formats import read_table
from studio.results.judge_bias import expected_calibration_error
from studio.services.research_judge import judge_items


def pair_line(ident: str, ab: str, ba: str) -> str:
    consistent = ab == ba
    record: dict[str, object] = {
        "id": ident,
        "winner": ab if consistent else None,
        "consistent": consistent,
        "needs_human": not consistent,
        "uncertainty": 0.0,
        "order_verdicts": {"ab": ab, "ba": ba},
        "votes": {"a": 1, "b": 1, "tie": 0},
        "first_shown_rate": 1.0 if not consistent else 0.5,
        "samples": [],
        "judge_model": "judge",
        "prompt_version": "v1",
    }
    return json.dumps(record)


def card(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(judge_card_command, [*args, "--db", db_url], catch_exceptions=False)


def test_judge_card_writes_the_card_with_the_flip_rate_from_pairs(studied: Engine, db_url: str, tmp_path: Path) -> None:
    pairs = tmp_path / "judgments.jsonl"
    pairs.write_text("\n".join([pair_line("p1", "a", "a"), pair_line("p2", "a", "b"), pair_line("p3", "b", "b"),
                                pair_line("p4", "tie", "a")]) + "\n", encoding="utf-8")  # fmt: skip
    out = tmp_path / "card.csv"
    done = card(db_url, "--variant", "with_sap", "--pairs", str(pairs), "-o", str(out))
    assert done.exit_code == 0, done.output
    rows = read_table(out).set_index("measure")
    assert rows.loc["flip_rate", "value"] == pytest.approx(0.5) and rows.loc["flip_rate", "n"] == 4
    assert rows.loc["first_shown", "value"] == pytest.approx(0.75)
    with read_session(studied) as session:
        items = judge_items(session, variant="with_sap")
    assert len(items) > 0 and rows.loc["ece", "n"] == len(items)
    expected = expected_calibration_error(items["J_judge"].to_numpy(), items["J_human"].to_numpy())
    assert rows.loc["ece", "value"] == pytest.approx(expected)
    assert "judge-bias rows" in done.output and ("material" in done.output.lower())


def test_judge_card_without_pairs_prints_how_to_get_them(studied: Engine, db_url: str) -> None:
    done = card(db_url, "--variant", "with_sap")
    assert done.exit_code == 0, done.output
    assert "run h2h judge-pairs, then h2h judge-card --pairs FILE" in done.output
    assert "decision_kappa (n = " in done.output


def test_a_bad_pairs_line_is_named(studied: Engine, db_url: str, tmp_path: Path) -> None:
    pairs = tmp_path / "judgments.jsonl"
    bad = json.loads(pair_line("p2", "a", "b"))
    bad["uncertainty"] = 3
    pairs.write_text(pair_line("p1", "a", "a") + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    done = card(db_url, "--variant", "with_sap", "--pairs", str(pairs))
    assert done.exit_code == 1 and f"{pairs}:2: uncertainty:" in done.output
