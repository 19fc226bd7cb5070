"""The README's curator walkthrough, command by command, over the real store (SQLite and PostgreSQL) with a scripted
OpenAI-compatible judge on 127.0.0.1 (``tests.pipeline.fake_openai``): refine → ingest-curation → campaigns →
export-pairs → judge-pairs → ingest-curation --pairs → rater-agreement → a decision → publish → export dataset."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from pipeline.jsonl import write_records
from studio.cli import build_cli
from studio.db import write_session
from studio.models import UserPublic
from studio.usecases import curate
from tests.pipeline.fake_openai import FakeOpenAI
from tests.studio.curation_run import raw_scenarios


def judge(body: dict[str, Any]) -> str:
    """Pre-screen: keep, except discard for the scenario with a phone number; pairs: the longer reply wins."""
    text = body["messages"][-1]["content"]
    if "[The Start of Reply A]" in text:
        first = text.split("[The Start of Reply A]\n")[1].split("\n[The End of Reply A]")[0]
        second = text.split("[The Start of Reply B]\n")[1].split("\n[The End of Reply B]")[0]
        return "Warmer. " + ("[[A]]" if len(first) > len(second) else "[[B]]" if len(second) > len(first) else "[[C]]")
    return "Leaks a number. [[DISCARD]]" if "[PHONE]" in text else "Fits the persona. [[KEEP]]"


@pytest.fixture
def judge_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    server.answer = judge
    try:
        yield server
    finally:
        server.stop()


def h2h(*args: str) -> str:
    done = CliRunner().invoke(build_cli(), list(args))
    assert done.exit_code == 0, done.output
    return done.output


def test_the_readme_walkthrough_runs(
    corpus: Engine, db_url: str, users: dict[str, UserPublic], judge_server: FakeOpenAI, tmp_path: Path
) -> None:
    source, refined = tmp_path / "raw.jsonl", tmp_path / "refined"
    write_records(source, raw_scenarios())
    endpoint = ["--judge-model", "M", "--base-url", judge_server.base_url, "--no-progress"]
    h2h("refine", str(source), "--out", str(refined), *endpoint)
    first = h2h("ingest-curation", str(refined), "--db", db_url)
    assert "scenarios_updated: 2" in first and "prescreen_written: 6" in first  # dlg-1 and iti-1 were cleaned
    h2h("campaign", "create", "vote-refined", "--schema", "crowd_vote", "--people-per-item", "3", "--db", db_url)
    h2h("campaign", "create", "pairs", "--schema", "pairwise", "--subtask", "dialogue_base", "--db", db_url)
    pairs, verdicts = tmp_path / "pairs.jsonl", tmp_path / "pair_verdicts.jsonl"
    assert "wrote 4 pairs" in h2h("export-pairs", "--campaign", "pairs", "-o", str(pairs), "--db", db_url)
    h2h("judge-pairs", str(pairs), "-o", str(verdicts), *endpoint, "--samples", "1")
    assert "pair_judgments_written: 4" in h2h("ingest-curation", str(refined), "--pairs", str(verdicts), "--db", db_url)
    agreement = h2h("rater-agreement", "--campaign", "pairs", "--db", db_url)
    assert "items_with_llm: 4" in agreement and "human_votes: 0" in agreement
    with write_session(corpus) as session:
        curate.decide(session, caller=users["curator"], scenario_id="dlg-2", action="accept", reason="checked")
        curate.decide(session, caller=users["curator"], scenario_id="dlg-1", action="reject", reason="leaks")
    published = h2h("publish", "--name", "v1", "--note", "first cut", "--db", db_url)
    assert published.startswith("1 scenario(s) would be published: 1 by a curator.\n  dlg-2\t")  # what, and why
    assert "\npublished v1: 1 scenarios (accepted 1, rejected 1, pending 4)" in published
    out = tmp_path / "v1.jsonl"
    h2h("export", "dataset", "--version", "v1", "-o", str(out), "--db", db_url)
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["dlg-2"]
