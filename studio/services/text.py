"""Text checks at the service boundary, and the one rule for showing text a person cannot see.

JSON may carry lone surrogates, which are not Unicode text (:func:`unstorable`). Text that holds characters drawing
nothing — a right-to-left override that makes ``abc\u202etxt.exe`` read ``abcexe.txt``, a zero-width space in a
name — is shown with those characters written out (:func:`visible_text`), and names and ids refuse them
(:func:`name_problem`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from studio.errors import InvalidInput
from studio.models.types import STORE_INT_MAX


def safe_text(text: str) -> str:
    """``text`` with anything UTF-8 cannot encode written as a backslash escape (for error messages)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def not_unicode(text: str, field: str) -> str | None:
    """The problem of ``text`` when it is not valid Unicode (a lone surrogate), naming ``field``; else None."""
    return None if is_unicode(text) else f"{safe_text(field)}: text is not valid Unicode (a lone surrogate)"


def require_unicode(value: Any, field: str) -> None:
    """Raise ``InvalidInput`` naming the field when a string (or a key) in ``value`` is not valid Unicode."""
    if isinstance(value, str):
        if why := not_unicode(value, field):
            raise InvalidInput(why)
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{field}.{key}"
            require_unicode(key, name)
            require_unicode(item, name)
    elif isinstance(value, list):
        for item in value:
            require_unicode(item, field)


def unstorable(value: Any, field: str) -> str | None:
    """Why ``value`` (a path or query parameter, a JSON body's field, an input a page sent; ``field`` names it) cannot
    reach the store, or None.

    A NUL character (PostgreSQL's text columns cannot hold one), a lone surrogate (not Unicode: no driver can encode
    it) and whole numbers past :data:`STORE_INT_MAX` (the store cannot compare its ids with one) are refused at the
    front doors, naming the field, instead of failing in the driver as a 500. A list is checked item by item; a JSON
    object (an answer's values, a curator's edits) is left to its own checks: stored as JSON, its text may hold any
    character (``tests/studio/web/test_api_hostile_input.py`` stores a NUL verbatim).
    """
    if isinstance(value, str):
        if "\x00" in value:
            return f"{field}: text contains a NUL character (U+0000)"
        return not_unicode(value, field)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > STORE_INT_MAX:
        return f"{field}: {value} is out of range (at most {STORE_INT_MAX} either way)"
    if isinstance(value, list):
        return next((why for item in value if (why := unstorable(item, field))), None)
    return None


# --- What a person cannot see -----------------------------------------------------------------------------------
#
# One rule for every place the studio shows a name or a text (tables, the audit log, decisions, model names,
# scenario ids, usernames, the annotate page): a character that draws nothing but changes how the text around it
# reads — a bidi control (U+202A–202E, U+2066–2069, U+200E/F, U+061C), a zero-width one (U+200B–200D, U+2060–2064,
# U+FEFF), the soft hyphen (U+00AD), the tag characters (U+E0000–E007F: "ASCII smuggling"), any other format
# character (Unicode category Cf), a control other than tab and line breaks, a line or paragraph separator, and the
# blank letters (Hangul fillers, the combining grapheme joiner) — is written out as a visible ``⟨U+202E⟩``.

#: Format characters (Cf) that draw a visible sign of their own (Unicode's Prepended_Concatenation_Mark: the Arabic
#: number signs span the digits after them); they are left as they are.
_VISIBLE_FORMAT = frozenset([*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD])
#: Letters and marks that render as nothing (Default_Ignorable_Code_Point outside Cf, variation selectors aside:
#: those choose an emoji's or an ideograph's form and are part of what is seen).
_BLANKS = (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0)
ZWJ = "\u200d"


def _code_points(test: Callable[[str], bool]) -> list[int]:
    # Format characters and viramas live in planes 0, 1 and 14 only: scanning those (≈ 20 ms once) keeps the rule in
    # step with the Unicode version of this Python, with no table to maintain.
    planes = (range(0x20000), range(0xE0000, 0xE1000))
    return [point for plane in planes for point in plane if test(chr(point))]


def _is_drawn_nothing(char: str) -> bool:
    point, category = ord(char), unicodedata.category(char)
    if category == "Cf":
        return point not in _VISIBLE_FORMAT and char != ZWJ  # the joiner has its own rule (below)
    if category == "Cc":
        return char not in "\t\n\r"
    return category in ("Zl", "Zp") or point in _BLANKS


def _char_class(points: Iterable[int]) -> str:
    """A regex character class body for ``points``, runs of consecutive points as ranges."""
    parts: list[tuple[int, int]] = []
    for point in sorted(points):
        if parts and parts[-1][1] == point - 1:
            parts[-1] = (parts[-1][0], point)
        else:
            parts.append((point, point))
    return "".join(f"\\U{low:08x}" + (f"-\\U{high:08x}" if high > low else "") for low, high in parts)


#: What a zero-width joiner may stand between and still be seen for what it is: emoji (👨‍👩‍👧 is three faces joined)
#: after an emoji, a skin tone or the emoji presentation selector; and, after a virama, the Indic letters it forms
#: a conjunct with (ශ්‍රී). Anywhere else it is drawn visibly like the other zero-width characters.
_EMOJI = "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u27bf\u2934\u2935" + (
    "\u2b05-\u2b55\u3030\u303d\u3297\u3299\U0001f000-\U0001faff"
)


@dataclass(frozen=True)
class _Patterns:
    invisible: re.Pattern[str]  # every character the rule writes out, and every joiner (decided by :func:`_joins`)
    before_joiner: re.Pattern[str]  # what a joiner that joins follows
    after_emoji_joiner: re.Pattern[str]  # what an emoji joiner precedes


@functools.cache
def _patterns() -> _Patterns:
    drawn_nothing = _char_class(_code_points(_is_drawn_nothing))
    viramas = _char_class(_code_points(lambda char: unicodedata.combining(char) == 9))
    return _Patterns(
        invisible=re.compile(f"[{drawn_nothing}{ZWJ}]"),
        before_joiner=re.compile(f"[{_EMOJI}\ufe0f]|(?P<virama>[{viramas}])"),
        after_emoji_joiner=re.compile(f"[{_EMOJI}]"),
    )


def _joins(text: str, at: int) -> bool:
    """Whether the zero-width joiner at ``text[at]`` joins what it stands between (emoji, an Indic conjunct)."""
    patterns = _patterns()
    before = patterns.before_joiner.fullmatch(text, at - 1, at) if at > 0 else None
    if before is None:
        return False
    return before.group("virama") is not None or patterns.after_emoji_joiner.match(text, at + 1) is not None


def _write_out(found: re.Match[str], shown: Callable[[str], str]) -> str:
    char = found.group()
    return char if char == ZWJ and _joins(found.string, found.start()) else shown(char)


def marker(char: str) -> str:
    """How an invisible character is shown: ``⟨U+202E⟩``."""
    return f"⟨U+{ord(char):04X}⟩"


def invisible_chars(text: str) -> list[str]:
    """The characters of ``text`` that :func:`visible_text` writes out, in order (``[]`` for plain text)."""
    return [
        found.group() for found in _patterns().invisible.finditer(text) if _write_out(found, marker) != found.group()
    ]


def visible_text(text: str, *, name: bool = False, shown: Callable[[str], str] = marker) -> str:
    """``text`` with every character a person cannot see (the rule above) written out as ``⟨U+202E⟩`` — THE rule for
    any text or name the studio shows; ``shown`` may dress the marker (the annotate page's HTML wraps it in a span).

    ``name``: ``text`` is a name or an id (a username, a model, a scenario id), where the stricter rule of
    :func:`is_hidden_in_name` applies (a joiner or a no-break space is written out too). Plain text in, plain text
    out: escaping for HTML is the caller's (:func:`studio.ui.render.escape_text` applies this rule itself).
    Idempotent: a marker holds no invisible character. Runs at regex speed on text with none.
    """
    if name:
        return "".join(shown(char) if is_hidden_in_name(char) else char for char in text)
    return _patterns().invisible.sub(lambda found: _write_out(found, shown), text)


#: General categories nobody can see or type on purpose in a name: controls, format characters (bidi, zero-width),
#: surrogates, private use, unassigned, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: Code points that render as nothing but are letters, marks or symbols by category (Unicode's
#: Default_Ignorable_Code_Point outside the categories above, and the blank Braille pattern).
_BLANK_RANGES: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong / jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xE0100, 0xE01EF),  # variation selectors supplement
)


def is_hidden_in_name(char: str) -> bool:
    """Whether ``char`` has no place in a name or an id (a username, a model name, a scenario id): a control, a
    format character (bidi controls, zero-width characters, the joiner included), a surrogate, a private-use or
    unassigned code point, a default-ignorable one (Hangul fillers, variation selectors, the combining grapheme
    joiner), or a blank that is not U+0020. A superset of what :func:`visible_text` writes out in running text."""
    if char == " ":
        return False
    point = ord(char)
    if any(low <= point <= high for low, high in _BLANK_RANGES):
        return True
    category = unicodedata.category(char)
    return category in _HIDDEN_CATEGORIES or category == "Zs"


def describe(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE``: a character named for a message."""
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name or an id (a model name, a scenario id) — it holds a character of
    :func:`is_hidden_in_name`, named, with the value as it would be shown — or None. The caller adds the field
    (``file:line: model: ...``)."""
    hidden = next((char for char in value if is_hidden_in_name(char)), None)
    if hidden is None:
        return None
    return (
        f"holds an invisible or direction-changing character ({describe(hidden)}): "
        f"“{visible_text(value, name=True)}”; names and ids take visible characters only — remove it"
    )
