"""Personal identifiers in Chinese and English text, replaced by typed placeholders consistently per scenario.

What is found, and by what:

- phone numbers, e-mail, URLs, IPs, bank cards (Luhn), mainland ID cards (checksum), English street addresses:
  Presidio pattern recognizers (:mod:`pipeline.curation.pii.recognizers`), run on the *latin view* of the text
  (every CJK character and full-width sign turned into a space, so offsets stay the same and a Chinese character
  next to an address is never read as part of it). A public number (a crisis line, an emergency or toll-free
  number: :mod:`pipeline.curation.pii.public`) is kept and reported as kept;
- Chinese person names and street addresses: :mod:`pipeline.curation.pii.zh` (a name's shape plus evidence:
  surnames, given-name characters, cues, jieba's tags and dictionary; the city and district of an address stay);
- English person names: :mod:`pipeline.curation.pii.en` (known given names, cues, proper nouns left alone).

Every hit has an ``action``: ``replaced``; ``review`` (kept, flagged for a curator: plausible, not certain); or
``kept`` (identifier-shaped, but public). A name found once is replaced everywhere in the scenario, and numbered in
reading order (``[NAME_1]``, ``[NAME_2]``...), so a conversation stays coherent. The companion's own name and its
nickname forms (:mod:`pipeline.curation.pii.companion`) are kept. Ordinary numbers (times, dates, prices, distances)
match none of the recognizers and are never touched.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from pipeline.curation.pii.base import PiiHit, en_name_words, not_names
from pipeline.curation.pii.companion import companion_names
from pipeline.curation.pii.en import english_name_hits, pet_names
from pipeline.curation.pii.public import public_number
from pipeline.curation.pii.recognizers import ENTITY_OF, ENTITY_PRIORITY, LANGUAGE, analyzer
from pipeline.curation.pii.zh import chinese_address_hits, chinese_name_hits, given_name_alias
from pipeline.curation.records import PiiFlag

__all__ = ["PiiHit", "companion_names", "detect", "detect_all", "plan_pii"]

logger = logging.getLogger(__name__)

_WIDE = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
_ACTION_RANK = {"replaced": 2, "kept": 1, "review": 0}


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
        found = text[result.start : result.end]
        public = public_number(found) if entity == "PHONE" else None
        action, why = ("kept", f"a public number: {public}") if public else ("replaced", "")
        hits.append(PiiHit(entity, result.start, result.end, found, f"presidio:{name}", result.score, action, why))  # type: ignore[arg-type]
    return hits


def occurrences(text: str, needle: str, *, any_case: bool = False) -> Iterable[tuple[int, int]]:
    """Every ``[start, end)`` of ``needle`` in ``text``; Latin needles only on Latin word boundaries (a CJK
    character next to one is a boundary: "和Kevin吵架"), case-insensitively when ``any_case``."""
    if needle[:1].isascii():
        pattern = rf"(?<![A-Za-z0-9_]){re.escape(needle)}(?![A-Za-z0-9_])"
        return ((m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE if any_case else 0))
    return ((m.start(), m.end()) for m in re.finditer(re.escape(needle), text))


def resolve_overlaps(hits: Iterable[PiiHit]) -> list[PiiHit]:
    """Keep non-overlapping hits: replacements before kept and review ones, then longer, more specific, surer."""
    ranked = sorted(
        hits,
        key=lambda h: (
            -_ACTION_RANK[h.action],
            -(h.end - h.start),
            -ENTITY_PRIORITY.get(h.entity, 0),
            -h.score,
            h.start,
        ),
    )
    kept: list[PiiHit] = []
    for hit in ranked:
        if all(hit.end <= other.start or hit.start >= other.end for other in kept):
            kept.append(hit)
    return sorted(kept, key=lambda hit: hit.start)


def _protected(text: str, keep: Iterable[str]) -> list[tuple[int, int]]:
    return [span for name in keep for span in occurrences(text, name, any_case=True)]


def _outside(hit: PiiHit, protected: list[tuple[int, int]]) -> bool:
    return all(hit.end <= start or hit.start >= end for start, end in protected)


def detect_all(text: str, *, keep: Iterable[str] = ()) -> list[PiiHit]:
    """Every identifier-like hit in ``text`` (replaced, review or kept; overlaps resolved), except inside an
    occurrence of a name in ``keep`` (the companion's)."""
    protected = _protected(text, keep)
    found = pattern_hits(text) + chinese_name_hits(text) + english_name_hits(text) + chinese_address_hits(text)
    return resolve_overlaps(hit for hit in found if _outside(hit, protected))


def detect(text: str, *, keep: Iterable[str] = ()) -> list[PiiHit]:
    """The identifiers preprocess replaces in ``text`` (no review or kept hits)."""
    return [hit for hit in detect_all(text, keep=keep) if hit.action == "replaced"]


class Placeholders:
    """The placeholder of each identifier within one scenario: ``[NAME_n]`` numbered by first appearance.

    ``aliases`` map a short form to its full name ("Jake" to "Jake Miller", 梓涵 to 王梓涵), so both get one number;
    Latin names are numbered case-insensitively ("jordan" and "Jordan" are one person).
    """

    def __init__(self, aliases: dict[str, str] | None = None) -> None:
        self.names: dict[str, int] = {}
        self.aliases = aliases or {}

    def for_hit(self, hit: PiiHit) -> str:
        if hit.entity != "NAME":
            return f"[{hit.entity}]"
        name = self.aliases.get(hit.identity, hit.identity)
        key = name.casefold() if name.isascii() else name
        number = self.names.setdefault(key, len(self.names) + 1)
        return f"[NAME_{number}]"


def name_aliases(names: Iterable[str]) -> dict[str, str]:
    """Short forms that name the same person, pointing at the full name: the given name and surname of a
    multi-word English name ("Jake", "Miller" -> "Jake Miller"), the given name of a Chinese one (梓涵 -> 王梓涵).
    Forms that are also words (Will, Grace) are left out: they are replaced only where a cue finds them."""
    aliases: dict[str, str] = {}
    for name in sorted(names):
        parts = name.split()
        forms = [parts[0], parts[-1]] if len(parts) > 1 else [given_name_alias(name) or ""]
        for form in forms:
            if len(form) > 1 and form not in not_names() and form not in en_name_words():
                aliases.setdefault(form, name)
    return aliases


@dataclass(frozen=True)
class Replacement:
    """A ``[start, end)`` span of a field's original text and what replaces it in the cleaned text (for a hit kept
    or flagged for review, ``after`` is the text itself and nothing changes)."""

    start: int
    end: int
    after: str
    hit: PiiHit | None = None

    @property
    def changes(self) -> bool:
        return self.hit is None or self.hit.action == "replaced"


def _spread_hits(text: str, names: Iterable[str], protected: list[tuple[int, int]]) -> list[PiiHit]:
    """Hits for every occurrence in ``text`` of a name found somewhere in the scenario ("jordan" also as Jordan)."""
    hits = []
    for name in sorted(names):
        for start, end in occurrences(text, name, any_case=name.islower()):
            hit = PiiHit("NAME", start, end, text[start:end], "h2h:name_seen_elsewhere", 0.5, "replaced", "", name)
            if _outside(hit, protected):
                hits.append(replace(hit, why=f"the name {name!r} was found elsewhere in the scenario"))
    return hits


def plan_pii(fields: list[tuple[str, str]], *, keep: Iterable[str]) -> dict[str, list[Replacement]]:
    """The identifier hits of a scenario's fields, by field path, each in its field's original offsets.

    ``keep`` (the companion's names) and the pets' names the scenario mentions are never replaced. Pass one finds
    hits field by field; pass two adds every other occurrence of a name replaced anywhere (unless
    that name is also a word), so "王小明" is ``[NAME_1]`` in the history and the reference alike. Names are numbered
    in reading order. Review and kept hits come as replacements that change nothing (``changes`` False).
    """
    keep = [name for name in keep if name] + [name for _, text in fields for name in pet_names(text)]
    kept_forms = {name.casefold() for name in keep}
    found = {path: detect_all(text, keep=keep) for path, text in fields}
    replaced = [hit for hits in found.values() for hit in hits if hit.action == "replaced" and hit.entity == "NAME"]
    spread = {hit.text for hit in replaced if hit.propagate}
    aliases = {alias: name for alias, name in name_aliases(spread).items() if alias.casefold() not in kept_forms}
    placeholders = Placeholders(aliases)
    plan: dict[str, list[Replacement]] = {}
    for path, text in fields:
        extra = _spread_hits(text, spread | set(aliases), _protected(text, keep))
        hits = resolve_overlaps(found[path] + extra)
        if hits:
            plan[path] = [
                Replacement(
                    hit.start, hit.end, placeholders.for_hit(hit) if hit.action == "replaced" else hit.text, hit
                )
                for hit in hits
            ]
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
    """The report flag of one identifier hit: replaced, kept for a curator's review, or kept as public."""
    hit = replacement.hit
    assert hit is not None
    entity = hit.entity.lower().replace("_", " ")
    reason = {
        "replaced": f"{entity} replaced by {replacement.after}",
        "review": f"possible {entity} kept for review",
        "kept": f"{entity}-shaped but kept",
    }[hit.action] + (f": {hit.why}" if hit.why else "")
    return PiiFlag(
        field=path,
        span=(hit.start, hit.end),
        source=hit.source,
        reason=reason,
        entity=hit.entity,
        before=hit.text,
        after=replacement.after,
        action=hit.action,
    )


@functools.lru_cache(maxsize=1)
def _anonymizer() -> Any:
    from presidio_anonymizer import AnonymizerEngine

    return AnonymizerEngine()  # type: ignore[no-untyped-call]
