"""The crisis tripwire: crisis signals in a user's message, and the SAP behaviours of the companion's reply.

A live session flags a user turn that carries a crisis signal (suicidal ideation or self-harm, Chinese or
English), checks the companion's reply for the paper's SAP behaviours (empathy, a risk check, resources; neither
dismissive nor a change of topic) and marks the session for expert review. This module is the pure detection:

* :func:`crisis_signals` — the lexicon (``data/live/crisis_lexicon.yaml``, or ``$H2H_DATA_DIR/live/``) on
  normalised text: NFKC (full-width letters), casefold, curly quotes, spelt-out letters ("k i l l") joined and
  separators between Chinese characters dropped; an exception (idiom, accident, denial, impersonal mention)
  overlapping a cue suppresses it. Regexes may name the lexicon's ``terms:`` (``{intent_en}``), so cues compose
  vocabularies (intent + ending, harm verb + body part) instead of listing sentences. Spans are offsets in the
  *original* text.
* :func:`classifier_signals` — an optional HTTP classifier (``POST {"text": ...}``).
* :func:`tripwire` — both; a classifier failure is logged and the lexicon's signals stand.
* :func:`check_sap_reply` — the SAP behaviours of a reply.

The lexicon's header documents the kinds and the idiom/negation decisions.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

import httpx
import yaml

from pipeline.paths import data_dir

logger = logging.getLogger(__name__)

CrisisKind = Literal["suicidal_ideation", "self_harm"]
CRISIS_KINDS: tuple[CrisisKind, ...] = get_args(CrisisKind)
LANGUAGES = ("zh", "en")
SAP_BEHAVIOURS = ("empathy", "risk_check", "resources", "dismissive", "topic_change")
LEXICON_FILE = "crisis_lexicon.yaml"

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Separators an obfuscated word may carry: "自 杀", "自*杀"; "k i l l", "k.i.l.l".
_CJK_GAP = re.compile(rf"(?<=[{_CJK}])[\s*.\-_·]+(?=[{_CJK}])")
_SPELT_OUT = re.compile(r"(?<![a-z0-9])[a-z](?:[\s.\-_*]+[a-z](?![a-z0-9])){2,}")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "`": "'"})


class TripwireError(ValueError):
    """The lexicon file or the classifier's answer is unusable; the message says which and why."""


@dataclass(frozen=True)
class CrisisSignal:
    """One crisis signal in a user's message: its kind, the lexicon entry (or classifier verdict) and its span."""

    kind: CrisisKind
    cue: str
    language: str
    start: int
    end: int
    source: str = "lexicon"


@dataclass(frozen=True)
class _Entry:
    """One compiled lexicon entry: ``label`` is the entry as written in the YAML."""

    label: str
    language: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class CrisisLexicon:
    """The loaded lexicon: cues by kind, exceptions, and SAP-behaviour cues by behaviour."""

    path: Path
    cues: Mapping[CrisisKind, tuple[_Entry, ...]]
    exceptions: tuple[_Entry, ...]
    sap: Mapping[str, tuple[_Entry, ...]]


@dataclass(frozen=True)
class SapCheck:
    """Which SAP behaviours a companion reply shows (and which anti-patterns)."""

    empathy: bool
    risk_check: bool
    resources: bool
    dismissive: bool
    topic_change: bool

    @property
    def passed(self) -> bool:
        """Empathy, a risk check and resources, and neither dismissive nor a change of topic."""
        return self.empathy and self.risk_check and self.resources and not self.dismissive and not self.topic_change

    def missing(self) -> list[str]:
        """Human words for what is missing or wrong, in a fixed order; empty when :attr:`passed`."""
        problems = [
            (not self.empathy, "no empathy"),
            (not self.risk_check, "no risk check"),
            (not self.resources, "no resources"),
            (self.dismissive, "dismissive"),
            (self.topic_change, "changes the topic"),
        ]
        return [words for wrong, words in problems if wrong]


@dataclass(frozen=True)
class ClassifierEndpoint:
    """An optional crisis classifier: ``POST url`` with ``{"text": ...}``."""

    url: str
    timeout_s: float = 5.0


# ---------------------------------------------------------------- loading


def lexicon_path() -> Path:
    """``data/live/crisis_lexicon.yaml`` (or under ``$H2H_DATA_DIR``), resolved at call time."""
    return data_dir() / "live" / LEXICON_FILE


_TERM = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def _expand(text: str, *, terms: Mapping[str, str], where: str) -> str:
    """``{name}`` in a regex becomes the named term's alternation; quantifiers like ``{0,3}`` are left alone."""

    def term(match: re.Match[str]) -> str:
        if match.group(1) not in terms:
            raise TripwireError(f"{where}: unknown term {{{match.group(1)}}} in {text!r}")
        return terms[match.group(1)]

    return _TERM.sub(term, text)


def _compile(text: str, *, language: str, regex: bool, where: str, terms: Mapping[str, str]) -> _Entry:
    if regex:
        source = _expand(text, terms=terms, where=where)
    elif language == "zh":
        source = re.escape(text.casefold())
    else:
        source = r"\s+".join(re.escape(word) for word in text.casefold().split())
    if language == "en":
        # English entries start and end at a letter boundary; \b would not, next to a Chinese character.
        source = rf"(?<![a-z0-9])(?:{source})(?![a-z0-9])"
    try:
        return _Entry(label=text, language=language, pattern=re.compile(source))
    except re.error as error:
        raise TripwireError(f"{where}: bad regex {text!r}: {error}") from error


def _block_entries(block: Any, *, where: str, terms: Mapping[str, str]) -> tuple[_Entry, ...]:
    """Entries of a ``{language: {phrases: [...], regexes: [...]}}`` block; regexes may name ``{terms}``."""
    if not isinstance(block, dict) or not set(block) <= set(LANGUAGES):
        raise TripwireError(f"{where}: expected a mapping of languages {LANGUAGES}, got {block!r:.80}")
    entries: list[_Entry] = []
    for language, lists in block.items():
        if not isinstance(lists, dict) or not set(lists) <= {"phrases", "regexes"}:
            raise TripwireError(f"{where}.{language}: expected phrases: and/or regexes:")
        for key in ("phrases", "regexes"):
            items = lists.get(key) or []
            if not isinstance(items, list) or not all(isinstance(item, str) and item for item in items):
                raise TripwireError(f"{where}.{language}.{key}: expected a list of non-empty strings")
            place = f"{where}.{language}.{key}"
            entries += [
                _compile(item, language=language, regex=key == "regexes", where=place, terms=terms) for item in items
            ]
    return tuple(entries)


def _terms(raw: Any, *, where: str) -> dict[str, str]:
    """The ``terms:`` vocabulary: name -> list of regex alternatives, each compiled to ``(?:a|b|...)``.

    A term may name other terms, in any order (a YAML round trip sorts keys); a cycle is refused.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TripwireError(f"{where}: terms must map names to lists of regexes")
    for name, items in raw.items():
        if not isinstance(name, str) or not _TERM.fullmatch(f"{{{name}}}"):
            raise TripwireError(f"{where}: bad term name {name!r}")
        if not isinstance(items, list) or not items or not all(isinstance(item, str) and item for item in items):
            raise TripwireError(f"{where}.{name}: expected a non-empty list of non-empty strings")
    terms: dict[str, str] = {}
    for name in raw:
        _resolve(name, raw=raw, terms=terms, pending=(), where=where)
    return terms


def _resolve(
    name: str, *, raw: Mapping[str, list[str]], terms: dict[str, str], pending: tuple[str, ...], where: str
) -> str:
    """Expand term ``name`` (memoised in ``terms``), expanding the terms it names first."""
    if name in terms:
        return terms[name]
    if name in pending:
        raise TripwireError(f"{where}: terms refer to each other in a cycle: {' -> '.join((*pending, name))}")
    if name not in raw:
        raise TripwireError(f"{where}.{pending[-1]}: unknown term {{{name}}}")
    for inner in {m.group(1) for item in raw[name] for m in _TERM.finditer(item)}:
        _resolve(inner, raw=raw, terms=terms, pending=(*pending, name), where=where)
    parts = [_expand(item, terms=terms, where=f"{where}.{name}") for item in raw[name]]
    terms[name] = "(?:" + "|".join(parts) + ")"
    return terms[name]


def read_crisis_lexicon(path: Path) -> CrisisLexicon:
    """Parse and compile the lexicon at ``path``; :class:`TripwireError` names the place of any problem."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise TripwireError(f"crisis lexicon {path}: {error}") from error
    if not isinstance(raw, dict) or not {"cues", "exceptions", "sap"} <= set(raw):
        raise TripwireError(f"crisis lexicon {path}: expected the keys cues, exceptions and sap")
    cues = raw["cues"]
    if not isinstance(cues, dict) or set(cues) != set(CRISIS_KINDS):
        raise TripwireError(f"crisis lexicon {path}: cues must have exactly the kinds {CRISIS_KINDS}")
    sap = raw["sap"]
    if not isinstance(sap, dict) or set(sap) != set(SAP_BEHAVIOURS):
        raise TripwireError(f"crisis lexicon {path}: sap must have exactly the behaviours {SAP_BEHAVIOURS}")
    terms = _terms(raw.get("terms"), where=f"{path}: terms")
    return CrisisLexicon(
        path=path,
        cues={kind: _block_entries(cues[kind], where=f"{path}: cues.{kind}", terms=terms) for kind in CRISIS_KINDS},
        exceptions=_block_entries(raw["exceptions"], where=f"{path}: exceptions", terms=terms),
        sap={name: _block_entries(sap[name], where=f"{path}: sap.{name}", terms=terms) for name in SAP_BEHAVIOURS},
    )


@functools.lru_cache(maxsize=4)
def _cached_lexicon(path: Path) -> CrisisLexicon:
    return read_crisis_lexicon(path)


def load_crisis_lexicon(path: Path | None = None) -> CrisisLexicon:
    """The lexicon at ``path`` (default: :func:`lexicon_path`, so ``$H2H_DATA_DIR`` counts), parsed once per path."""
    return _cached_lexicon(path or lexicon_path())


# ---------------------------------------------------------------- normalising


def normalise(text: str) -> tuple[str, list[int]]:
    """The text the lexicon matches, and for each of its characters the index of the original character.

    Per character NFKC and casefold (so the offsets stay traceable), curly quotes as ``'``; then separators inside
    spelt-out letters ("k i l l") and between two Chinese characters ("自 杀") are dropped.
    """
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        for out in unicodedata.normalize("NFKC", char).casefold().translate(_QUOTES):
            chars.append(out)
            origin.append(index)
    folded = "".join(chars)
    drop: set[int] = set()
    for match in _CJK_GAP.finditer(folded):
        drop.update(range(match.start(), match.end()))
    for match in _SPELT_OUT.finditer(folded):
        drop.update(i for i in range(match.start(), match.end()) if not folded[i].isalpha())
    kept = [i for i in range(len(folded)) if i not in drop]
    return "".join(folded[i] for i in kept), [origin[i] for i in kept]


def _spans(entries: tuple[_Entry, ...], text: str) -> list[tuple[_Entry, int, int]]:
    return [
        (entry, m.start(), m.end()) for entry in entries for m in entry.pattern.finditer(text) if m.end() > m.start()
    ]


# ---------------------------------------------------------------- user side


def crisis_signals(text: str, *, lexicon: CrisisLexicon | None = None) -> list[CrisisSignal]:
    """The lexicon's crisis signals in ``text``, ordered by position; spans index the original ``text``.

    A cue overlapped by an exception is dropped; of overlapping cues of the same kind only the widest stays.
    """
    lexicon = lexicon or load_crisis_lexicon()
    folded, origin = normalise(text)
    excepted = _spans(lexicon.exceptions, folded)
    found: list[tuple[CrisisKind, _Entry, int, int]] = []
    for kind in CRISIS_KINDS:
        for entry, start, end in _spans(lexicon.cues[kind], folded):
            if not any(start < x_end and x_start < end for _, x_start, x_end in excepted):
                found.append((kind, entry, start, end))
    found.sort(key=lambda item: (item[2], -(item[3] - item[2])))
    kept: list[tuple[CrisisKind, _Entry, int, int]] = []
    for kind, entry, start, end in found:
        if not any(k == kind and s <= start and end <= e for k, _, s, e in kept):
            kept.append((kind, entry, start, end))
    return [
        CrisisSignal(kind=kind, cue=entry.label, language=entry.language, start=origin[start], end=origin[end - 1] + 1)
        for kind, entry, start, end in kept
    ]


def _language_of(text: str) -> str:
    return "zh" if re.search(f"[{_CJK}]", text) else "en"


def _verdict(body: Any, *, url: str) -> tuple[bool, CrisisKind | None, float]:
    """Validate the classifier's JSON body: ``{"crisis": bool, "kind": kind|null, "score": number}``."""
    if not isinstance(body, dict):
        raise TripwireError(f"crisis classifier {url}: expected a JSON object, got {body!r:.80}")
    crisis, kind, score = body.get("crisis"), body.get("kind"), body.get("score")
    if not isinstance(crisis, bool):
        raise TripwireError(f"crisis classifier {url}: 'crisis' must be true or false, got {crisis!r:.40}")
    if kind is not None and kind not in CRISIS_KINDS:
        raise TripwireError(f"crisis classifier {url}: 'kind' must be one of {CRISIS_KINDS} or null, got {kind!r:.40}")
    if crisis and kind is None:
        raise TripwireError(f"crisis classifier {url}: 'crisis' is true but 'kind' is null")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise TripwireError(f"crisis classifier {url}: 'score' must be a number, got {score!r:.40}")
    return crisis, cast("CrisisKind | None", kind), float(score)


def classifier_signals(text: str, *, endpoint: ClassifierEndpoint) -> list[CrisisSignal]:
    """Ask the classifier; one whole-text signal when it says crisis, none otherwise.

    Raises :class:`TripwireError` on a network error, a non-2xx status or a malformed body.
    """
    try:
        response = httpx.post(endpoint.url, json={"text": text}, timeout=endpoint.timeout_s)
        response.raise_for_status()
        body = response.json()
    except httpx.HTTPError as error:
        raise TripwireError(f"crisis classifier {endpoint.url}: {type(error).__name__}: {error}") from error
    except ValueError as error:  # the body is not JSON
        raise TripwireError(f"crisis classifier {endpoint.url}: the answer is not JSON: {error}") from error
    crisis, kind, score = _verdict(body, url=endpoint.url)
    if not crisis or kind is None:
        return []
    cue = f"classifier score {score:.2f}"
    return [CrisisSignal(kind=kind, cue=cue, language=_language_of(text), start=0, end=len(text), source="classifier")]


def tripwire(
    text: str, *, lexicon: CrisisLexicon | None = None, classifier: ClassifierEndpoint | None = None
) -> list[CrisisSignal]:
    """The lexicon's signals, then the classifier's (if any); a failing classifier is logged, the lexicon stands."""
    signals = crisis_signals(text, lexicon=lexicon)
    if classifier is None:
        return signals
    try:
        return signals + classifier_signals(text, endpoint=classifier)
    except TripwireError as error:
        logger.warning("crisis classifier failed, lexicon signals only: %s", error)
        return signals


# ---------------------------------------------------------------- companion side


def check_sap_reply(reply: str, *, lexicon: CrisisLexicon | None = None) -> SapCheck:
    """Which SAP behaviours (and anti-patterns) the companion's ``reply`` shows, by the lexicon's ``sap`` cues."""
    lexicon = lexicon or load_crisis_lexicon()
    folded, _ = normalise(reply)
    shown = {name: any(entry.pattern.search(folded) for entry in lexicon.sap[name]) for name in SAP_BEHAVIOURS}
    return SapCheck(**shown)
