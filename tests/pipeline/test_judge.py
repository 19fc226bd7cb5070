"""The LLM judge: answer parsing, the results it feeds, caching, failures and the ``h2h judge`` command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.commands.judge import judge
from pipeline.generation.openai_compat import OpenAIBackend, RetryPolicy
from pipeline.jsonl import read_records, write_records
from pipeline.judge import (
    JUDGE_SAMPLING,
    build_judge_messages,
    judge_prompt_version,
    load_rubric,
    parse_judge_answer,
    prompt_hash,
    run_judge,
)
from pipeline.records import Judgment, Response, Result, Scenario, record_key
from pipeline.results import build_results
from pipeline.rundir import RunDir
from pipeline.scoring.combine import J_FORMULA
from tests.pipeline.conftest import make_scenarios, prepared_run, score_of
from tests.pipeline.fake_openai import FakeOpenAI, Fault
from tests.repo import REPO_ROOT


@pytest.mark.parametrize(
    ("raw", "score"),
    [
        ('{"score": 4, "reasons": "good"}', 4.0),
        ('```json\n{"score": 3, "reasons": "ok"}\n```', 3.0),
        ('Here is my verdict:\n{"reasons": "keeps the 3 pm slot", "score": 5}\nThanks!', 5.0),
        ('评分如下：{"score": "2", "reasons": "忽略了预算"}', 2.0),
        ("4", 4.0),
        (" 3.5 / 5 ", 3.5),
        ("Score: 1", 1.0),
        ('{"score": 0, "reasons": "refused"}', 0.0),
    ],
)
def test_parse_reads_a_score(raw: str, score: float) -> None:
    assert parse_judge_answer(raw).score == score


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"score": 7, "reasons": "too kind"}', "outside 0..5"),
        ("-1", "outside 0..5"),
        ("I would give it a solid four.", "no score found"),
        ('{"score": true}', "no score found"),
        ('{"rating": 4}', "no score found"),
        ("", "empty answer"),
        (None, "empty answer"),
    ],
)
def test_parse_rejects_what_it_cannot_trust(raw: str | None, problem: str) -> None:
    verdict = parse_judge_answer(raw)
    assert verdict.score is None and problem in (verdict.error or "")


def test_the_rubric_and_prompt() -> None:
    rubric = load_rubric()
    for needle in ("Feasibility", "Constraints", "Coverage", "schedule", "Tone", '"score"', "- 0:", "- 5:"):
        assert needle in rubric
    scenario = make_scenarios(2)[1]
    messages = build_judge_messages(scenario, "上午去断桥，下午三点前回来看牙医。", rubric)
    assert messages[0] == {"role": "system", "content": rubric}
    for needle in (scenario.reference, scenario.user_input, "周六 15:00 牙医", "上午去断桥", scenario.persona):
        assert needle in messages[1]["content"]
    assert prompt_hash(messages) == prompt_hash(json.loads(json.dumps(messages)))
    assert prompt_hash(messages) != prompt_hash(build_judge_messages(scenario, "另一个回答", rubric))
    assert judge_prompt_version(rubric) != judge_prompt_version(rubric + " ")


def _judgment(scenario: Scenario, j: float | None, model: str = "m") -> Judgment:
    return Judgment(
        scenario_id=scenario.id, model=model, variant="with_sap", judge_model="judge-x", prompt_version="judge-v1-t",
        prompt_hash="h", raw=str(j), J_judge=j,
    )  # fmt: skip


def test_build_results_combines_s_and_the_judge() -> None:
    dialogue, basic, middle, advanced = make_scenarios(4)
    scenarios = {s.id: s for s in (dialogue, basic, middle, advanced)}
    scores = {score.key: score for score in (score_of(dialogue, 0.2), score_of(basic, 0.5), score_of(middle, 0.9),
                                              score_of(advanced, 0.9))}  # fmt: skip
    judgments = {j.key: j for j in (_judgment(basic, 4.0), _judgment(middle, 5.0), _judgment(dialogue, 5.0))}
    by_id = {result.scenario_id: result for result in build_results(scenarios, scores, judgments)}
    assert (by_id["s000"].J, by_id["s000"].J_judge, by_id["s000"].needs_adjudication) == (None, None, False)
    assert by_id["s000"].S == 0.2
    assert pytest.approx(0.6 * 5 * 0.5 + 0.4 * 4.0) == by_id["s001"].J  # 3.1 < 3.5
    assert by_id["s001"].J_final == by_id["s001"].J and by_id["s001"].needs_adjudication
    assert by_id["s001"].judge_model == "judge-x" and by_id["s001"].judge_prompt_version == "judge-v1-t"
    assert pytest.approx(4.7) == by_id["s002"].J and not by_id["s002"].needs_adjudication
    assert (by_id["s003"].J_judge, by_id["s003"].J, by_id["s003"].needs_adjudication) == (None, None, True)
    assert [r.scenario_id for r in build_results(scenarios, scores, judgments)] == ["s000", "s001", "s002", "s003"]


def _judge_answer(body: dict[str, Any]) -> str:
    """Grades by the candidate text: markers script unparsable and out-of-range answers."""
    content = body["messages"][-1]["content"]
    if "UNPARSABLE" in content:
        return "I cannot decide, sorry."
    if "TOO-HIGH" in content:
        return '{"score": 9, "reasons": "amazing"}'
    return '```json\n{"score": 4, "reasons": "feasible, keeps the dentist appointment"}\n```'


def _backend(fake: FakeOpenAI, concurrency: int = 4) -> OpenAIBackend:
    policy = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)
    return OpenAIBackend(model="judge-x", base_url=fake.base_url, api_key="x", concurrency=concurrency, policy=policy)


def test_judges_itinerary_levels_at_temperature_zero(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    scenarios = make_scenarios(6)  # s001-s003 are itinerary I-III, the rest dialogue
    run = prepared_run(tmp_path / "run", scenarios, {"s002": "UNPARSABLE plan", "s003": "TOO-HIGH plan"})
    summary = run_judge(run, judge_model="judge-x", backend=_backend(fake_openai), cache_dir=tmp_path / "cache",
                        progress=False)  # fmt: skip
    assert (summary.planned, summary.calls, summary.from_cache, summary.written) == (3, 3, 0, 3)
    assert summary.tokens["completion_tokens"] > 0 and not summary.failures
    bodies = fake_openai.chat_requests()
    assert all(body["temperature"] == 0.0 and body["model"] == "judge-x" for body in bodies)
    assert all(body["max_tokens"] == JUDGE_SAMPLING.max_tokens for body in bodies)
    judgments = {key[0]: j for key, j in run.load(run.judgments, Judgment).items()}
    assert set(judgments) == {"s001", "s002", "s003"}
    assert judgments["s001"].J_judge == 4.0 and judgments["s001"].usage["prompt_tokens"] > 0
    assert judgments["s002"].J_judge is None and judgments["s002"].raw == "I cannot decide, sorry."
    assert judgments["s003"].J_judge is None and "outside 0..5" in judgments["s003"].error
    assert judgments["s001"].prompt_version == judge_prompt_version(load_rubric())


def test_a_rerun_and_a_shared_cache_make_no_new_calls(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    scenarios = make_scenarios(4)
    first = prepared_run(tmp_path / "a", scenarios)
    run_judge(first, judge_model="judge-x", backend=_backend(fake_openai), cache_dir=tmp_path / "cache", progress=False)
    calls = len(fake_openai.chat_requests())
    again = run_judge(first, judge_model="judge-x", backend=_backend(fake_openai), cache_dir=tmp_path / "cache",
                      progress=False)  # fmt: skip
    assert again.planned == 0
    second = prepared_run(tmp_path / "b", scenarios)
    cached = run_judge(second, judge_model="judge-x", backend=_backend(fake_openai), cache_dir=tmp_path / "cache",
                       progress=False)  # fmt: skip
    assert (cached.planned, cached.from_cache, cached.calls) == (3, 3, 0)
    assert len(fake_openai.chat_requests()) == calls
    assert {k: j.J_judge for k, j in second.load(second.judgments, Judgment).items()} == {
        k: j.J_judge for k, j in first.load(first.judgments, Judgment).items()
    }


def test_identical_prompts_are_asked_once(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    scenario = make_scenarios(2)[1]
    run = prepared_run(tmp_path / "run", [scenario])
    twin = Response(scenario_id=scenario.id, model="m2", variant="with_sap", text=f"回答 {scenario.id}", backend="t",
                    prompt_version="v")  # fmt: skip
    with run.appender(run.responses) as appender:
        appender.append(twin)
    summary = run_judge(run, judge_model="judge-x", backend=_backend(fake_openai), cache_dir=tmp_path / "c",
                        progress=False)  # fmt: skip
    assert (summary.calls, summary.written) == (1, 2)
    assert len(fake_openai.chat_requests()) == 1


def test_failed_requests_are_left_for_a_rerun(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    run = prepared_run(tmp_path / "run", make_scenarios(4))
    fake_openai.faults_when_contains["回答 s002"] = Fault("500")
    summary = run_judge(run, judge_model="judge-x", backend=_backend(fake_openai), cache_dir=tmp_path / "c",
                        progress=False)  # fmt: skip
    assert [key[0] for key, _ in summary.failures] == ["s002"] and summary.written == 2
    assert ("s002", "m", "with_sap") not in run.load(run.judgments, Judgment)
    fake_openai.faults_when_contains.clear()
    retry = run_judge(run, judge_model="judge-x", backend=_backend(fake_openai), cache_dir=tmp_path / "c",
                      progress=False)  # fmt: skip
    assert (retry.planned, retry.calls, retry.failures) == (1, 1, [])


def _results(run: RunDir) -> dict[str, Result]:
    # read_records, not RunDir.load (which keeps the first of repeated keys): a key written twice must fail here
    results = read_records(run.results, Result)
    assert len({record_key(result) for result in results}) == len(results)
    return {result.scenario_id: result for result in results}


def test_cli_no_judge_flags_every_judged_item(tmp_path: Path) -> None:
    run = prepared_run(tmp_path / "run", make_scenarios(6))
    result = CliRunner().invoke(judge, ["--run", str(run.root), "--no-judge"])
    assert result.exit_code == 0, result.output
    assert "6 written" in result.output and "3 flagged for human adjudication" in result.output
    results = _results(run)
    assert {sid for sid, r in results.items() if r.needs_adjudication} == {"s001", "s002", "s003"}
    assert all(r.J_judge is None and r.J is None for r in results.values())
    assert not run.judgments.exists()
    # the manifest records which J formula made the results (Eq. 3 with S scaled: README's departures table)
    stage = run.read_manifest()["stages"][-1]
    assert (stage["stage"], stage["j_formula"], stage["alpha"], stage["tau"]) == ("judge", J_FORMULA, 0.6, 3.5)
    assert "5S" in J_FORMULA


def test_cli_judges_then_writes_results(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    run = prepared_run(tmp_path / "run", make_scenarios(6), {"s002": "UNPARSABLE"})
    args = ["--run", str(run.root), "--judge-model", "judge-x", "--base-url", fake_openai.base_url, "--api-key", "x",
            "--no-progress"]  # fmt: skip
    result = CliRunner().invoke(judge, args)
    assert result.exit_code == 0, result.output
    assert "3 calls" in result.output and "1 flagged for human adjudication" in result.output
    results = _results(run)
    assert pytest.approx(0.6 * 5 * 0.8 + 0.4 * 4.0) == results["s001"].J and not results["s001"].needs_adjudication
    assert results["s002"].J is None and results["s002"].needs_adjudication
    assert (run.root / "judge_cache" / "judge_cache.jsonl").exists()
    again = CliRunner().invoke(judge, args)
    assert again.exit_code == 0 and "0 to judge" in again.output and len(fake_openai.chat_requests()) == 3
    stage = run.read_manifest()["stages"][-1]
    assert (stage["judge_model"], stage["j_formula"]) == ("judge-x", J_FORMULA)


def test_cli_exit_codes(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    run = prepared_run(tmp_path / "run", make_scenarios(3))
    fake_openai.faults_when_contains["回答 s001"] = Fault("400")
    args = ["--run", str(run.root), "--judge-model", "judge-x", "--base-url", fake_openai.base_url, "--no-progress"]
    failed = CliRunner().invoke(judge, args)
    assert failed.exit_code == 1 and "1 failed" in failed.output
    assert _results(run)["s001"].needs_adjudication
    assert CliRunner().invoke(judge, ["--run", str(run.root)]).exit_code == 2
    run.scores.unlink()
    missing = CliRunner().invoke(judge, ["--run", str(run.root), "--no-judge"])
    assert missing.exit_code == 1 and "h2h score" in missing.output


def test_cli_reports_bad_run_contents_clearly(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios = make_scenarios(2)
    run = prepared_run(tmp_path / "run", scenarios)
    write_records(run.scenarios, scenarios[:1])  # the response to s001 now names an unknown scenario
    args = ["--run", str(run.root), "--judge-model", "judge-x", "--base-url", fake_openai.base_url, "--no-progress"]
    result = CliRunner().invoke(judge, args)
    assert result.exit_code == 1 and "'s001', which the run does not hold" in result.output

    write_records(run.scenarios, scenarios)
    cache = run.root / "judge_cache" / "judge_cache.jsonl"
    cache.parent.mkdir(parents=True)
    entries = '{"prompt_hash": "abc", "model": "judge-x", "raw": "4"}\n{"prompt_hash": "def"}\n'
    cache.write_text(entries, encoding="utf-8")
    result = CliRunner().invoke(judge, args)
    assert result.exit_code == 1 and f"{cache}:2: model: missing from a judge cache entry" in result.output
    assert fake_openai.chat_requests() == []


def test_a_killed_judge_resumes_to_the_clean_result(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    scenarios = make_scenarios(8)  # five itinerary I-III responses to judge
    clean, killed = prepared_run(tmp_path / "clean", scenarios), prepared_run(tmp_path / "killed", scenarios)
    common = ["--judge-model", "judge-x", "--base-url", fake_openai.base_url, "--api-key", "x", "--no-progress"]
    assert CliRunner().invoke(judge, ["--run", str(clean.root), *common]).exit_code == 0

    fake_openai.hang_after = fake_openai.answered + 2  # the 3rd request of the next run never returns
    args = ["--run", str(killed.root), *common, "--concurrency", "1"]
    script = f"from pipeline.commands.judge import judge; judge.main(args={args!r})"
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, env=environment)
    deadline = time.monotonic() + 60
    while not (killed.judgments.exists() and killed.judgments.read_text(encoding="utf-8").count("\n") >= 2):
        assert child.poll() is None and time.monotonic() < deadline, "the child never wrote 2 judgments"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert len(killed.load(killed.judgments, Judgment)) == 2 and not killed.results.exists()

    fake_openai.hang_after = None
    requests_before = len(fake_openai.chat_requests())
    resumed = CliRunner().invoke(judge, ["--run", str(killed.root), *common])
    assert resumed.exit_code == 0, resumed.output
    assert "3 to judge, 0 from cache, 3 calls" in resumed.output
    assert len(fake_openai.chat_requests()) == requests_before + 3
    dumped = {run.root.name: {k: j.model_dump() for k, j in run.load(run.judgments, Judgment).items()}
              for run in (clean, killed)}  # fmt: skip
    assert dumped["killed"] == dumped["clean"]
    assert killed.results.read_bytes() == clean.results.read_bytes()


def test_judges_never_mix_in_one_run_unless_rejudging(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    run = prepared_run(tmp_path / "run", make_scenarios(4))
    common = ["--run", str(run.root), "--base-url", fake_openai.base_url, "--api-key", "x", "--no-progress"]
    assert CliRunner().invoke(judge, [*common, "--judge-model", "judge-x"]).exit_code == 0
    before = run.judgments.read_bytes()
    version = judge_prompt_version(load_rubric())
    other = CliRunner().invoke(judge, [*common, "--judge-model", "judge-y"])
    assert other.exit_code == 1
    assert f"holds judgments by judge=judge-x|prompt={version}, not judge=judge-y|prompt={version}" in other.output
    assert "--rejudge" in other.output and run.judgments.read_bytes() == before
    requests_before = len(fake_openai.chat_requests())
    replaced = CliRunner().invoke(judge, [*common, "--judge-model", "judge-y", "--rejudge"])
    assert replaced.exit_code == 0, replaced.output
    assert "3 to judge, 0 from cache, 3 calls" in replaced.output
    assert len(fake_openai.chat_requests()) == requests_before + 3
    [archived] = run.root.glob("judgments.replaced-*.jsonl")
    assert archived.read_bytes() == before
    assert {j.judge_model for j in run.load(run.judgments, Judgment).values()} == {"judge-y"}
    assert {r.judge_model for r in _results(run).values() if r.subtask != "dialogue_base"} == {"judge-y"}


def test_a_nul_in_the_judges_answer_is_kept_visibly_replaced() -> None:
    from pipeline.judge import JudgeTask, judgment_for

    task = JudgeTask(key=("s1", "m", "with_sap"), messages=[], digest="d")
    judgment = judgment_for(task, judge_model="j", version="v", raw='{"score": 4}\x00', usage={})
    assert judgment.raw == '{"score": 4}\ufffd' and judgment.J_judge == 4.0


def test_cli_on_an_unscored_run_fails_before_any_judge_call(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = _judge_answer
    run = prepared_run(tmp_path / "run", make_scenarios(6))  # three itinerary I-III responses to judge
    run.scores.unlink()
    args = ["--run", str(run.root), "--judge-model", "judge-x", "--base-url", fake_openai.base_url, "--no-progress"]
    result = CliRunner().invoke(judge, args)
    assert result.exit_code == 1
    assert f"{run.scores}: no scores yet; run `h2h score --run {run.root}` first" in result.output
    assert fake_openai.chat_requests() == []  # before: every judge call was made, then "no scores yet"
    assert not run.judgments.exists() and not (run.root / "judge_cache").exists()
    assert run.read_manifest()["stages"] == []  # no judge stage recorded either
