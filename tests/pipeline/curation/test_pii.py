"""Personal identifiers: each kind in Chinese and English, consistent numbering, the companion's name kept,
ordinary numbers untouched, invalid ID cards and non-Luhn numbers not taken for identifiers."""

from __future__ import annotations

import pytest

from pipeline.curation.pii import companion_names, detect
from pipeline.curation.pii_recognizers import id_card_birth_date_ok, id_card_checksum_ok, luhn_ok
from pipeline.curation.preprocess import clean_scenario
from pipeline.records import Scenario, Turn


def found(text: str, keep: tuple[str, ...] = ()) -> set[tuple[str, str]]:
    return {(hit.entity, hit.text) for hit in detect(text, keep=keep)}


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        ("我的手机号是13812345678，有事打给我。", "PHONE", "13812345678"),
        ("公司座机010-62345678，工作日能接。", "PHONE", "010-62345678"),
        ("My UK number is +44 20 7946 0958.", "PHONE", "+44 20 7946 0958"),
        ("我的邮箱是zhang.wei88@qq.com谢谢", "EMAIL", "zhang.wei88@qq.com"),
        ("Mail me: emma_w@example.org anytime.", "EMAIL", "emma_w@example.org"),
        ("身份证号110105198805123411，帮我填表", "ID_CARD", "110105198805123411"),
        ("工资卡6222021234567890128，别告诉别人", "BANK_CARD", "6222021234567890128"),
        ("My Visa is 4532015112830366, expires soon.", "BANK_CARD", "4532015112830366"),
        ("我同事李娜昨天又加班到很晚。", "NAME", "李娜"),
        ("My name is Emma Watson and I feel lost.", "NAME", "Emma Watson"),
        ("寄到北京市朝阳区建国路88号", "ADDRESS", "北京市朝阳区建国路88号"),
        ("I live at 221 Baker Street, Apt 4B now.", "ADDRESS", "221 Baker Street, Apt 4B"),
        ("看这个https://weibo.com/u/1234567好玩", "URL", "https://weibo.com/u/1234567"),
        ("路由器地址是192.168.1.10，连不上", "IP", "192.168.1.10"),
    ],
)
def test_each_kind_is_found(text: str, entity: str, value: str) -> None:
    assert (entity, value) in found(text)


@pytest.mark.parametrize(
    "text",
    [
        "明天15:00见，2025-05-10出发，距离3.5公里，价格299元，共1203人。",
        "See you at 10:30 on 2024-03-05; it costs $1,299.99 and is 12 km away.",
        "今天走了12000步，订单号20250510，房间1203。",
        "周六去西湖走走，再去断桥和楼外楼。",
    ],
)
def test_ordinary_numbers_and_places_are_untouched(text: str) -> None:
    assert found(text) == set()


def test_an_invalid_id_card_checksum_and_non_luhn_numbers_are_not_identifiers() -> None:
    assert id_card_checksum_ok("110105198805123411") and not id_card_checksum_ok("110105198805123410")
    assert not id_card_birth_date_ok("110105198813323411")
    assert luhn_ok("6222021234567890128") and not luhn_ok("6222021234567890127")
    assert found("这个号码110105198805123410是我瞎编的") == set()
    assert found("编号1234567890123456不是卡号, ticket 6222021234567890127") == set()


def test_names_are_numbered_consistently_and_the_companion_keeps_hers() -> None:
    scenario = Scenario(
        id="s1",
        subtask="dialogue_base",
        persona="你是小暖，一个温柔体贴的陪伴者。",
        history=[
            Turn(role="user", content="小暖，我叫王小明，我同事李娜说张伟要走了"),
            Turn(role="assistant", content="王小明，别难过，李娜怎么说的？"),
        ],
        user_input="李娜说张伟下个月去北京，电话13812345678",
        reference="小暖在呢。王小明，张伟走了你们还能联系。",
    )
    assert companion_names(scenario.persona) == ["小暖"]
    cleaned, report = clean_scenario(scenario)
    assert cleaned.history[0].content == "小暖，我叫[NAME_1]，我同事[NAME_2]说[NAME_3]要走了"
    assert cleaned.history[1].content == "[NAME_1]，别难过，[NAME_2]怎么说的？"
    assert cleaned.user_input == "[NAME_2]说[NAME_3]下个月去北京，电话[PHONE]"
    assert cleaned.reference == "小暖在呢。[NAME_1]，[NAME_3]走了你们还能联系。"
    assert cleaned.persona == scenario.persona
    pii = [flag for flag in report.flags if flag.kind == "pii"]
    first = pii[0]
    assert first.field == "history.0.content" and first.before == "王小明" and first.after == "[NAME_1]"
    assert scenario.history[0].content[first.span[0] : first.span[1]] == "王小明"  # spans index the original text
    assert {edit.field for edit in report.edits} == {
        "history.0.content",
        "history.1.content",
        "user_input",
        "reference",
    }


def test_an_english_given_name_shares_the_full_names_number() -> None:
    scenario = Scenario(
        id="s2",
        subtask="dialogue_base",
        persona="You are Lily, a caring friend.",
        user_input="Lily, my friend Jake Miller moved away. Mail: jake.miller@example.com",
        reference="Oh no. Did Jake say why?",
    )
    cleaned, _ = clean_scenario(scenario)
    assert cleaned.user_input == "Lily, my friend [NAME_1] moved away. Mail: [EMAIL]"
    assert cleaned.reference == "Oh no. Did [NAME_1] say why?"


def test_keep_names_protects_a_name_the_persona_does_not_state() -> None:
    scenario = Scenario(id="s3", subtask="dialogue_base", user_input="我叫林晓", reference="林晓你好，我是周杰")
    cleaned, _ = clean_scenario(scenario, keep_names=["周杰"])
    assert cleaned.reference == "[NAME_1]你好，我是周杰"
