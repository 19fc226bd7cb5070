"""Personal identifiers: each kind in Chinese and English, consistent numbering, the companion's name kept,
ordinary numbers untouched, invalid ID cards and non-Luhn numbers not taken for identifiers; words jieba tags as
names, public places and public hotlines left alone; plausible names without evidence flagged for review."""

from __future__ import annotations

import pytest

from pipeline.curation.pii import detect, detect_all
from pipeline.curation.pii.companion import companion_names
from pipeline.curation.pii.recognizers import id_card_birth_date_ok, id_card_checksum_ok, luhn_ok
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
        ("寄到北京市朝阳区建国路88号", "ADDRESS", "建国路88号"),
        ("新家地址：上海市浦东新区世纪大道100号", "ADDRESS", "世纪大道100号"),
        ("快递放在幸福花园12号楼3单元", "ADDRESS", "幸福花园12号楼3单元"),
        ("I had lunch with Sarah today.", "NAME", "Sarah"),
        ("Chloe and I are not talking anymore.", "NAME", "Chloe"),
        ("hey im jordan. 19.", "NAME", "jordan"),
        ("我是小周，程序员，腰不太好", "NAME", "小周"),
        ("昨天张伟又放我鸽子了", "NAME", "张伟"),
        ("我表姐赵雅琪下个月结婚", "NAME", "赵雅琪"),
        ("班主任孙老师让我叫家长", "NAME", "孙"),
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
    assert companion_names(scenario.persona) == ["小暖", "阿暖", "暖暖"]  # the name, then its nickname forms
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


@pytest.mark.parametrize(
    "text",
    [
        "半小时！你一定被那种安静的光完全包住了吧～",  # 安静: quiet
        "哇啊啊啊全班第一！！太厉害了吧！",
        "上次的番茄牛腩听起来就很好吃。",  # beef brisket
        "下午三点以后还在喝咖啡，你之前说跑步那段时间睡得特别好",
        "带个面包和牛奶在包里，抽完血马上吃。",
        "我想安排一下下周的时间，但我老公不让我出门见朋友",  # 老公: husband
        "第一天到昆明，晚上逛翠湖吃米线；雪山如果天气不好，改去蓝月谷。",
        "再提醒你们提前备好氧气和红景天。",  # a herb
        "住在静安区，公司在静安寺附近；下午四点项目评审（徐汇）。",  # districts and a temple: public places
        "今天下小雨，明白了，谢谢你，晚安。",
        "Take the 10:05 train from London Victoria, then lunch by Brighton pier.",
        "May I vent? Will you listen? We're flying to Jordan in March.",
        "那个 Monet 的睡莲真的 so healing。",
    ],
)
def test_words_places_and_public_figures_are_not_names(text: str) -> None:
    assert [hit for hit in detect_all(text) if hit.action == "replaced"] == []


@pytest.mark.parametrize(
    ("text", "number", "what"),
    [
        ("请拨打心理援助热线（如希望24热线 400-161-9995）", "400-161-9995", "希望24热线"),
        ("A domestic violence hotline (in the US, 1-800-799-7233) can help.", "1-800-799-7233", "Domestic Violence"),
        ("北京心理危机研究与干预中心的热线010-82951332", "010-82951332", "北京心理危机"),
        ("The helpline is free on 0808 2000 247, day and night.", "0808 2000 247", "Domestic Abuse"),
        ("客服电话400-888-1234，工作日都在", "400-888-1234", "400/800"),
    ],
)
def test_public_hotlines_are_kept_and_say_why(text: str, number: str, what: str) -> None:
    (hit,) = [hit for hit in detect_all(text) if hit.entity == "PHONE"]
    assert (hit.text, hit.action) == (number, "kept") and what in hit.why
    assert detect(text) == []


def test_public_numbers_stay_in_the_cleaned_reference_and_are_reported_as_kept() -> None:
    reference = "如果有危险，请马上拨打120或110，也可以打心理援助热线（如希望24热线 400-161-9995）。"
    cleaned, report = clean_scenario(
        Scenario(id="hot", subtask="dialogue_emotion", persona="小雨，26岁，温柔细心。", reference=reference)
    )
    assert cleaned.reference == reference and report.edits == []
    (flag,) = [flag for flag in report.flags if flag.kind == "pii"]
    assert (flag.action, flag.before, flag.after) == ("kept", "400-161-9995", "400-161-9995")
    assert "public number" in flag.reason


@pytest.mark.parametrize(
    ("persona", "name"),
    [
        ("小雨，26岁，温柔细心的心理学研究生，说话轻声细语。", "小雨"),
        ("兰兰，24岁，活泼可爱的插画师，喜欢猫和旅行。", "兰兰"),
        ("阿杰，30岁，爽朗幽默的健身教练，是用户多年的老朋友。", "阿杰"),
        ("Mia, 27, a warm and slightly goofy illustrator.", "Mia"),
        ("Theo, 34, a calm former park ranger turned librarian.", "Theo"),
        ("Sam, 22, an upbeat university student.", "Sam"),
        ("你是一个名叫沐沐的温柔陪伴者。", "沐沐"),
        ("角色：顾言，27岁，冷静克制的医生朋友。", "顾言"),
        ("I am Kai, your laid-back gaming buddy.", "Kai"),
        ("Your name is Echo. You are a calm presence.", "Echo"),
        ("竹内遥斗，25岁，在东京工作的温柔摄影师。", "竹内遥斗"),
    ],
)
def test_the_companion_name_is_read_from_every_persona_shape(persona: str, name: str) -> None:
    assert companion_names(persona)[0] == name


def test_the_companion_name_and_its_nickname_forms_are_kept_everywhere() -> None:
    assert {"夏夏", "小夏", "阿夏"} <= set(companion_names("你是林夏，一个温柔的大学学姐。"))
    assert "小遥" in companion_names("竹内遥斗，25岁，摄影师。")
    scenario = Scenario(
        id="c1",
        subtask="dialogue_base",
        persona="兰兰，24岁，活泼可爱的插画师，喜欢猫和旅行。",
        history=[Turn(role="user", content="兰兰，小兰，我朋友小琪想去看雪山"), Turn(role="assistant", content="好呀")],
        user_input="和小林一起去",
        reference="兰兰觉得小琪和小林一定会喜欢玉龙雪山～",
    )
    cleaned, report = clean_scenario(scenario)
    assert cleaned.persona == scenario.persona
    assert cleaned.history[0].content == "兰兰，小兰，我朋友[NAME_1]想去看雪山"
    assert cleaned.user_input == "和[NAME_2]一起去"
    assert cleaned.reference == "兰兰觉得[NAME_1]和[NAME_2]一定会喜欢玉龙雪山～"


def test_a_surname_with_a_title_keeps_the_title_and_is_not_spread_alone() -> None:
    scenario = Scenario(
        id="t1",
        subtask="dialogue_base",
        persona="你是小暖，一个温柔体贴的陪伴者。",
        user_input="孙老师让我叫家长，孙医生说我妈不能激动",
        reference="孙老师是想帮你，孙医生的话要听。孙悟空也帮不了这个忙哈哈",
    )
    cleaned, _ = clean_scenario(scenario)
    assert cleaned.user_input == "[NAME_1]老师让我叫家长，[NAME_2]医生说我妈不能激动"
    assert cleaned.reference.startswith("[NAME_1]老师是想帮你，[NAME_2]医生的话要听。")


def test_plausible_names_without_evidence_are_flagged_for_review_not_replaced() -> None:
    scenario = Scenario(
        id="r1",
        subtask="dialogue_base",
        persona="You are Nora, a cheerful barista.",
        user_input="I'm Hiro. 最近一直在听周杰伦的新歌, and Harry Potter again.",
        reference="Nice to meet you! Harry Potter and a new album, good week.",
    )
    cleaned, report = clean_scenario(scenario)
    assert cleaned == scenario and report.edits == []
    review = {flag.before for flag in report.flags if flag.kind == "pii" and flag.action == "review"}
    assert review == {"Hiro", "周杰伦", "Harry Potter"}
    assert all(flag.after == flag.before for flag in report.flags if flag.kind == "pii")


def test_pets_are_not_people() -> None:
    text = "My cat Luna will stay home; Luna hates the car. 我还养了一只叫年糕的柯基，年糕最乖了。"
    scenario = Scenario(id="p1", subtask="dialogue_base", persona="Mia, 27, an illustrator.", reference=text)
    cleaned, _ = clean_scenario(scenario)
    assert cleaned.reference == text
