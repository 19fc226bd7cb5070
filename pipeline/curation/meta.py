"""Irrelevant simulation data: the generating model's meta-commentary, broken role-play, templated references.

The shapes come from the public H2HTalk release, whose references still carry the generator's asides, e.g.
a parenthesised note that the input "did not fit the character setting" and was regenerated, an "as <name>, I would
put it like this:" preface, a "(note: per the rules …)" remark, a "rewritten:" label, or a note that "the activities
were adjusted to the persona". Each rule is a named regular expression, so every flag says which rule fired.

A companion's own asides and notes look alike but talk to the user ("（注：灵隐寺周末人多，早点去）", "(I adjusted the
plan so you can sleep in)", "作为你的朋友，我会这样说："); a note or aside is meta-commentary only when it speaks of
how the reply was made (persona, rules, regeneration, word limits, "the user"), so those stay.

Meta-commentary is removed from the cleaned text (the flag keeps it as ``before``); broken role-play (the reply
speaks as an AI, not the persona) and templated references are flagged only: a curator decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.curation.records import RoleplayFlag, TemplateFlag

#: Words about how a reply was generated (rules, persona, regeneration, word limits), never about the user's world.
#: A note or aside is meta-commentary only when it holds one: "（注：灵隐寺周末人多）" and "(I adjusted the plan)"
#: are the companion talking to the user, and stay.
_GENERATION_WORDS = (
    r"角色设定|人物设定|人设|的设定|设定不符|不符合(?:角色|人物)?设定|重新生成|根据规则|根据要求|按照要求|输出格式|"
    r"(?:控制|限制)在?\d*字|字数(?:限制|要求|控制)|\d+字以内|以上(?:回复|内容)|[该本此]回复|以下回复|作为AI|"
    r"用户|输入内容|"
    r"[Pp]ersona|[Cc]haracter setting|[Oo]ut of character|\bOOC\b|[Ii]n character|[Bb]roke character|[Rr]egenerat|"
    r"[Rr]ewritten|\b[Tt]he user(?:'s)?\b(?! (?:manual|guide|interface|name))|\b[Uu]ser's|"
    r"[Pp]er the (?:instructions|rules)|"
    r"[Aa]s per (?:the )?(?:rules|instructions|requirements|persona|prompt)|[Ww]ord (?:limit|count)|under \d+ words|"
    r"[Tt]his (?:reply|response)\b"
)
_GENERATION = re.compile(_GENERATION_WORDS)
#: (rule name, pattern). Each match is meta-commentary to remove (``note_line`` only when it holds a generation word).
META_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("paren_note", re.compile(rf"[（(][^（）()]{{0,200}}?(?:{_GENERATION_WORDS})[^（）()]{{0,200}}?[）)]")),
    (
        "rewrite_label",
        re.compile(
            r"(?m)^\s*(?:改写后|修改后|优化后|重写后|润色后"
            r"|以下是(?:改写|修改|优化|重写|润色)后?的?(?:内容|回复|版本)?"
            r"|Rewritten(?: version)?|Revised version"
            r"|Here is the (?:rewritten|revised) (?:version|reply|response))"
            r"\s*[:：]\s*"
        ),
    ),
    ("note_line", re.compile(r"(?m)^\s*(?:注|备注|说明|Note|NB)\s*[:：].*$\n?")),
    (
        "as_persona_preface",
        re.compile(
            r"作为(?![你您])[^，。,\n]{1,16}[，,]\s*我(?:会|将)?这样(?:表达|回答|回复|说)\s*[:：]\s*"
            r"|As [A-Z][\w ]{0,30}, I would (?:say|respond|reply|put it)(?: like this)?\s*:\s*"
        ),
    ),
)
#: Rules whose matches count only when they hold a generation word.
NEEDS_GENERATION_WORD = frozenset({"note_line"})
ROLEPLAY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "zh_ai_self_reference",
        re.compile(
            r"作为(?:一个|一名)?(?:AI|人工智能|语言模型|AI助手|智能助手|虚拟助手|聊天机器人)"
            r"|我(?:只)?是(?:一个|一名)?(?:AI|人工智能|语言模型|AI助手|智能助手|虚拟助手|聊天机器人)"
            r"|我(?:只是|仅仅是)(?:一个)?(?:AI|程序|机器人)|我没有(?:真实的)?(?:情感|感情|身体)"
        ),
    ),
    (
        "en_ai_self_reference",
        re.compile(
            r"\b[Aa]s an AI\b|\b[Aa]s a (?:large )?language model\b"
            r"|\bI(?:'m| am) (?:just )?(?:an|a) (?:AI|artificial intelligence|(?:large )?language model"
            r"|virtual assistant|chatbot|AI assistant)\b|\bI (?:don't|do not) have (?:feelings|emotions|a body)\b"
            r"|\bChatGPT\b|\bOpenAI\b"
        ),
    ),
)
TEMPLATE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "placeholder",
        re.compile(
            r"\{\{[^{}]*\}\}|\{[a-z_]{2,}\}|\$\{\w+\}|<(?:response|reply|answer|[A-Z_]{3,})>|\[(?:回复|回答|内容|response)\]"
            r"|【[^【】]{0,10}(?:回复|内容|填写)[^【】]{0,10}】|X{3,}|\bTODO\b|[Ll]orem ipsum|在此(?:输入|填写)"
        ),
    ),
)
_MEANINGFUL = re.compile(r"[\w\u4e00-\u9fff]")


@dataclass(frozen=True)
class MetaSpan:
    """One piece of meta-commentary: its rule and ``[start, end)`` in the field's text."""

    rule: str
    start: int
    end: int


def meta_spans(text: str) -> list[MetaSpan]:
    """Every meta-commentary span in ``text``, non-overlapping, in order (the earliest rule wins a clash)."""
    found: list[MetaSpan] = []
    for rule, pattern in META_RULES:
        for match in pattern.finditer(text):
            if rule in NEEDS_GENERATION_WORD and not _GENERATION.search(match.group(0)):
                continue
            if match.end() > match.start() and all(match.end() <= s.start or match.start() >= s.end for s in found):
                found.append(MetaSpan(rule, match.start(), match.end()))
    return sorted(found, key=lambda span: span.start)


def roleplay_flags(field: str, text: str) -> list[RoleplayFlag]:
    """Flags for a reply that speaks as an AI or assistant instead of the persona."""
    return [
        RoleplayFlag(
            field=field,
            span=(match.start(), match.end()),
            source=f"rule:{rule}",
            reason="the reply speaks as an AI/assistant, not as the persona",
            rule=rule,
            text=match.group(0),
        )
        for rule, pattern in ROLEPLAY_RULES
        for match in pattern.finditer(text)
    ]


def template_flags(reference: str, user_input: str) -> list[TemplateFlag]:
    """Flags for a reference that is empty in substance, holds a template placeholder, or copies the input."""
    flags = []
    if len(_MEANINGFUL.findall(reference)) < 2:
        reason = "the reference has no content (fewer than two letters or characters)"
        flags.append(
            TemplateFlag(
                field="reference", source="rule:empty_substance", reason=reason, rule="empty_substance", text=reference
            )
        )
    for rule, pattern in TEMPLATE_RULES:
        for match in pattern.finditer(reference):
            flags.append(
                TemplateFlag(
                    field="reference",
                    span=(match.start(), match.end()),
                    source=f"rule:{rule}",
                    reason="the reference holds a template placeholder",
                    rule=rule,
                    text=match.group(0),
                )
            )
    if user_input.strip() and _normalised(reference) == _normalised(user_input):
        reason = "the reference repeats the user's input"
        flags.append(
            TemplateFlag(
                field="reference", source="rule:copies_input", reason=reason, rule="copies_input", text=reference
            )
        )
    return flags


def _normalised(text: str) -> str:
    return "".join(_MEANINGFUL.findall(text)).lower()
