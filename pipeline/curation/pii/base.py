"""What the PII detectors share: the hit record, the word lists they read, and jieba's tokens and dictionary.

Every list is a plain data file in ``data/curation/`` a curator can read and extend (each file's header
says where its entries came from):

- ``not_names.txt``: words never taken for names (jieba tags 谢谢 and 安静 ``nr``; "my friend Monday");
- ``zh_surnames.tsv``: Chinese surnames with their share of the population;
- ``zh_given_name_chars.tsv``: how often a character appears in Chinese given names (时 and 间 rarely do, so
  段时间 is no name);
- ``zh_places.txt``: administrative divisions and well-known places (静安, 徐汇, 翠湖): public places, no names;
- ``en_first_names.txt``: given names; ``en_name_words.txt``: the ones that are also ordinary words or places
  (Will, April, Jordan, Victoria), which need a cue;
- ``public_numbers.tsv``: crisis lines, emergency and public service numbers, which are kept.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Literal

from pipeline.paths import data_dir

#: What preprocess does with a hit: replace it, keep it but flag it for a curator, or keep it and say why.
Action = Literal["replaced", "review", "kept"]


@dataclass(frozen=True)
class PiiHit:
    """One identifier (or identifier-like text) found in one text.

    ``entity`` is our entity type, ``[start, end)`` the offsets, ``source`` what found it and ``why`` the evidence in
    words. ``action`` says what to do with it. ``key`` names the person for numbering (孙 of 孙老师 is keyed
    孙老师, so 孙医生 is another person); ``propagate`` says whether every other occurrence of ``text`` in the
    scenario is the same identifier (not so for a bare surname, or a name that is also a word, such as Will).
    """

    entity: str
    start: int
    end: int
    text: str
    source: str
    score: float
    action: Action = "replaced"
    why: str = ""
    key: str = ""
    propagate: bool = True

    @property
    def identity(self) -> str:
        return self.key or self.text


def _lines(name: str) -> list[str]:
    text = (data_dir() / "curation" / name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _table(name: str) -> dict[str, str]:
    rows = (line.split("\t") for line in _lines(name))
    return {row[0].strip(): row[1].strip() if len(row) > 1 else "" for row in rows}


@functools.lru_cache(maxsize=1)
def not_names() -> frozenset[str]:
    """Words never taken for names (``not_names.txt``)."""
    return frozenset(_lines("not_names.txt"))


@functools.lru_cache(maxsize=1)
def zh_surnames() -> dict[str, float]:
    """Chinese surname -> share of the population in percent (``zh_surnames.tsv``)."""
    return {name: float(share) for name, share in _table("zh_surnames.tsv").items()}


@functools.lru_cache(maxsize=1)
def given_name_rates() -> dict[str, float]:
    """Character -> occurrences per 100,000 given-name characters (``zh_given_name_chars.tsv``)."""
    return {char: float(rate) for char, rate in _table("zh_given_name_chars.tsv").items()}


@functools.lru_cache(maxsize=1)
def zh_places() -> frozenset[str]:
    """Chinese public places (``zh_places.txt``)."""
    return frozenset(_lines("zh_places.txt"))


@functools.lru_cache(maxsize=1)
def en_first_names() -> frozenset[str]:
    """English-text given names (``en_first_names.txt``)."""
    return frozenset(_lines("en_first_names.txt"))


@functools.lru_cache(maxsize=1)
def en_name_words() -> frozenset[str]:
    """Given names that are also words or places (``en_name_words.txt``): replaced only with a cue."""
    return frozenset(_lines("en_name_words.txt"))


@functools.lru_cache(maxsize=1)
def public_numbers() -> dict[str, str]:
    """Digits of a public number -> what it is (``public_numbers.tsv``)."""
    table = _table("public_numbers.tsv")
    return {"".join(char for char in number if char.isdigit()): what for number, what in table.items()}


@functools.lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[tuple[str, str, int, int], ...]:
    """jieba's ``(word, part of speech, start, end)`` for ``text`` (cached: fields repeat across passes)."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    found, position = [], 0
    for pair in jieba.posseg.cut(text):
        word, flag = pair.word, pair.flag
        found.append((word, flag, position, position + len(word)))
        position += len(word)
    return tuple(found)


def word_frequency(word: str) -> int:
    """How often jieba's bundled dictionary has seen ``word`` (0 when it does not list it)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.dt.check_initialized()
    return int(jieba.dt.FREQ.get(word) or 0)


def dictionary_tag(word: str) -> str | None:
    """jieba's part-of-speech tag for ``word`` in its dictionary, or None."""
    import jieba.posseg

    tag = jieba.posseg.dt.word_tag_tab.get(word)
    return str(tag) if tag else None
