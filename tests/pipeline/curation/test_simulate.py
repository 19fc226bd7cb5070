"""``h2h simulate`` end to end with a scripted user-LLM and companion on a real HTTP server; resuming after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from pipeline.curation.records import Provenance, RemovedDuplicate
from pipeline.jsonl import read_records
from pipeline.records import Scenario
from studio.cli import build_cli
from tests.pipeline.fake_openai import FakeOpenAI
from tests.repo import REPO_ROOT


def scripted(body: dict[str, Any]) -> str:
    """The user-LLM writes from its emotion (so conversations with one emotion repeat); the companion answers."""
    system = body["messages"][0]["content"]
    if system.startswith("You play a user"):
        emotion = system.split("How you feel: ")[1].split("\n")[0]
        turn = sum(1 for message in body["messages"] if message["role"] == "assistant")
        return f"I feel {emotion} today, turn {turn}, and I wanted to tell you about it."
    last = body["messages"][-1]["content"]
    return f"Thank you for telling me. {last[:30]} — I'm here with you."


def _args(folder: Path, fake: FakeOpenAI, count: int = 12) -> list[str]:
    return [
        "simulate",
        "--out",
        str(folder),
        "--subtask",
        "dialogue_emotion",
        "--count",
        str(count),
        "--user-model",
        "user-sim",
        "--companion-model",
        "companion",
        "--base-url",
        fake.base_url,
        "--turns",
        "2",
        "--seed",
        "7",
        "--chunk",
        "2",
        "--no-progress",
    ]


def test_simulate_writes_scenarios_provenance_and_removes_duplicates(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = scripted
    folder = tmp_path / "sim"
    result = CliRunner().invoke(build_cli(), _args(folder, fake_openai))
    assert result.exit_code == 0, result.output
    kept = read_records(folder / "scenarios.jsonl", Scenario)
    provenance = read_records(folder / "provenance.jsonl", Provenance)
    removed = read_records(folder / "duplicates.jsonl", RemovedDuplicate)
    assert len(kept) + len(removed) == 12 and removed  # eight emotions over twelve draws: repeats must occur
    assert [item.id for item in provenance] == [scenario.id for scenario in kept]
    kept_ids = {scenario.id for scenario in kept}
    assert all(item.of in kept_ids and item.id not in kept_ids for item in removed)
    first = kept[0]
    assert first.subtask == "dialogue_emotion" and len(first.history) == 2 and first.user_input.endswith("about it.")
    assert first.tags.emotion == provenance[0].axes.emotion and first.tags.language == "en"
    assert provenance[0].simulator_model == "user-sim" and provenance[0].companion_model == "companion"
    assert provenance[0].prompt_version.startswith("simulate_user-v1-") and provenance[0].seed == 7
    report = json.loads((folder / "diversity.json").read_text(encoding="utf-8"))
    assert report["kept"] == len(kept) and report["duplicates_removed"] == len(removed)
    assert sum(report["axes"]["emotion"].values()) == len(kept)
    assert "duplicates removed" in result.output and "emotion:" in result.output
    validate = CliRunner().invoke(
        build_cli(),
        ["validate", *(str(folder / f) for f in ("scenarios.jsonl", "provenance.jsonl", "duplicates.jsonl"))],
    )
    assert validate.exit_code == 0, validate.output


def test_a_killed_simulation_resumes_to_the_clean_result(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = scripted
    clean = CliRunner().invoke(build_cli(), _args(tmp_path / "clean", fake_openai))
    assert clean.exit_code == 0, clean.output
    fake_openai.delay_seconds = 0.05
    killed = tmp_path / "killed"
    script = f"from studio.cli import build_cli; build_cli()({_args(killed, fake_openai)!r}, prog_name='h2h')"
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, env=environment)
    written = killed / "scenarios.jsonl"
    deadline = time.monotonic() + 60
    while (
        not (written.exists() and written.read_text(encoding="utf-8").count("\n") >= 2) and time.monotonic() < deadline
    ):
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert 2 <= written.read_text(encoding="utf-8").count("\n") < 12
    fake_openai.delay_seconds = 0.0
    resumed = CliRunner().invoke(build_cli(), _args(killed, fake_openai))
    assert resumed.exit_code == 0, resumed.output
    for name in ("scenarios.jsonl", "provenance.jsonl", "duplicates.jsonl", "diversity.json"):
        assert (killed / name).read_bytes() == (tmp_path / "clean" / name).read_bytes(), name


def test_simulate_errors(tmp_path: Path) -> None:
    bad_axes = tmp_path / "axes.yaml"
    bad_axes.write_text("companions: []\n", encoding="utf-8")
    args = [
        "simulate",
        "--out",
        str(tmp_path / "s"),
        "--subtask",
        "dialogue_base",
        "--count",
        "1",
        "--user-model",
        "u",
        "--companion-model",
        "c",
        "--axes",
        str(bad_axes),
    ]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 1 and "companions: needs a non-empty list" in result.output
    wrong = CliRunner().invoke(build_cli(), [*args[:4], "no_such_subtask", *args[5:]])
    assert wrong.exit_code == 2 and "no_such_subtask" in wrong.output
