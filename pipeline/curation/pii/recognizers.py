"""Presidio pattern recognizers for the identifiers preprocess replaces, run without any NER model.

Presidio's own recognizers serve where they fit (e-mail, URL, IP, phone numbers through ``phonenumbers``,
credit cards with Luhn); ours add the Chinese formats it lacks: mainland ID-card numbers (ISO 7064 MOD 11-2
checksum and a real birth date), mainland mobile numbers, and bank cards of any issuer (UnionPay's 62...
16-19 digit numbers included), Luhn-checked. The engine uses Presidio's ``NoOpNlpEngine``: no spaCy model is
loaded (none can be downloaded here), so nothing depends on NER.

E-mail validation asks ``tldextract`` for the domain's suffix; it is built with no suffix-list URLs so it uses the
snapshot bundled with it and never reaches the network.
"""

from __future__ import annotations

import functools
import re
from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

#: Presidio runs every recognizer under this one language code: the patterns are language-independent, and
#: the text they see is the "latin view" of :func:`pipeline.curation.pii.latin_view`.
LANGUAGE = "en"
ID_CARD_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
ID_CARD_CHECK = "10X98765432"
#: Our entity names for Presidio's.
ENTITY_OF: dict[str, str] = {
    "EMAIL_ADDRESS": "EMAIL",
    "URL": "URL",
    "IP_ADDRESS": "IP",
    "PHONE_NUMBER": "PHONE",
    "CN_MOBILE": "PHONE",
    "CREDIT_CARD": "BANK_CARD",
    "BANK_CARD": "BANK_CARD",
    "CN_ID_CARD": "ID_CARD",
    "STREET_ADDRESS": "ADDRESS",
}
#: When two hits overlap with the same length, the more specific one wins (an ID number is not a phone).
ENTITY_PRIORITY: dict[str, int] = {
    "ID_CARD": 7,
    "BANK_CARD": 6,
    "EMAIL": 5,
    "URL": 4,
    "IP": 4,
    "PHONE": 3,
    "ADDRESS": 2,
    "NAME": 1,
}
PHONE_REGIONS = ("CN", "HK", "TW", "MO", "SG", "JP", "KR", "US", "GB", "DE", "FR", "AU", "CA", "IN")


def id_card_checksum_ok(number: str) -> bool:
    """True when an 18-character mainland ID number's last character is its ISO 7064 MOD 11-2 check digit."""
    if not re.fullmatch(r"\d{17}[\dXx]", number):
        return False
    total = sum(int(digit) * weight for digit, weight in zip(number[:17], ID_CARD_WEIGHTS, strict=True))
    return ID_CARD_CHECK[total % 11] == number[17].upper()


def id_card_birth_date_ok(number: str) -> bool:
    """True when digits 7-14 are a real date between 1900-01-01 and today."""
    try:
        born = date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return False
    return date(1900, 1, 1) <= born <= date.today()


def luhn_ok(number: str) -> bool:
    """The Luhn check every payment card number passes (digits only; separators are ignored)."""
    digits = [int(char) for char in number if char.isdigit()]
    if len(digits) < 12:
        return False
    total = 0
    for position, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if position % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def _pattern_recognizer(entity: str, name: str, regex: str, score: float, validate: Any = None) -> Any:
    """A Presidio PatternRecognizer for one regex; ``validate(text) -> bool`` filters its matches."""
    from presidio_analyzer import Pattern, PatternRecognizer

    class ValidatedPatternRecognizer(PatternRecognizer):
        def validate_result(self, pattern_text: str) -> bool | None:
            return None if validate is None else bool(validate(pattern_text))

    return ValidatedPatternRecognizer(
        supported_entity=entity,
        name=name,
        patterns=[Pattern(name, regex, score)],
        supported_language=LANGUAGE,
        global_regex_flags=re.MULTILINE,
    )


def _offline_email_recognizer() -> Any:
    """Presidio's e-mail recognizer, validating domains against tldextract's bundled suffix list only."""
    import tldextract
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return bool(extract(pattern_text).fqdn)

    return OfflineEmailRecognizer(supported_language=LANGUAGE, name="EmailRecognizer")


# A digit run never continues past a match's edges, so parts of longer numbers are not taken.
_NO_DIGIT_BEFORE, _NO_DIGIT_AFTER = r"(?<![\d.+-])", r"(?![\d])"
CN_ID_CARD_REGEX = (
    _NO_DIGIT_BEFORE
    + r"[1-8]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]"
    + (r"(?![\dA-Za-z])")
)
CN_MOBILE_REGEX = _NO_DIGIT_BEFORE + r"(?:\+?86[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}" + _NO_DIGIT_AFTER
BANK_CARD_REGEX = _NO_DIGIT_BEFORE + r"(?:\d{4}[\s-]?){3}\d{4}(?:\d{1,3})?(?![\dA-Za-z])"
STREET_SUFFIX = (
    r"(?:Street|St\.?|Avenue|Ave\.?|Road|Rd\.?|Boulevard|Blvd\.?|Lane|Ln\.?|Drive|Dr\.?|Court|Ct\.?|Way|Place|Pl\.?"
    r"|Terrace)"
)
STREET_REGEX = (
    r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}"
    + STREET_SUFFIX
    + r"(?![A-Za-z])(?:,?\s*(?:Apt\.?|Apartment|Suite|Unit|#)\s*\w+)?"
)


def _recognizers() -> list[Any]:
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UrlRecognizer,
    )

    return [
        _offline_email_recognizer(),
        UrlRecognizer(supported_language=LANGUAGE),
        IpRecognizer(supported_language=LANGUAGE),
        PhoneRecognizer(supported_language=LANGUAGE, supported_regions=PHONE_REGIONS),
        CreditCardRecognizer(supported_language=LANGUAGE),
        _pattern_recognizer(
            "CN_ID_CARD",
            "h2h_cn_id_card",
            CN_ID_CARD_REGEX,
            1.0,
            lambda text: id_card_checksum_ok(text) and id_card_birth_date_ok(text),
        ),
        _pattern_recognizer("CN_MOBILE", "h2h_cn_mobile", CN_MOBILE_REGEX, 0.8),
        _pattern_recognizer("BANK_CARD", "h2h_bank_card_luhn", BANK_CARD_REGEX, 0.9, luhn_ok),
        _pattern_recognizer("STREET_ADDRESS", "h2h_en_street", STREET_REGEX, 0.6),
    ]


@functools.lru_cache(maxsize=1)
def analyzer() -> AnalyzerEngine:
    """The Presidio analyzer with our recognizers and the no-op NLP engine (built once per process)."""
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    registry = RecognizerRegistry(recognizers=_recognizers(), supported_languages=[LANGUAGE])
    engine = NoOpNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": "none"}])
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=[LANGUAGE])
