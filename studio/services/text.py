"""Text checks at the service boundary: JSON may carry lone surrogates, which are not Unicode text."""

from __future__ import annotations

from typing import Any

from studio.models.types import STORE_INT_MAX
from studio.services.errors import InvalidInput


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
    character (``tests/studio/test_api_hostile.py`` stores a NUL verbatim).
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
