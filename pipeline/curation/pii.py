"""Personal identifiers in Chinese and English text, replaced by typed placeholders consistently per scenario.

What is found, and by what:

- phone numbers, e-mail, URLs, IPs, bank cards (Luhn), mainland ID cards (checksum), English street addresses:
  Presidio pattern recognizers (:mod:`pipeline.curation.pii_recognizers`), run on the *latin view* of the text
  (every CJK character and full-width sign turned into a space, so offsets stay the same and a Chinese character
  next to an address is never read as part of it);
- Chinese person names: jieba's part-of-speech tag ``nr`` (its bundled dictionary), less a stop list of words
  it mistags, plus "我叫…"-style cues; English person names: cues ("my name is", "my friend", "Mr.", ...);
- Chinese addresses: a road token from jieba followed by a house number (…路478号, then building/unit/room),
  or a residential compound with a building number, extended left over place names (``ns``) such as 浙江省杭州市.
  A bare city or sight (西湖, Paris) is not a personal identifier and stays.

A name found once is replaced everywhere in the scenario, and numbered in reading order (``[NAME_1]``,
``[NAME_2]``...), so a conversation stays coherent. The companion's own name (from the persona, or given) is kept.
Ordinary numbers (times, dates, prices, distances) match none of the recognizers and are never touched.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pipeline.curation.pii_recognizers import ENTITY_OF, ENTITY_PRIORITY, LANGUAGE, analyzer
from pipeline.curation.records import PiiFlag
from pipeline.paths import data_dir

logger = logging.getLogger(__name__)

_WIDE = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
_CJK_NAME = re.compile(r"[\u4e00-\u9fff·]{2,4}")
_NAME_PREFIXES = "小老阿"
_LEADING_PARTICLES = "和跟与同对给被把让找是在向问"
NOT_NAMES_FILE = "not_names.txt"
_ZH_NAME_CUE = re.compile(
    r"(?:我叫|我的名字[是叫]|名叫|叫做|名字是)\s*([\u4e00-\u9fff]{2,3})(?=[，,。.！!？?\s、的]|$)"
)
_EN_NAME_WORD = r"[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?"
_EN_RELATIONS = (
    "friend|best friend|boyfriend|girlfriend|husband|wife|partner|boss|manager|colleague|coworker|co-worker|roommate|"
    "neighbou?r|sister|brother|mom|mum|dad|mother|father|son|daughter|cousin|aunt|uncle|teacher|therapist|ex|classmate"
)
_EN_NAME_CUE = re.compile(
    r"(?:\b[Mm]y name is|\b[Mm]y name's|\b[Cc]all me|\bI'm called|\bnamed|\b(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?"
    rf"|\b[Mm]y (?:{_EN_RELATIONS}),?)\s+({_EN_NAME_WORD}(?:\s+{_EN_NAME_WORD})?)"
)
_ROAD_END = ("大街", "大道", "胡同", "路", "街", "巷", "弄")
_COMPOUND_END = ("小区", "公寓", "花园", "大厦", "新村", "家园", "广场", "苑")
_ADMIN_END = ("省", "市", "区", "县", "镇", "乡", "村", "自治区")
_HOUSE_NUMBER = re.compile(r"\s*\d+(?:-\d+)?\s*号(?:院|楼)?")
_UNITS = re.compile(r"(?:[\u4e00-\u9fffA-Za-z]{0,10}?\d+\s*(?:号楼|栋|幢|座|单元|层|楼|室|号))*")
_COMPANION_CUES = (
    re.compile(
        r"(?:你是|你叫|名字[是叫]|名叫|姓名[:：]\s*|角色[:：]\s*)([\u4e00-\u9fff·]{2,6})(?=[，,。.\s（(、:：的]|$)"
    ),
    re.compile(r"(?:You are|You're|Your name is|[Nn]ame:)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)(?=[,.;:\s]|$)"),
)


@functools.lru_cache(maxsize=1)
def not_names() -> frozenset[str]:
    """Words never taken for names (``pipeline/resources/curation/not_names.txt``): jieba mistags 谢谢 as ``nr``,
    and "my friend Monday" is no name either."""
    text = (data_dir() / "curation" / NOT_NAMES_FILE).read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


@dataclass(frozen=True)
class PiiHit:
    """One identifier found in one text: our entity type, ``[start, end)`` offsets and what found it."""

    entity: str
    start: int
    end: int
    text: str
    source: str
    score: float


def latin_view(text: str) -> str:
    """``text`` with every CJK character and full-width sign replaced by a space (same length, same offsets)."""
    return _WIDE.sub(" ", text)


def pattern_hits(text: str) -> list[PiiHit]:
    """Identifiers found by the Presidio recognizers (phones, e-mail, URL, IP, cards, ID cards, streets)."""
    hits = []
    for result in analyzer().analyze(latin_view(text), language=LANGUAGE):
        entity = ENTITY_OF.get(result.entity_type)
        if entity is None:
            continue
        name = (result.recognition_metadata or {}).get("recognizer_name", result.entity_type)
        hits.append(
            PiiHit(entity, result.start, result.end, text[result.start : result.end], f"presidio:{name}", result.score)
        )
    return hits


@functools.lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[tuple[str, str, int, int], ...]:
    """jieba's ``(word, part of speech, start, end)`` for ``text`` (cached: fields repeat across passes)."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    tokens, position = [], 0
    for pair in jieba.posseg.cut(text):
        word, flag = pair.word, pair.flag
        tokens.append((word, flag, position, position + len(word)))
        position += len(word)
    return tuple(tokens)


def chinese_name_hits(text: str) -> list[PiiHit]:
    """Chinese person names: jieba ``nr`` tokens (with a 小/老/阿 prefix joined) and "我叫X" cues."""
    hits = []
    for word, flag, start, end in _tokens(text):
        if not flag.startswith("nr"):
            continue
        if len(word) == 1 and start > 0 and text[start - 1] in _NAME_PREFIXES:
            start, word = start - 1, text[start - 1 : end]
        if len(word) >= 3 and word[0] in _LEADING_PARTICLES:  # jieba glues 和/跟... to a name: "和小李"
            start, word = start + 1, word[1:]
        if _CJK_NAME.fullmatch(word) and word not in not_names():
            hits.append(PiiHit("NAME", start, end, word, f"jieba:{flag}", 0.6))
    for match in _ZH_NAME_CUE.finditer(text):
        if match.group(1) not in not_names():
            hits.append(PiiHit("NAME", match.start(1), match.end(1), match.group(1), "h2h:zh_name_cue", 0.7))
    return hits


def english_name_hits(text: str) -> list[PiiHit]:
    """English person names after a cue: "my name is Emma", "my friend Jake Miller", "Mr. Smith"."""
    hits = []
    for match in _EN_NAME_CUE.finditer(text):
        words = match.group(1).split()
        if words[0] in not_names():
            continue
        if len(words) > 1 and words[1] in not_names():
            words = words[:1]
        name = " ".join(words)
        start = match.start(1)
        hits.append(PiiHit("NAME", start, start + len(name), name, "h2h:en_name_cue", 0.7))
    return hits


def chinese_address_hits(text: str) -> list[PiiHit]:
    """Street-level Chinese addresses: road + house number (+ building/unit/room), or a compound + building,
    extended left over the place names before them."""
    tokens = _tokens(text)
    hits = []
    for index, (word, _flag, _start, end) in enumerate(tokens):
        if len(word) >= 2 and word.endswith(_ROAD_END):
            number = _HOUSE_NUMBER.match(text, end)
            if number is None:
                continue
            stop = _UNITS.match(text, number.end())
            close = stop.end() if stop else number.end()
        elif word.endswith(_COMPOUND_END) and (len(word) >= 3 or index > 0):
            units = _UNITS.match(text, end)
            if units is None or units.end() == end:
                continue
            close = units.end()
        else:
            continue
        # a bare 小区/花园 token takes the token before it as the compound's name (阳光 + 小区)
        first = index - 1 if word in _COMPOUND_END else index
        while first > 0 and (tokens[first - 1][1] == "ns" or tokens[first - 1][0].endswith(_ADMIN_END)):
            first -= 1
        begin = tokens[first][2]
        hits.append(PiiHit("ADDRESS", begin, close, text[begin:close], "h2h:zh_address", 0.7))
    return hits


def companion_names(persona: str) -> list[str]:
    """The companion's own name(s) as the persona states them ("你是小暖，…", "You are Lily, …")."""
    names: list[str] = []
    for cue in _COMPANION_CUES:
        names.extend(match.group(1) for match in cue.finditer(persona))
    return list(dict.fromkeys(name for name in names if name not in not_names()))


def occurrences(text: str, needle: str) -> Iterable[tuple[int, int]]:
    """Every ``[start, end)`` of ``needle`` in ``text``; Latin needles only on word boundaries."""
    boundary = needle[:1].isascii()
    pattern = rf"(?<!\w){re.escape(needle)}(?!\w)" if boundary else re.escape(needle)
    return ((match.start(), match.end()) for match in re.finditer(pattern, text))


def resolve_overlaps(hits: Iterable[PiiHit]) -> list[PiiHit]:
    """Keep non-overlapping hits: longer first, then the more specific entity, then the higher score."""
    ranked = sorted(hits, key=lambda h: (-(h.end - h.start), -ENTITY_PRIORITY.get(h.entity, 0), -h.score, h.start))
    kept: list[PiiHit] = []
    for hit in ranked:
        if all(hit.end <= other.start or hit.start >= other.end for other in kept):
            kept.append(hit)
    return sorted(kept, key=lambda hit: hit.start)


def detect(text: str, *, keep: Iterable[str] = ()) -> list[PiiHit]:
    """Every identifier in ``text`` (overlaps resolved), except inside an occurrence of a name in ``keep``."""
    protected = [span for name in keep for span in occurrences(text, name)]
    found = pattern_hits(text) + chinese_name_hits(text) + english_name_hits(text) + chinese_address_hits(text)
    allowed = [hit for hit in found if all(hit.end <= start or hit.start >= end for start, end in protected)]
    return resolve_overlaps(allowed)


class Placeholders:
    """The placeholder of each identifier within one scenario: ``[NAME_n]`` numbered by first appearance.

    ``aliases`` map a short form to its full name ("Jake" to "Jake Miller"), so both get one number.
    """

    def __init__(self, aliases: dict[str, str] | None = None) -> None:
        self.names: dict[str, int] = {}
        self.aliases = aliases or {}

    def for_hit(self, hit: PiiHit) -> str:
        if hit.entity != "NAME":
            return f"[{hit.entity}]"
        name = self.aliases.get(hit.text, hit.text)
        number = self.names.setdefault(name, len(self.names) + 1)
        return f"[NAME_{number}]"


def name_aliases(names: Iterable[str]) -> dict[str, str]:
    """The given name of each multi-word (English) name, pointing at the full name: "Jake" -> "Jake Miller"."""
    aliases: dict[str, str] = {}
    for name in sorted(names):
        parts = name.split()
        if len(parts) > 1 and parts[0] not in not_names():
            aliases.setdefault(parts[0], name)
    return aliases


@dataclass(frozen=True)
class Replacement:
    """A ``[start, end)`` span of a field's original text and what replaces it in the cleaned text."""

    start: int
    end: int
    after: str
    hit: PiiHit | None = None


def plan_pii(fields: list[tuple[str, str]], *, keep: Iterable[str]) -> dict[str, list[Replacement]]:
    """The identifier replacements of a scenario's fields, by field path, each in its field's original offsets.

    Pass one finds identifiers field by field; pass two adds every other occurrence of a name found anywhere,
    so "王小明" is ``[NAME_1]`` in the history and the reference alike. Names are numbered in reading order.
    """
    keep = [name for name in keep if name]
    found = {path: detect(text, keep=keep) for path, text in fields}
    names = {hit.text for hits in found.values() for hit in hits if hit.entity == "NAME"}
    aliases = {alias: name for alias, name in name_aliases(names).items() if alias not in keep}
    names |= set(aliases)
    placeholders = Placeholders(aliases)
    plan: dict[str, list[Replacement]] = {}
    for path, text in fields:
        protected = [span for name in keep for span in occurrences(text, name)]
        extra = [
            PiiHit("NAME", start, end, name, "h2h:name_seen_elsewhere", 0.5)
            for name in sorted(names)
            for start, end in occurrences(text, name)
            if all(end <= s or start >= e for s, e in protected)
        ]
        hits = resolve_overlaps(found[path] + extra)
        if hits:
            plan[path] = [Replacement(hit.start, hit.end, placeholders.for_hit(hit), hit) for hit in hits]
    return plan


def apply_replacements(text: str, replacements: Iterable[Replacement]) -> str:
    """``text`` with each (non-overlapping) span replaced, through Presidio's anonymizer."""
    from presidio_anonymizer.entities import OperatorConfig, RecognizerResult

    ordered = sorted(replacements, key=lambda item: item.start)
    if not ordered:
        return text
    # one pseudo entity per span, so each gets its own replacement value
    results = [RecognizerResult(f"R{index}", item.start, item.end, 1.0) for index, item in enumerate(ordered)]
    # "custom", not "replace": replace turns an empty value into "<ENTITY>", and removed meta-text must vanish
    operators = {
        f"R{index}": OperatorConfig("custom", {"lambda": lambda _text, after=item.after: after})
        for index, item in enumerate(ordered)
    }
    return str(_anonymizer().anonymize(text=text, analyzer_results=results, operators=operators).text)


def pii_flag(path: str, replacement: Replacement) -> PiiFlag:
    """The report flag of one identifier replacement."""
    assert replacement.hit is not None
    return _flag(path, replacement.hit, replacement.after)


@functools.lru_cache(maxsize=1)
def _anonymizer() -> Any:
    from presidio_anonymizer import AnonymizerEngine

    return AnonymizerEngine()  # type: ignore[no-untyped-call]


def _flag(path: str, hit: PiiHit, after: str) -> PiiFlag:
    return PiiFlag(
        field=path,
        span=(hit.start, hit.end),
        source=hit.source,
        reason=f"{hit.entity.lower().replace('_', ' ')} replaced by {after}",
        entity=hit.entity,
        before=hit.text,
        after=after,
    )
