"""Usernames: one canonical form (Unicode NFKC), and no characters a person cannot see.

``annotator01\\u200b`` (a zero-width space) looked like ``annotator01`` in every list, and a bidi override can make one
name read as another. A username is therefore normalised with NFKC (full-width ``ａｄｍｉｎ`` is ``admin``; the
ideographic space is a space) and refused when it still holds a control, format (bidi controls, zero-width
characters), surrogate, private-use or unassigned code point, a default-ignorable one (Hangul fillers, variation
selectors, the combining grapheme joiner), a blank that is not U+0020, a line break, or two spaces in a row (spaces
at either end are dropped). The same rule runs when an account is created and when someone signs in, so a name with
an invisible character never matches another account.
"""

from __future__ import annotations

import unicodedata

from studio.services.errors import InvalidInput

MAX_USERNAME_CHARS = 64

#: General categories nobody can see or type on purpose: controls, format characters (bidi, zero-width), surrogates,
#: private use, unassigned, line and paragraph separators.
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


def is_hidden(char: str) -> bool:
    """Whether ``char`` is a character a person cannot see (see the module docstring); U+0020 is not."""
    if char == " ":
        return False
    point = ord(char)
    if any(low <= point <= high for low, high in _BLANK_RANGES):
        return True
    category = unicodedata.category(char)
    return category in _HIDDEN_CATEGORIES or category == "Zs"


def describe(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE``: a character named for an error message."""
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"


def normalise_username(raw: str) -> str:
    """The canonical form of ``raw`` (NFKC, spaces at the ends dropped); ``InvalidInput`` ``username: ...`` when it is
    empty, too long, or holds a hidden character or two spaces in a row."""
    if not isinstance(raw, str):
        raise InvalidInput("username: must be text")
    try:
        name = unicodedata.normalize("NFKC", raw).strip(" ")
    except UnicodeError:
        raise InvalidInput("username: text is not valid Unicode") from None
    hidden = next((char for char in name if is_hidden(char)), None)
    if hidden is not None:
        raise InvalidInput(f"username: contains an invisible or control character ({describe(hidden)})")
    if "  " in name:
        raise InvalidInput("username: two spaces in a row")
    if not 1 <= len(name) <= MAX_USERNAME_CHARS:
        raise InvalidInput(f"username: must be 1-{MAX_USERNAME_CHARS} characters")
    return name


def visible_username(name: str) -> str:
    """``name`` with each hidden character written out as ``⟨U+200B⟩``, for lists of accounts made before the rule
    (such a name must not look like another)."""
    return "".join(f"⟨U+{ord(char):04X}⟩" if is_hidden(char) else char for char in name)


def throttle_key(name: str) -> str:
    """The form of a typed name the login throttle counts under: NFKC, trimmed, case-folded (``ＡＤＭＩＮ`` and
    ``admin`` are one name to it, whatever else is wrong with them)."""
    try:
        return unicodedata.normalize("NFKC", name).strip().casefold()
    except UnicodeError:
        return name.strip().casefold()
