"""Preprocess: meta-text removal, role-play breaks, templated references, duplicates, the lexicon and the LLM
classifier (through a real HTTP server), the command's files, errors and the input left untouched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from pipeline.curation.preprocess import clean_scenario, preprocess
from pipeline.jsonl import write_records
from pipeline.paths import data_dir
from pipeline.records import Scenario, ScenarioTags, Turn
from studio.cli import build_cli
from tests.pipeline.fake_openai import FakeOpenAI


def scenario(sid: str, reference: str, user_input: str = "今天好累", **extra: Any) -> Scenario:
    return Scenario(
        id=sid,
        subtask="dialogue_base",
        persona="你是林夏，一个温柔的陪伴者。",
        user_input=user_input,
        reference=reference,
        **extra,
    )


def kinds(report: Any) -> list[str]:
    return [flag.kind for flag in report.flags]


def test_meta_commentary_is_removed_and_kept_when_it_is_all_there_is() -> None:
    cleaned, report = clean_scenario(
        scenario("m1", "（检测到输入内容与角色设定不符，已根据林夏的设定重新生成）辛苦啦，早点睡。")
    )
    assert cleaned.reference == "辛苦啦，早点睡。"
    (flag,) = [flag for flag in report.flags if flag.kind == "meta_text"]
    assert flag.removed and flag.after == "" and flag.rule == "paren_note" and flag.span == (0, 29)
    alone, report = clean_scenario(scenario("m2", "（不符合角色设定，重新生成）"))
    assert alone.reference == "（不符合角色设定，重新生成）"
    assert [flag.removed for flag in report.flags if flag.kind == "meta_text"] == [False]


def test_broken_roleplay_and_templated_references_are_flagged_not_changed() -> None:
    _, report = clean_scenario(scenario("r1", "作为一个AI，我没有真实的情感，但我理解你。"))
    assert kinds(report).count("broken_roleplay") == 2
    _, report = clean_scenario(scenario("r2", "As an AI language model, I can't feel that.", user_input="I'm sad"))
    assert "broken_roleplay" in kinds(report)
    for reference in ("……", "{response}", "【回复内容】", "今天好累"):
        _, report = clean_scenario(scenario("t", reference))
        assert "template_reference" in kinds(report), reference
    _, report = clean_scenario(scenario("ok", "辛苦啦（摸摸头），早点休息好不好？"))
    assert report.flags == []


def test_duplicates_name_the_first_and_nothing_is_dropped() -> None:
    items = [
        scenario("d1", "周六上午九点出发，先去断桥，中午在楼外楼吃饭，下午去灵隐寺。"),
        scenario("d2", "周六上午九点出发，先去断桥，中午在楼外楼吃饭，下午去灵隐寺！"),
        scenario("d3", "周六上午九点出发，先去断桥，中午在楼外楼吃饭，下午去灵隐寺吧。"),
        scenario("d4", "完全不同的一句话，讲的是别的事情和别的安排。"),
    ]
    cleaned, reports, summary = preprocess(items)
    assert [item.id for item in cleaned] == ["d1", "d2", "d3", "d4"]
    duplicates = {report.id: flag for report in reports for flag in report.flags if flag.kind == "duplicate"}
    assert duplicates["d2"].of == "d1" and duplicates["d2"].method == "exact"
    assert duplicates["d3"].of == "d1" and duplicates["d3"].method == "near" and 0.9 <= duplicates["d3"].similarity < 1
    assert set(duplicates) == {"d2", "d3"} and summary.flagged_scenarios["duplicate"] == 2


def test_lexicon_terms_are_flagged_with_category() -> None:
    _, report = clean_scenario(
        scenario(
            "s1",
            "我在呢，别说傻话。",
            user_input="我真的不想活了",
            tags=ScenarioTags(high_risk=True, risk_kind="suicidal_ideation"),
        )
    )
    (flag,) = [flag for flag in report.flags if flag.kind == "sensitive"]
    assert (flag.category, flag.text, flag.field, flag.source) == ("self_harm", "不想活了", "user_input", "lexicon")


def _write(tmp_path: Path, items: list[Scenario]) -> Path:
    source = tmp_path / "in.jsonl"
    write_records(source, items)
    return source


def test_the_command_with_an_llm_classifier(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    def classify(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        assert body["temperature"] == 0.0 and "13812345678" not in text  # scrubbed before it leaves
        if "炸" in text:
            return 'Evidence first. {"sensitive": true, "categories": ["violence"], "reason": "threatens to bomb"}'
        return '{"sensitive": false, "categories": [], "reason": "ordinary chat"}'

    fake_openai.answer = classify
    items = [
        scenario("c1", "好的，我记下了。", user_input="我电话13812345678"),
        scenario("c2", "冷静一点。", user_input="我要炸了那栋楼"),
    ]
    source = _write(tmp_path, items)
    before = source.read_bytes()
    out, report = tmp_path / "out.jsonl", tmp_path / "report.jsonl"
    args = [
        "preprocess",
        str(source),
        "-o",
        str(out),
        "--report",
        str(report),
        "--classifier-model",
        "clf",
        "--base-url",
        fake_openai.base_url,
        "--no-progress",
    ]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    assert "pii" in result.output and "sensitive" in result.output
    lines = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    llm = [flag for line in lines for flag in line["flags"] if flag["source"] == "llm:clf"]
    assert llm == [
        {
            "field": None,
            "span": None,
            "source": "llm:clf",
            "reason": "threatens to bomb",
            "kind": "sensitive",
            "category": "violence",
            "text": None,
        }
    ]
    assert source.read_bytes() == before
    calls = len(fake_openai.chat_requests())
    again = CliRunner().invoke(build_cli(), args)
    assert again.exit_code == 0 and len(fake_openai.chat_requests()) == calls  # cached: no new call
    validate = CliRunner().invoke(build_cli(), ["validate", str(out), str(report)])
    assert validate.exit_code == 0, validate.output
    assert "scenarios: ok" in validate.output and "preprocess_report: ok" in validate.output


def test_bad_input_names_file_line_and_field(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    good = scenario("g1", "好的").model_dump_json()
    source.write_text(
        good + "\n" + '{"id": "x", "subtask": "nope", "reference": "r"}\n{not json\n' + good + "\n", encoding="utf-8"
    )
    args = ["preprocess", str(source), "-o", str(tmp_path / "o.jsonl"), "--report", str(tmp_path / "r.jsonl")]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 1
    assert f"{source}:2: subtask:" in result.output and f"{source}:3: (line): invalid JSON" in result.output
    assert f"{source}:4: id: duplicate id 'g1'" in result.output
    assert not (tmp_path / "o.jsonl").exists()
    same = CliRunner().invoke(
        build_cli(), ["preprocess", str(source), "-o", str(source), "--report", str(tmp_path / "r.jsonl")]
    )
    assert same.exit_code == 2 and "never overwritten" in same.output
    missing = CliRunner().invoke(build_cli(), ["preprocess", str(source), "-o", str(tmp_path / "o.jsonl")])
    assert missing.exit_code == 2 and "--report" in missing.output


def test_history_turns_are_cleaned_too() -> None:
    item = scenario("h1", "好的。", history=[Turn(role="assistant", content="改写后：我在呢。")])
    cleaned, _ = clean_scenario(item)
    assert cleaned.history[0].content == "我在呢。"


def test_the_bundled_demo_keeps_personas_hotlines_and_places(tmp_path: Path) -> None:
    """The curator's first run (README): the 67 demo scenarios keep every persona, hotline and place; only the
    people the users mention are replaced, and the kept hotlines are reported."""
    source = data_dir() / "demo" / "scenarios.jsonl"
    out, report = tmp_path / "out.jsonl", tmp_path / "report.jsonl"
    result = CliRunner().invoke(build_cli(), ["preprocess", str(source), "-o", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert "PHONE (kept) 4" in result.output and "NAME 18" in result.output
    before = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    after = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [item["persona"] for item in after] == [item["persona"] for item in before]
    assert "[PHONE]" not in out.read_text(encoding="utf-8")
    flags = [flag for line in report.read_text(encoding="utf-8").splitlines() for flag in json.loads(line)["flags"]]
    replaced = {flag["before"] for flag in flags if flag["kind"] == "pii" and flag["action"] == "replaced"}
    assert replaced == {"Jordan", "小林", "Alex", "林静", "Priya", "小周", "jordan", "小敏", "阿楠", "小琪", "Hannah"}
    kept = [flag["before"] for flag in flags if flag["kind"] == "pii" and flag["action"] == "kept"]
    assert sorted(kept) == ["1-800-799-7233", "400-161-9995", "400-161-9995", "400-161-9995"]
    for text in ("静安寺", "徐汇", "翠湖", "蓝月谷", "红景天", "安静", "牛腩", "老公", "1-800-799-7233"):
        assert text in out.read_text(encoding="utf-8"), text


def test_a_companions_own_asides_and_notes_are_not_meta_commentary() -> None:
    for reference in (
        "第三天去灵隐寺。（注：灵隐寺周末人多，工作日早点去）",
        "Day 2: museum at 10. Note: it's closed on Mondays, so I moved it to Tuesday.",
        "（我调整了时间，你可以多睡半小时）九点出发。",
        "作为你的朋友，我会这样说：你已经很棒了。",
        "早上八点太赶了（这不符合你的作息），改到下午吧。",
    ):
        cleaned, report = clean_scenario(scenario("a", reference))
        assert cleaned.reference == reference and "meta_text" not in kinds(report), reference
