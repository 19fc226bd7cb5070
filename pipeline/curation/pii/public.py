"""Public numbers: crisis lines, emergency and public service numbers are no personal identifiers.

A safe companion reply gives resources ("希望24热线 400-161-9995", "call 1-800-799-7233"); replacing them by
``[PHONE]`` removes what the reply is for. A phone hit is kept (and reported as kept) when its digits are a number
of ``public_numbers.tsv`` or when its shape is a public one:

- mainland China 400/800 service numbers (400-xxx-xxxx), 95xxx/96xxx and 12xxx service numbers;
- North American toll-free numbers (1-800, 833, 844, 855, 866, 877, 888), UK freephone (0800, 0808);
- Australian 13/1300/1800 numbers; any number of 3 to 5 digits (emergency and short service numbers).
"""

from __future__ import annotations

import re

from pipeline.curation.pii.base import public_numbers

_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a mainland 400/800 service number", re.compile(r"(?:86)?[48]00\d{7}")),
    ("a mainland 95xxx/96xxx/12xxx service number", re.compile(r"(?:95|96|12)\d{3,6}")),
    ("a North American toll-free number", re.compile(r"1?8(?:00|33|44|55|66|77|88)\d{7}")),
    ("a UK freephone number", re.compile(r"(?:44|0)80[08]\d{6,7}")),
    ("an Australian 13/1300/1800 number", re.compile(r"13\d{4}|1[38]00\d{6}")),
    ("a short emergency or service number", re.compile(r"\d{3,5}")),
)


def public_number(number: str) -> str | None:
    """What public number ``number`` is (from the list, or its shape), or None for any other number."""
    digits = "".join(char for char in number if char.isdigit())
    known = public_numbers()
    for candidate in (digits, digits.removeprefix("1"), digits.removeprefix("86"), digits.removeprefix("44")):
        if candidate in known:
            return known[candidate]
    for what, shape in _SHAPES:
        if shape.fullmatch(digits):
            return what
    return None
