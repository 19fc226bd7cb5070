"""Usernames: one canonical form (Unicode NFKC), and no characters a person cannot see.

``annotator01\\u200b`` (a zero-width space) looked like ``annotator01`` in every list, and a bidi override can make one
name read as another. A username is therefore normalised with NFKC (full-width ``ａｄｍｉｎ`` is ``admin``; the
ideographic space is a space) and refused when it still holds a control, format (bidi controls, zero-width
characters), surrogate, private-use or unassigned code point, a default-ignorable one (Hangul fillers, variation
selectors, the combining grapheme joiner), a blank that is not U+0020, a line break, or two spaces in a row (spaces
at either end are dropped). The same rule runs when an account is created and when someone signs in, so a name with
an invisible character never matches another account.

A new name must also not pass for another (:func:`check_new_username`, when an account is created): it is refused
when it mixes scripts (``annаtator01`` with a Cyrillic ``а``; Unicode's "highly restrictive" level, UTS #39, which
lets Chinese, Japanese and Korean mix with Latin) or when its confusables skeleton (UTS #39: what it looks like,
``аnnotator01`` → ``annotatorOl``) equals an existing account's. Both come from ICU's spoof checker, which carries
Unicode's confusables data.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable
from typing import Any

from studio.errors import Conflict, InvalidInput
from studio.services.text import describe, visible_text
from studio.services.text import is_hidden_in_name as is_hidden

MAX_USERNAME_CHARS = 64


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
    (such a name must not look like another): :func:`studio.services.text.visible_text`'s rule for names."""
    return visible_text(name, name=True)


def throttle_key(name: str) -> str:
    """The form of a typed name the login throttle counts under: NFKC, trimmed, case-folded (``ＡＤＭＩＮ`` and
    ``admin`` are one name to it, whatever else is wrong with them)."""
    try:
        return unicodedata.normalize("NFKC", name).strip().casefold()
    except UnicodeError:
        return name.strip().casefold()


@functools.cache
def _spoof_checker() -> Any:
    """ICU's spoof checker (UTS #39) set to Unicode's "highly restrictive" level: one script per name, or Latin with
    Chinese, Japanese or Korean; digits of one numbering system. Built once (ICU loads its data)."""
    import icu

    checker = icu.SpoofChecker()
    checker.setRestrictionLevel(icu.URestrictionLevel.HIGHLY_RESTRICTIVE)
    checker.setChecks(icu.USpoofChecks.RESTRICTION_LEVEL | icu.USpoofChecks.MIXED_NUMBERS)
    return checker


def skeleton(name: str) -> str:
    """``name``'s confusables skeleton (UTS #39): equal for two names that look alike (``аnnotator01`` with a
    Cyrillic ``а`` and ``annotator01`` are both ``annotatorOl``; ``rn`` and ``m`` are one)."""
    return str(_spoof_checker().getSkeleton(0, name))


def _scripts(name: str) -> list[str]:
    """The scripts of ``name``'s letters, in order of first use (Common and Inherited left out)."""
    import icu

    found = (str(icu.Script.getScript(char).getName()) for char in name)
    return list(dict.fromkeys(script for script in found if script not in ("Common", "Inherited")))


def check_new_username(name: str, existing: Iterable[str]) -> None:
    """Refuse a new account's canonical ``name`` (:func:`normalise_username`'s) that could pass for another:
    ``InvalidInput`` when it mixes scripts or numbering systems, ``Conflict`` naming the look-alike when its
    :func:`skeleton` equals that of a name in ``existing`` (the stored usernames; an equal name is the caller's
    "already exists")."""
    if _spoof_checker().check(name):
        scripts = _scripts(name)
        mixed = f"letters of {' and '.join(scripts)}" if len(scripts) > 1 else "digits of two numbering systems"
        raise InvalidInput(
            f"username: “{name}” mixes {mixed}, so it can pass for another name; use one script "
            "(Chinese, Japanese or Korean may go with Latin)"
        )
    shape = skeleton(name)
    twin = next((other for other in existing if other != name and skeleton(other) == shape), None)
    if twin is not None:
        raise Conflict(
            f"username: “{name}” looks like the existing user “{visible_username(twin)}” (Unicode counts their "
            "characters as look-alikes); choose a name that reads differently"
        )
