"""The companion's own name(s), read from the persona, with the nickname forms a user calls it by.

Personas state the name in a few ways, all of them in the bundled demo data and the public release's shapes:
the first clause before an age ("小雨，26岁，…", "Mia, 27, …", "竹内遥斗，25岁"), a cue ("你是林夏", "You are
Nora", "I am Kai", "Your name is Echo", "名叫苏苏的…", "角色：顾言", "Name: Ruby"). Preprocess keeps these names
everywhere in the scenario, and their nickname forms: 林夏 → 夏夏, 小夏, 阿夏; 竹内遥斗 → 遥斗, 小遥; 兰兰 → 小兰.
"""

from __future__ import annotations

import re

from pipeline.curation.pii.base import en_first_names, not_names, zh_surnames

_ZH_NAME = r"[\u4e00-\u9fff·]{2,4}?"
_EN_NAME = r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?"
_NOT_A_NAME_START = ("一个", "一位", "一名", "用户", "我的", "你的", "这个", "那个")
CUES = (
    re.compile(rf"(?:你是|你叫|名字[是叫]|名叫|叫做|姓名[:：]\s*|角色[:：]\s*)({_ZH_NAME})(?=[，,。.\s（(、:：的]|$)"),
    re.compile(r"(?:你是|你叫|名字[是叫]|名叫|姓名[:：]|角色[:：])\s*([A-Z][A-Za-z]+)(?=[，,。.\s（(、:：的]|$)"),
    re.compile(
        rf"(?:\bYou are|\bYou're|\bYour name is|\bI am|\bI'm|\bMy name is|\b[Nn]ame:)\s+({_EN_NAME})(?=[,.;:\s]|$)"
    ),
)
#: "小雨，26岁，…", "Mia, 27, …", "Theo (34), …": a name-sized first clause followed by an age.
FIRST_CLAUSE = re.compile(
    rf"\s*([\u4e00-\u9fff·]{{2,4}}|{_EN_NAME})\s*[，,（(]\s*\d{{1,3}}\s*(?:岁|years? old|y/o|[，,)）]|$)"
)


def nickname_forms(name: str) -> list[str]:
    """The forms a user calls a Chinese companion by: 林夏 → 夏夏 小夏 阿夏; 兰兰 → 小兰 阿兰; 小雨 → 阿雨 雨雨."""
    if not re.fullmatch(r"[\u4e00-\u9fff]{2,4}", name):
        return [name.split()[0]] if " " in name else []
    if len(name) == 2 and (name[0] in "小阿" or name[0] == name[1]):
        base = name[1]
        forms = [f"小{base}", f"阿{base}", base * 2]
    else:
        surnames = zh_surnames()
        surname = name[:2] if len(name) == 4 or (len(name) == 3 and name[:2] in surnames) else name[0]
        given = name[len(surname) :]
        forms = [given] if len(given) >= 2 else []
        forms += [f"小{given[0]}", f"小{given[-1]}", f"阿{given[-1]}", given[-1] * 2]
    return [form for form in dict.fromkeys(forms) if form != name]


def companion_names(persona: str) -> list[str]:
    """The companion's own name(s) as the persona states them, then their nickname forms."""
    names: list[str] = []
    first = FIRST_CLAUSE.match(persona)
    if first is not None:
        names.append(first.group(1))
    for cue in CUES:
        names.extend(match.group(1) for match in cue.finditer(persona))
    names = [
        name
        for name in dict.fromkeys(names)
        if name not in not_names() and not name.startswith(_NOT_A_NAME_START) and _name_like(name)
    ]
    forms = [form for name in names for form in nickname_forms(name)]
    return list(dict.fromkeys(names + forms))


def _name_like(name: str) -> bool:
    """A Latin name must be capitalised words, the first a known given name or not an everyday pronoun."""
    if name[:1].isascii():
        first = name.split()[0]
        return first in en_first_names() or first not in {"A", "An", "The", "Your", "My", "Our", "This"}
    return True
