"""Person names in English (and in Latin script inside Chinese text: "和 Kevin 吵架了").

A capitalised word is a name when it is a known given name (``en_first_names.txt``) standing on its own ("lunch with
Sarah", "Chloe and I"), or when a cue says so:

- certain: a self-introduction ("I'm Alex", "hey im jordan", "my name is"), a relation before it ("my friend Jake",
  "Cousin Hannah", "roommate Grace", "My ex, Marcus Reed"), an honorific ("Dr. Patel", "Mr Thompson");
- enough for a given name that is also a word or place (``en_name_words.txt``: Will, Grace, Jordan): a greeting
  ("Hey Jordan"), "with Will", "Grace and I", "Mark said".

Not a name: a given name inside a proper noun ("London Victoria", "Victoria Station"), a word-like name without a cue
("May I vent?", "flying to Jordan"). A known given name followed by an unknown capitalised word without a cue
("Harry Potter", "Albert Cuyp market") is flagged for review, not replaced; so is an unknown word after "I'm".
"""

from __future__ import annotations

import re

from pipeline.curation.pii.base import Action, PiiHit, en_first_names, en_name_words, not_names

_TOKEN = re.compile(r"[A-Za-z][A-Za-z]*(?:[-'’][A-Za-z]+)*")
RELATIONS = (
    "friend|best friend|boyfriend|girlfriend|husband|wife|partner|fiancée?|boss|manager|colleague|coworker|"
    "co-worker|roommate|flatmate|housemate|neighbou?r|sister|brother|mom|mum|dad|mother|father|son|daughter|cousin|"
    "aunt|auntie|uncle|niece|nephew|grandma|grandpa|granny|grandmother|grandfather|teacher|tutor|therapist|"
    "counsell?or|coach|ex|classmate|bestie|buddy|landlord|landlady|babysitter|cat-sitter|dog-walker|nanny"
)
_SELF = re.compile(r"(?i:\b(?:my name is|my name's|i'm|i’m|im|i am|call me))\s+$")
_RELATION = re.compile(rf"(?i:\b(?:{RELATIONS}))\s*,?\s+$")
HONORIFICS = frozenset({"Mr", "Mrs", "Ms", "Miss", "Mx", "Dr", "Prof", "Professor"})
_HONORIFIC = re.compile(rf"\b(?:{'|'.join(sorted(HONORIFICS))})\.?\s+$")
_GREETING = re.compile(r"(?:^|[.!?,;:\n]\s*)(?i:hi|hey|hello|dear|thanks|thank you|bye|morning|night)\s*,?\s+$")
_PERSON_BEFORE = re.compile(r"\b(?:with|told|asked|texted|called|met|invited)\s+$")
_PERSON_AFTER = re.compile(
    r"^(?:['’]s)?\s+(?:and I\b|said|says|told|tells|asked|asks|texted|called|thinks|thought|wants|invited|forgot)"
)
_PET = re.compile(
    r"(?i:\b(?:cat|dog|puppy|kitten|pet|hamster|rabbit|bunny|parrot|budgie|fish|horse|pony)\s+(?:named|called)?\s*)$"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n\"“(]\s*)$")
PLACE_NOUNS = frozenset(
    [
        "Street",
        "St",
        "Avenue",
        "Ave",
        "Road",
        "Rd",
        "Lane",
        "Drive",
        "Way",
        "Place",
        "Square",
        "Park",
        "Market",
        "Museum",
        "Station",
        "Hospital",
        "Infirmary",
        "School",
        "College",
        "University",
        "Hall",
        "Bridge",
        "Garden",
        "Gardens",
        "Centre",
        "Center",
        "Cafe",
        "Café",
        "Bar",
        "Pub",
        "Restaurant",
        "Hotel",
        "Church",
        "Cathedral",
        "Palace",
        "Tower",
        "Lake",
        "River",
        "Beach",
        "Bay",
        "Island",
        "Mountain",
        "Valley",
        "Airport",
        "Library",
        "Theatre",
        "Theater",
        "Studio",
        "Studios",
        "Shrine",
        "Temple",
        "Line",
        "Express",
        "Marathon",
        "Festival",
        "Stadium",
        "Arena",
        "Mall",
        "Court",
        "Gallery",
        "Zoo",
        "Club",
        "Road",
    ]
)
_DEMONYM_ENDINGS = ("ese", "ish", "ian", "an", "i")


def _capitalised(word: str) -> bool:
    return word[:1].isupper() and (len(word) == 1 or word[1:2].islower())


def _bare(word: str) -> str:
    """The word without a possessive 's."""
    return re.sub(r"['’]s$", "", word)


def _cue(text: str, start: int, end: int) -> str:
    """ "pet" (my cat Luna), "self", "relation", "honorific", "person" (greeting, with, said…) or ""."""
    before = text[max(0, start - 30) : start]
    if _PET.search(before):
        return "pet"
    for name, pattern in (("self", _SELF), ("relation", _RELATION), ("honorific", _HONORIFIC)):
        if pattern.search(before):
            return name
    if _GREETING.search(before) or _PERSON_BEFORE.search(before) or _PERSON_AFTER.match(text[end : end + 20]):
        return "person"
    return ""


def _neighbours(text: str, words: list[re.Match[str]], index: int) -> tuple[str, str | None]:
    """(what the word right before is: "proper noun" (London Victoria), "given name" (Billie Eilish) or "",
    the capitalised word right after or None)."""
    previous = words[index - 1] if index > 0 else None
    glued_before = ""
    if previous is not None and text[previous.end() : words[index].start()] == " ":
        word = _bare(previous.group(0))
        sentence_start = bool(_SENTENCE_START.search(text[: previous.start()]))
        if _capitalised(word) and word in en_first_names():
            glued_before = "given name"
        elif _capitalised(word) and not sentence_start:
            glued_before = "proper noun"
    following = words[index + 1] if index + 1 < len(words) else None
    after = None
    if following is not None and text[words[index].end() : following.start()] == " ":
        after = following.group(0) if _capitalised(following.group(0)) else None
    return glued_before, after


def _decide(word: str, cue: str, glued_before: str, after: str | None) -> tuple[Action, str, bool] | None:
    """``(action, why, take the next word too)`` for one capitalised word, or None."""
    known, wordlike = word in en_first_names(), word in en_name_words()
    surname = after is not None and after not in PLACE_NOUNS and _bare(after) not in not_names()
    if glued_before == "given name" and cue not in ("relation", "honorific"):
        return None  # the surname of Billie Eilish: taken with the given name, or not at all
    if after in PLACE_NOUNS or (glued_before and cue not in ("relation", "honorific")):
        return None  # Victoria Station, London Victoria
    if cue in ("relation", "honorific"):
        return "replaced", f"a name after a {cue} cue", surname
    if cue == "self":
        if known:
            return "replaced", "a given name in a self-introduction", surname
        return None if word.endswith(_DEMONYM_ENDINGS) else ("review", "an unknown word after I'm", False)
    if not known or cue == "pet":
        return None
    if cue == "person" and surname:
        return (
            "review",
            "a given name and another capitalised word after a person cue (a person, or a public figure?)",
            True,
        )
    if cue == "person":
        return "replaced", "a given name with a person cue (hi…, with…, …said)", False
    if wordlike:
        return None
    if surname:
        return "review", "a given name and another capitalised word without a cue (a person, or a place or work?)", True
    return "replaced", "a known given name", False


def english_name_hits(text: str) -> list[PiiHit]:
    """English person names in ``text`` (see the module docstring); lowercase ones only after "I'm"/"my name is"."""
    words = list(_TOKEN.finditer(text))
    hits = []
    for index, match in enumerate(words):
        word = _bare(match.group(0))
        start, end = match.start(), match.start() + len(word)
        cue = _cue(text, start, end)
        if word in not_names() or word.capitalize() in not_names() or word in HONORIFICS:
            continue
        if not _capitalised(word):
            if cue == "self" and word.islower() and word.capitalize() in en_first_names():
                propagate = word.capitalize() not in en_name_words()
                why = "a given name in a self-introduction"
                hits.append(PiiHit("NAME", start, end, word, "h2h:en_name:self", 0.7, "replaced", why, "", propagate))
            continue
        glued_before, after = _neighbours(text, words, index)
        decision = _decide(word, cue, glued_before, after)
        if decision is None:
            continue
        action, why, two_words = decision
        if two_words and after is not None:
            end = words[index + 1].start() + len(_bare(after))
        name = text[start:end]
        propagate = word not in en_name_words()
        hit = PiiHit("NAME", start, end, name, f"h2h:en_name:{cue or 'given_name'}", 0.7, action, why, "", propagate)
        hits.append(hit)
    return hits


_PET_NAMED = re.compile(
    r"(?i:\b(?:cat|dog|puppy|kitten|pet|hamster|rabbit|bunny|parrot|budgie|horse|pony)\s+(?:(?:named|called)\s+)?)"
    r"([A-Z][a-z]+)"
)
_PET_NAMED_ZH = re.compile(
    r"(?:叫|名叫|取名)([\u4e00-\u9fffA-Za-z]{1,4}?)的(?:小)?(?:猫|狗|柯基|柴犬|金毛|泰迪|橘猫|布偶|兔|仓鼠|鹦鹉)"
)


def pet_names(text: str) -> list[str]:
    """Names given to pets ("my cat Luna", "a dog named Pickles", "一只叫年糕的柯基"): no person's identifier, so a
    scenario keeps them everywhere (like the companion's name)."""
    return [match.group(1) for pattern in (_PET_NAMED, _PET_NAMED_ZH) for match in pattern.finditer(text)]
