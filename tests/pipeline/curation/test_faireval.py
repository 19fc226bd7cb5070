"""FairEval: verdict parsing, entropy, a position-biased and a fair pair judge through a real HTTP server on
127.0.0.1, the pre-screen's k samples and uncertainty, the review queue, and refine (resumed equals clean)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.curation.faireval import combine_orders, parse_pair_answer, parse_screen_answer, uncertainty, underlying
from pipeline.curation.records import PairJudgment, PrescreenVerdict, QueueItem
from pipeline.jsonl import read_records, write_records
from pipeline.records import Scenario
from studio.cli import build_cli
from tests.pipeline.fake_openai import FakeOpenAI, Fault

PAIRS = [
    {
        "id": "p1",
        "prompt": "我今天被老板骂了",
        "response_a": "GOOD 听起来你很委屈，想说说发生了什么吗？",
        "response_b": "哦。",
    },
    {
        "id": "p2",
        "prompt": "I failed my exam",
        "response_a": "ok",
        "response_b": "GOOD That hurts. Want to talk it through?",
    },
    {"id": 3, "prompt": "周末去哪玩", "response_a": "都行", "response_b": "随便"},
]


def test_parsing_and_entropy() -> None:
    assert parse_screen_answer("The reply quotes the schedule.\n[[KEEP]]") == (
        "The reply quotes the schedule.",
        "keep",
        None,
    )
    assert parse_screen_answer("[[DISCARD]] then reconsidered [[revise]]")[1] == "revise"
    assert parse_screen_answer("looks fine")[1:] == (None, "no [[KEEP]], [[REVISE]] or [[DISCARD]] in the answer")
    assert parse_pair_answer("A is warmer. [[A]]") == ("A", None) and parse_pair_answer("")[0] is None
    assert (underlying("ab", "A"), underlying("ba", "A"), underlying("ba", "B"), underlying("ba", "C")) == (
        "a",
        "b",
        "a",
        "tie",
    )
    assert uncertainty(["keep"] * 3, 3) == 0.0 and uncertainty([], 3) == 1.0
    assert uncertainty(["keep", "revise", "discard"], 3) == pytest.approx(1.0)
    assert 0 < uncertainty(["keep", "keep", "revise"], 3) < 1
    assert combine_orders("a", "a") == ("a", True) and combine_orders("a", "b") == (None, False)


def _pairs_file(tmp_path: Path) -> Path:
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps(pair, ensure_ascii=False) + "\n" for pair in PAIRS), encoding="utf-8")
    return source


def _shown(body: dict[str, Any]) -> tuple[str, str]:
    text = body["messages"][-1]["content"]
    first = text.split("[The Start of Reply A]\n")[1].split("\n[The End of Reply A]")[0]
    second = text.split("[The Start of Reply B]\n")[1].split("\n[The End of Reply B]")[0]
    return first, second


def fair_judge(body: dict[str, Any]) -> str:
    first, second = _shown(body)
    verdict = "A" if first.startswith("GOOD") else "B" if second.startswith("GOOD") else "C"
    return f"Reply A says {first[:10]!r}, reply B says {second[:10]!r}. [[{verdict}]]"


def biased_judge(body: dict[str, Any]) -> str:
    return "The first reply is better, whatever it says. [[A]]"


def _judge(tmp_path: Path, fake: FakeOpenAI, samples: int = 1) -> dict[str, PairJudgment]:
    out = tmp_path / "judged.jsonl"
    args = [
        "judge-pairs",
        str(_pairs_file(tmp_path)),
        "-o",
        str(out),
        "--judge-model",
        "judge",
        "--base-url",
        fake.base_url,
        "--samples",
        str(samples),
        "--no-progress",
    ]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    return {judgment.id: judgment for judgment in read_records(out, PairJudgment)}


def test_a_fair_judge_is_consistent_with_the_right_winner(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = fair_judge
    judged = _judge(tmp_path, fake_openai)
    assert (judged["p1"].winner, judged["p2"].winner, judged["3"].winner) == ("a", "b", "tie")
    assert all(j.consistent and not j.needs_human and j.uncertainty == 0 for j in judged.values())
    assert judged["p1"].first_shown_rate == 0.5 and judged["p1"].order_verdicts == {"ab": "a", "ba": "a"}
    assert len(fake_openai.chat_requests()) == 6  # three pairs, two orders


def test_a_position_biased_judge_gets_no_winner_and_needs_a_person(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = biased_judge
    judged = _judge(tmp_path, fake_openai, samples=2)
    for judgment in judged.values():
        assert judgment.winner is None and not judgment.consistent and judgment.needs_human
        assert judgment.first_shown_rate == 1.0 and judgment.order_verdicts == {"ab": "a", "ba": "b"}
        assert [sample.shown for sample in judgment.samples] == ["A"] * 4
    queue = read_records(tmp_path / "pairs_queue.jsonl", QueueItem)
    assert [item.rank for item in queue] == [1, 2, 3] and all(item.needs_human for item in queue)


def test_judge_pairs_refuses_bad_lines(tmp_path: Path) -> None:
    source = tmp_path / "pairs.jsonl"
    source.write_text('{"id": "p", "prompt": "x", "response_a": "y"}\n', encoding="utf-8")
    args = ["judge-pairs", str(source), "-o", str(tmp_path / "o.jsonl"), "--judge-model", "j"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 1 and f"{source}:1: response_b: Field required" in result.output
    assert "--judge-model" in CliRunner().invoke(build_cli(), ["judge-pairs", str(source), "-o", "x.jsonl"]).output


def screen_judge(body: dict[str, Any]) -> str:
    """s0 always keep; s1 split keep/revise/discard across the seeds; s2 keep twice, revise once."""
    text, seed = body["messages"][-1]["content"], body["seed"]
    if "参考0" in text:
        return "The reply answers the question. [[KEEP]]"
    if "参考1" in text:
        return ["Fine. [[KEEP]]", "Off persona. [[REVISE]]", "Wrong facts. [[DISCARD]]"][seed]
    return ["Fine. [[KEEP]]", "Fine. [[KEEP]]", "A bit flat. [[REVISE]]"][seed]


def _scenarios(tmp_path: Path) -> Path:
    source = tmp_path / "scenarios.jsonl"
    write_records(
        source,
        [
            Scenario(
                id=f"s{i}",
                subtask="dialogue_base",
                persona="你是小暖。",
                user_input=f"问题{i}",
                reference=f"参考{i}：好的呀。",
            )
            for i in range(3)
        ],
    )
    return source


def test_prescreen_samples_aggregates_and_orders_by_uncertainty(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = screen_judge
    out = tmp_path / "verdicts.jsonl"
    args = [
        "prescreen",
        str(_scenarios(tmp_path)),
        "-o",
        str(out),
        "--judge-model",
        "j",
        "--base-url",
        fake_openai.base_url,
        "--no-progress",
    ]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    verdicts = {verdict.id: verdict for verdict in read_records(out, PrescreenVerdict)}
    assert verdicts["s0"].verdict == "keep" and verdicts["s0"].uncertainty == 0 and not verdicts["s0"].needs_human
    assert verdicts["s1"].votes == {"keep": 1, "revise": 1, "discard": 1} and verdicts[
        "s1"
    ].uncertainty == pytest.approx(1)
    assert verdicts["s1"].verdict == "revise" and verdicts["s1"].needs_human
    assert verdicts["s2"].verdict == "keep" and verdicts["s2"].reasons == ["Fine.", "Fine."]
    assert {request["temperature"] for request in fake_openai.chat_requests()} == {0.7}
    queue = read_records(tmp_path / "queue.jsonl", QueueItem)
    assert [item.id for item in queue] == ["s1", "s2", "s0"]
    assert CliRunner().invoke(build_cli(), ["validate", str(out), str(tmp_path / "queue.jsonl")]).exit_code == 0


def test_refine_resumes_to_the_clean_result(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.answer = screen_judge
    source = _scenarios(tmp_path)
    common = ["--judge-model", "j", "--base-url", fake_openai.base_url, "--no-progress", "--timeout", "2"]
    clean = CliRunner().invoke(build_cli(), ["refine", str(source), "--out", str(tmp_path / "clean"), *common])
    assert clean.exit_code == 0, clean.output
    assert "queue for people" in clean.output
    assert "cleaned.jsonl, preprocess_report.jsonl, prescreen.jsonl, queue.jsonl" in clean.output
    fake_openai.faults_when_contains = {"参考2": Fault("400")}  # this scenario's calls fail for good
    broken = CliRunner().invoke(build_cli(), ["refine", str(source), "--out", str(tmp_path / "resumed"), *common])
    assert broken.exit_code == 1 and "rerun the same command" in broken.output
    fake_openai.faults_when_contains = {}
    before = len(fake_openai.chat_requests())
    resumed = CliRunner().invoke(build_cli(), ["refine", str(source), "--out", str(tmp_path / "resumed"), *common])
    assert resumed.exit_code == 0, resumed.output
    assert len(fake_openai.chat_requests()) - before == 3  # only the failed scenario's three samples
    for name in ("cleaned.jsonl", "preprocess_report.jsonl", "prescreen.jsonl", "queue.jsonl"):
        assert (tmp_path / "resumed" / name).read_bytes() == (tmp_path / "clean" / name).read_bytes(), name


def test_refine_without_a_judge(tmp_path: Path) -> None:
    source = _scenarios(tmp_path)
    assert CliRunner().invoke(build_cli(), ["refine", str(source), "--out", str(tmp_path / "r")]).exit_code == 2
    result = CliRunner().invoke(build_cli(), ["refine", str(source), "--out", str(tmp_path / "r"), "--no-judge"])
    assert result.exit_code == 0, result.output
    queue = read_records(tmp_path / "r" / "queue.jsonl", QueueItem)
    assert {item.source for item in queue} == {"preprocess"} and len(queue) == 3
    assert "cleaned.jsonl, preprocess_report.jsonl, queue.jsonl" in result.output  # no prescreen.jsonl without a judge
