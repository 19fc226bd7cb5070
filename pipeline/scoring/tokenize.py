"""Tokenisers shared by BLEU and ROUGE, so both metrics always see the same tokens.

``zh`` is sacrebleu's ``zh`` tokenizer (each CJK character a token, other text by the 13a rules),
re-expressed with one compiled regular expression instead of a per-character Python loop; the
tests prove it yields exactly the library's tokens, code point by code point.

``jieba`` segments the CJK runs of a text into words with jieba and leaves the other runs to the
same 13a-style rules, so English inside Chinese text is tokenised as sacrebleu would.
Either tokenizer has ``tokenize(text) -> list[str]``, which is the interface rouge-score expects
of a custom tokenizer, and ``name`` (what goes into a score's signature).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib.metadata import version
from typing import Protocol

TOKENIZER_NAMES: tuple[str, ...] = ("zh", "jieba")


class Tokenizer(Protocol):
    """Turns a text into tokens; ``name`` identifies the tokenisation in score signatures."""

    name: str

    def tokenize(self, text: str) -> list[str]: ...


#: sacrebleu's ``zh`` CJK ranges as :func:`library_cjk_ranges` reads them (first and last code point, inclusive),
#: written out: importing sacrebleu to read them cost every ``h2h score-pairs`` ~80 ms. A test keeps them equal.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x3400, 0x4DB5), (0x4E00, 0x9FA5), (0x9FA6, 0x9FBB), (0xF900, 0xFA2D), (0xFA30, 0xFA6A), (0xFA70, 0xFAD9),
    (0x2001, 0x2A6D), (0x2F81, 0x2FA1), (0xFF00, 0xFFEF), (0x2E80, 0x2EFF), (0x3000, 0x303F), (0x31C0, 0x31EF),
    (0x2F00, 0x2FDF), (0x2FF0, 0x2FFF), (0x3100, 0x312F), (0x31A0, 0x31BF), (0xFE10, 0xFE1F), (0xFE30, 0xFE4F),
    (0x2600, 0x26FF), (0x2700, 0x27BF), (0x3200, 0x32FF), (0x3300, 0x33FF),
)  # fmt: skip


def library_cjk_ranges() -> tuple[tuple[int, int], ...]:
    """The code point ranges (inclusive) that sacrebleu's ``zh`` tokenizer treats as CJK, read from sacrebleu.

    sacrebleu compares each character against ``(start, end)`` string pairs with ``start <= c <= end``.
    Two of its pairs were meant as astral ranges but are written as two-character strings
    (e.g. ``'\\u20000'`` is U+2000 followed by ``'0'``); for a single character ``c`` such a start
    means ``c > start[0]`` and such an end means ``c <= end[0]``. We reproduce that comparison
    exactly rather than what the ranges were meant to say, because equality with the library is the point.
    """
    from sacrebleu.tokenizers.tokenizer_zh import _UCODE_RANGES

    ranges = []
    for start, end in _UCODE_RANGES:
        low = ord(start) if len(start) == 1 else ord(start[0]) + 1
        if low <= ord(end[0]):
            ranges.append((low, ord(end[0])))
    return tuple(ranges)


@lru_cache(maxsize=1)
def cjk_pattern() -> re.Pattern[str]:
    """Return a regex matching one character that sacrebleu's ``zh`` tokenizer treats as CJK (:data:`CJK_RANGES`)."""
    parts = (f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in CJK_RANGES)
    return re.compile("[" + "".join(parts) + "]")


#: The ASCII punctuation marks; each of :class:`PostTokenizer`'s rules matches only where one of them is.
_ASCII_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")


class PostTokenizer:
    """sacrebleu's 13a-style post-tokenizer (``TokenizerRegexp``, the ``zh`` tokenizer's second step), faster.

    The library's first rule pads every character of a class that includes the plain space with
    spaces; padding a space with spaces changes nothing once whitespace is collapsed, but on CJK text
    (a space around every character) it is most of the work. This class leaves the space out of that
    rule and applies the library's other rules unchanged; the tests check it against the library.
    It also has no per-line cache: hypotheses are seen once, so the library's LRU cache only costs memory.
    """

    def __init__(self) -> None:
        self._rules = [
            (re.compile(r"([\{-\~\[-\`!-\&\(-\+\:-\@\/])"), r" \1 "),
            # tokenize period and comma unless preceded by a digit
            (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
            # tokenize period and comma unless followed by a digit
            (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
            # tokenize dash when preceded by a digit
            (re.compile(r"([0-9])(-)"), r"\1 \2 "),
        ]

    def __call__(self, line: str) -> str:
        return " ".join(self.split(line))

    def split(self, line: str) -> list[str]:
        """The tokens of ``line``: what ``self(line).split()`` gives, without joining them first."""
        # every rule needs an ASCII punctuation mark to change anything: a text without one (most CJK text) skips
        # the four passes, and its output is the same
        if _ASCII_PUNCTUATION.search(line) is None:
            return line.split()
        for pattern, replacement in self._rules:
            line = pattern.sub(replacement, line)
        return line.split()


@lru_cache(maxsize=1)
def cjk_spacing_table() -> dict[int, str]:
    """A ``str.translate`` table that surrounds every CJK character (per :func:`cjk_pattern`) with spaces.

    ``translate`` does in C what sacrebleu's per-character loop does in Python; no CJK character lies
    outside the Basic Multilingual Plane, so the table is small. Built from the ranges themselves (not by
    matching all 65,536 code points against :func:`cjk_pattern`, which took ~74 ms at every start).
    """
    return {code: f" {chr(code)} " for low, high in CJK_RANGES for code in range(low, min(high, 0xFFFF) + 1)}


class ZhTokenizer:
    """sacrebleu's ``zh`` tokenisation: every CJK character its own token, the rest by the 13a rules."""

    name = "zh"

    def __init__(self) -> None:
        self._spacing = cjk_spacing_table()
        self._post = PostTokenizer()

    def segment(self, text: str) -> str:
        """Return the tokens joined by single spaces, exactly as ``TokenizerZh()(text)`` does."""
        return self._post(text.strip().translate(self._spacing))

    def tokenize(self, text: str) -> list[str]:
        return self._post.split(text.strip().translate(self._spacing))


class JiebaTokenizer:
    """jieba words for the CJK runs of a text, the 13a-style rules for everything else."""

    def __init__(self) -> None:
        import jieba

        jieba.setLogLevel(60)  # jieba announces its dictionary load on stderr at INFO
        self.name = f"jieba:{version('jieba')}"
        self._jieba = jieba.Tokenizer()
        self._cjk_run = re.compile(cjk_pattern().pattern + "+")
        self._post = PostTokenizer()

    def segment(self, text: str) -> str:
        """Return the tokens joined by single spaces."""
        pieces: list[str] = []
        position = 0
        for match in self._cjk_run.finditer(text):
            pieces.append(text[position : match.start()])
            pieces.extend(self._jieba.lcut(match.group(), HMM=True))
            position = match.end()
        pieces.append(text[position:])
        return self._post(" ".join(pieces))

    def tokenize(self, text: str) -> list[str]:
        return self.segment(text).split()


@cache
def get_tokenizer(name: str) -> ZhTokenizer | JiebaTokenizer:
    """Return the tokenizer called ``name`` (one of :data:`TOKENIZER_NAMES`), built once per process."""
    if name == "zh":
        return ZhTokenizer()
    if name == "jieba":
        return JiebaTokenizer()
    raise ValueError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZER_NAMES)}")
