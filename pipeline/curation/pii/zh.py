"""Chinese person names and street addresses.

A name needs a name's *shape* and evidence. Shapes: a common surname and one or two given-name characters
(王小明, 陈静), a 小/老/阿 nickname (小林, 老王, 阿楠) or a doubled character (桐桐). Candidates come from jieba's
``nr`` tag and from self-introductions ("我叫何雨桐"); jieba's tag alone is weak (it tags 安静, 雪山, 牛腩 ``nr``), so:

- the given-name characters must be usual in given names (``zh_given_name_chars.tsv``: 时, 间, 汇, 腩 are not);
- a word jieba's dictionary knows as an ordinary word (安静, 明白) or a public place (静安, 徐汇) is no name
  unless a cue says so;
- cues: a self-introduction (我叫/我是/名叫/叫我…), a relation before the name (朋友/同事/室友/表姐/导师…) make a
  name certain; 和/跟/约/陪 before it, 说/告诉 after it make a plausible one certain;
- a surname with a title (孙老师, 周阿姨, 李教授): the surname is replaced, the title kept (``[NAME_1]老师``).

Plausible names without enough evidence are flagged for review (kept, not replaced): a curator adds a missed name in
a minute, but a dataset with 雪山 replaced by ``[NAME_3]`` is damaged for good.

Addresses: a street address is a road with a house number (…路478号, 世纪大道100号, 天府大道北段1700号) then the
building, unit and room, or a residential compound with a building number (阳光小区5栋2单元301室). The city and
district before it (北京市朝阳区) are public places and stay; only the precise part is replaced.
"""

from __future__ import annotations

import re

from pipeline.curation.pii.base import (
    Action,
    PiiHit,
    dictionary_tag,
    given_name_rates,
    not_names,
    tokens,
    word_frequency,
    zh_places,
    zh_surnames,
)

NICKNAME_PREFIXES = "小老阿"
_LEADING_PARTICLES = "和跟与同对给被把让找是在向问"
#: Function words that are also (rare) surnames: 和医生 is "and the doctor", not Dr. He.
_NOT_SURNAMES_BEFORE_TITLES = set(_LEADING_PARTICLES + "于也都还就从为及或而但请叫帮带陪像比连")
#: Given-name characters rarer than this (per 100,000 given-name characters) make a word no name.
MIN_GIVEN_RATE = 30.0
#: A word jieba's dictionary has seen this often is an ordinary word (安静 1199, 明白 10875), unless a cue says not.
COMMON_FREQUENCY = 500
#: ... and one it has seen this often under another part of speech than a name (小张 is listed as a noun).
COMMON_NON_NAME_FREQUENCY = 50
#: A surname this common (percent of the population) may stand with a one-character title (王姐, 李哥, 周总).
SHORT_TITLE_SURNAME_SHARE = 0.05
_CJK = r"[\u4e00-\u9fff]"
_SELF_CUE = r"(?:我叫|我的名字[是叫]|名叫|叫做|名字[是叫]|我是|叫我)"
_RELATIONS = (
    r"(?:朋友|好友|闺蜜|哥们|兄弟|同事|同学|室友|舍友|男朋友|女朋友|男友|女友|对象|前任|前男友|前女友|老公|老婆|"
    r"丈夫|妻子|表姐|表妹|表哥|表弟|堂姐|堂妹|堂哥|堂弟|邻居|领导|上司|同桌|发小|学长|学姐|学弟|学妹|师兄|师姐|"
    r"弟弟|妹妹|哥哥|姐姐|儿子|女儿|导师|班主任)"
)
_RELATION_AT = re.compile(rf"{_RELATIONS}[叫是]?")
_STRONG_BEFORE = re.compile(rf"(?:{_SELF_CUE}|{_RELATIONS}[叫是]?)\s*$")
_MEDIUM_BEFORE = re.compile(r"(?:[和跟与同约陪找给问帮等见]|告诉)\s*$")
_MEDIUM_AFTER = re.compile(r"^(?:说|告诉|问我|让我|约我|叫我|找我|给我|打电话|发消息)")
_SELF_CAPTURE = re.compile(rf"{_SELF_CUE}\s*((?:[小阿老])?{_CJK}{{1,3}}?)(?=[，,。.！!？?\s、~～的]|$)")
TITLES = (
    "老师",
    "医生",
    "大夫",
    "先生",
    "女士",
    "小姐",
    "同学",
    "教授",
    "律师",
    "主任",
    "经理",
    "老板",
    "阿姨",
    "叔叔",
)
SHORT_TITLES = ("总", "姐", "哥")
_TITLE = re.compile("|".join(TITLES + SHORT_TITLES))


def surname_of(word: str) -> str:
    """The surname ``word`` starts with (a compound one first), or ""."""
    surnames = zh_surnames()
    if len(word) >= 3 and word[:2] in surnames:
        return word[:2]
    return word[0] if word and word[0] in surnames else ""


def plausible_given(chars: str) -> bool:
    """True when every character is usual in given names."""
    rates = given_name_rates()
    return bool(chars) and all(rates.get(char, 0.0) >= MIN_GIVEN_RATE for char in chars)


def ordinary_word(word: str) -> bool:
    """True when jieba's dictionary knows ``word`` as an everyday word (or it is listed as never a name)."""
    frequency = word_frequency(word)
    tag = dictionary_tag(word) or ""
    return (
        word in not_names()
        or frequency >= COMMON_FREQUENCY
        or (frequency >= COMMON_NON_NAME_FREQUENCY and not tag.startswith("nr"))
    )


def name_shape(word: str) -> tuple[str, str] | None:
    """``(shape, given part)``: ("surname", 小明) for 王小明, ("nickname", 林) for 小林, ("double", 桐) for 桐桐."""
    if not re.fullmatch(rf"{_CJK}{{2,4}}", word):
        return None
    if len(word) == 2 and word[0] in NICKNAME_PREFIXES:
        return "nickname", word[1]
    if len(word) == 2 and word[0] == word[1]:
        return "double", word[0]
    surname = surname_of(word)
    given = word[len(surname) :]
    if surname and 1 <= len(given) <= 2:
        return "surname", given
    return None


def cue_strength(text: str, start: int, end: int) -> str:
    """ "strong" (self-introduction or relation before), "medium" (和/跟… before, 说… after) or ""."""
    before = text[max(0, start - 6) : start]
    if _STRONG_BEFORE.search(before):
        return "strong"
    if _MEDIUM_BEFORE.search(before) or _MEDIUM_AFTER.match(text[end : end + 4]):
        return "medium"
    return ""


def decide_name(word: str, cue: str) -> tuple[Action, str] | None:
    """``(action, why)`` for a candidate name with the given cue, or None when it is no name."""
    shape = name_shape(word)
    if shape is None or word in not_names():
        return None
    kind, given = shape
    surname_nickname = kind == "nickname" and given in zh_surnames()
    if not (surname_nickname or plausible_given(given)):
        return None
    if cue == "strong":
        return "replaced", f"{kind}-shaped name after a self-introduction or relation cue"
    public = ordinary_word(word) or word in zh_places()
    if public:
        return ("review", "a name's shape, but also an everyday word or place; a cue makes it a name") if cue else None
    if cue == "medium" or surname_nickname or (kind == "surname" and word_frequency(word) < COMMON_NON_NAME_FREQUENCY):
        return "replaced", f"{kind}-shaped name" + (" with a cue (和/跟…, 说…)" if cue else "")
    if kind == "double":
        return None  # 兰兰, 豆豆: pets and pet names as often as people
    return "review", f"{kind}-shaped name without a cue"


def _candidates(text: str) -> dict[tuple[int, int], str]:
    """Spans that may hold a name -> what proposed them (jieba ``nr`` tokens, adjusted; self-introductions)."""
    found: dict[tuple[int, int], str] = {}
    for word, flag, start, end in tokens(text):
        if not flag.startswith("nr"):
            continue
        if len(word) == 1 and start > 0 and text[start - 1] in NICKNAME_PREFIXES:
            start -= 1  # jieba cuts 小周 into 小 + 周
        elif len(word) >= 3 and word[0] in _LEADING_PARTICLES:
            start += 1  # and glues 和 to 和小李
        if end - start >= 2:
            found.setdefault((start, end), f"jieba:{flag}")
    for match in _SELF_CAPTURE.finditer(text):
        found[match.start(1), match.end(1)] = "h2h:zh_self_introduction"
    ends = {end for _, _, _, end in tokens(text)}
    for match in _RELATION_AT.finditer(text):
        span = _name_after(text, match.end(), ends)
        if span is not None:
            found.setdefault(span, "h2h:zh_relation")
    return found


def _name_after(text: str, start: int, ends: set[int]) -> tuple[int, int] | None:
    """The name right after a relation word (表妹欣欣, 同事刘洋), ending where jieba ends a word: three characters
    when they make a surname name, else two with a name's shape."""
    three, two = text[start : start + 3], text[start : start + 2]
    shape = name_shape(three)
    if start + 3 in ends and shape is not None and shape[0] == "surname" and decide_name(three, "strong"):
        return start, start + 3
    if start + 2 in ends and name_shape(two) is not None:
        return start, start + 2
    return None


def titled_surname_hits(text: str) -> list[PiiHit]:
    """孙老师, 周阿姨, 李教授: the surname before a title, where jieba starts a word with it (not 这周|老师)."""
    starts = {start for _, _, start, _ in tokens(text)}
    hits = []
    for match in _TITLE.finditer(text):
        title, position = match.group(0), match.start()
        for surname in (text[max(0, position - 2) : position], text[max(0, position - 1) : position]):
            start = position - len(surname)
            share = zh_surnames().get(surname, 0.0)
            if not share or surname in _NOT_SURNAMES_BEFORE_TITLES or start not in starts:
                continue
            if word_frequency(surname + title) >= 20:
                continue
            if title in SHORT_TITLES and share < SHORT_TITLE_SURNAME_SHARE:
                continue
            why = f"a surname before the title {title}"
            hits.append(
                PiiHit(
                    "NAME",
                    start,
                    position,
                    surname,
                    "h2h:zh_titled_surname",
                    0.7,
                    "replaced",
                    why,
                    surname + title,
                    False,
                )
            )
            break
    return hits


def chinese_name_hits(text: str) -> list[PiiHit]:
    """Chinese person names in ``text``, each replaced or flagged for review (see the module docstring)."""
    hits = titled_surname_hits(text)
    for (start, end), source in sorted(_candidates(text).items()):
        word = text[start:end]
        decision = decide_name(word, cue_strength(text, start, end))
        if decision is not None:
            action, why = decision
            hits.append(PiiHit("NAME", start, end, word, source, 0.6, action, why))
    return hits


def given_name_alias(name: str) -> str | None:
    """The given name of a three-character name (梓涵 of 王梓涵) when it can stand alone as the same person."""
    shape = name_shape(name)
    if shape is None or shape[0] != "surname" or len(shape[1]) != 2:
        return None
    given = shape[1]
    return given if plausible_given(given) and not ordinary_word(given) and given not in zh_places() else None


_ROAD_END = ("大街", "大道", "胡同", "路", "街", "巷", "弄")
_COMPOUND_END = ("小区", "公寓", "花园", "大厦", "新村", "家园", "广场", "苑")
_ADMIN_END = ("省", "市", "区", "县", "镇", "乡", "自治区", "街道")
_ROAD_SECTION = re.compile(r"[东南西北中]段|[一二三四五六七八九十]段")
_HOUSE_NUMBER = re.compile(r"\s*(?:[东南西北中]段)?\s*\d+(?:-\d+)?\s*号(?:院|楼)?")
_UNIT = r"(?:[\u4e00-\u9fffA-Za-z]{0,10}?[A-Za-z]?\d+\s*(?:号楼|栋|幢|座|单元|层|楼|室|号|区))"
_ROOM_AFTER = "".join(f"(?<={word})" + "|" for word in ("单元", "大厦", "中心", "广场", "公寓", "大楼", "座", "楼"))[
    :-1
]
_ROOM = rf"(?:(?:{_ROOM_AFTER})\s*[A-Za-z]?\d{{3,4}}(?![\d号室]))"
_UNITS = re.compile(rf"(?:{_UNIT}|{_ROOM})*")


def _road_start(road: list[tuple[str, str, int, int]], index: int) -> int:
    """Where a road's name starts: at its token, or one token earlier for a bare 大道/西路 (世纪|大道)."""
    word, _, start, _ = road[index]
    if len(word) <= 2 and index > 0:
        before, _, before_start, _ = road[index - 1]
        if re.fullmatch(rf"{_CJK}{{1,4}}", before) and not before.endswith(_ADMIN_END):
            return before_start
    return start


def chinese_address_hits(text: str) -> list[PiiHit]:
    """Street-level Chinese addresses: road + house number (+ building/unit/room), or compound + building."""
    found = tokens(text)
    hits = []
    for index, (word, _flag, start, end) in enumerate(found):
        if word.endswith(_ROAD_END) and (len(word) >= 2 or index > 0):
            number = _HOUSE_NUMBER.match(text, end)
            if number is None:
                continue
            close = _UNITS.match(text, number.end()).end()  # type: ignore[union-attr]
            begin = _road_start(list(found), index)
        elif word.endswith(_COMPOUND_END) and (len(word) >= 3 or index > 0):
            close = _UNITS.match(text, end).end()  # type: ignore[union-attr]
            if close == end:
                continue
            begin = found[index - 1][2] if word in _COMPOUND_END else start  # 阳光 + 小区
        else:
            continue
        why = "a street address (the city and district before it are kept)"
        hits.append(PiiHit("ADDRESS", begin, close, text[begin:close], "h2h:zh_address", 0.7, "replaced", why))
    return hits
