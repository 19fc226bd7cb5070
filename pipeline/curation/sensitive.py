"""Sensitive or offensive content, flagged (never dropped) by a curated lexicon and, optionally, an LLM classifier.

The lexicon is package data (``data/curation/sensitive_lexicon.tsv``: term, category, language);
Chinese terms match as substrings, English ones as whole words in any case. The classifier asks an
OpenAI-compatible model at temperature 0 (cached, see :mod:`pipeline.llm`) for a JSON verdict with its
reason; it sees the scenario *after* personal identifiers were replaced, so no identifier leaves the machine.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.curation.records import SensitiveFlag
from pipeline.generation.base import Message, SamplingParams
from pipeline.llm import Prompt
from pipeline.paths import data_dir
from pipeline.records import Scenario

LEXICON_FILE = "sensitive_lexicon.tsv"
CLASSIFIER_PROMPT = "classify_sensitive"
CLASSIFIER_SAMPLING = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=400, seed=0)


def lexicon_path() -> Path:
    """``data/curation/sensitive_lexicon.tsv`` (or under ``$H2H_DATA_DIR``)."""
    return data_dir() / "curation" / LEXICON_FILE


@dataclass(frozen=True)
class Lexicon:
    """Terms by category, compiled into one pattern per language."""

    categories: dict[str, str]
    pattern: re.Pattern[str] | None

    def flags(self, field: str, text: str) -> list[SensitiveFlag]:
        """One flag per lexicon term found in ``text``."""
        if self.pattern is None:
            return []
        flags = []
        for match in self.pattern.finditer(text):
            term = match.group(0)
            category = self.categories[term.lower()]
            flags.append(
                SensitiveFlag(
                    field=field,
                    span=(match.start(), match.end()),
                    source="lexicon",
                    reason=f"lexicon term {term!r} ({category})",
                    category=category,
                    text=term,
                )
            )
        return flags


def read_lexicon(path: Path) -> Lexicon:
    """Parse the TSV (``#`` lines are comments, the first other line is the header ``term category language``)."""
    rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]
    categories: dict[str, str] = {}
    chinese: list[str] = []
    english: list[str] = []
    for row in csv.DictReader(rows, delimiter="\t"):
        term, category, language = row["term"].strip(), row["category"].strip(), row["language"].strip()
        categories[term.lower()] = category
        (chinese if language == "zh" else english).append(term)
    alternatives = [re.escape(term) for term in sorted(chinese, key=len, reverse=True)]
    alternatives += [rf"(?<![A-Za-z]){re.escape(term)}(?![A-Za-z])" for term in sorted(english, key=len, reverse=True)]
    pattern = re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None
    return Lexicon(categories, pattern)


@functools.lru_cache(maxsize=4)
def load_lexicon(path: Path | None = None) -> Lexicon:
    """The lexicon at ``path`` (default: the bundled one), parsed once per process."""
    return read_lexicon(path or lexicon_path())


def classifier_messages(scenario: Scenario, prompt: Prompt) -> list[Message]:
    """The classifier's messages: its instructions, then the scenario's texts (already scrubbed of identifiers)."""
    turns = "\n".join(f"{turn.role}: {turn.content}" for turn in scenario.history)
    sections = [
        ("Persona", scenario.persona),
        ("Conversation", turns),
        ("User's message", scenario.user_input),
        ("Reference reply", scenario.reference),
    ]
    body = "\n\n".join(f"## {title}\n{text.strip()}" for title, text in sections if text.strip())
    return [{"role": "system", "content": prompt.text}, {"role": "user", "content": body}]


def _first_object(raw: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    for start in (index for index, char in enumerate(raw) if char == "{"):
        try:
            value = decoder.raw_decode(raw, start)[0]
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def classifier_flags(raw: str, *, model: str) -> list[SensitiveFlag]:
    """Read the classifier's JSON verdict (``{"sensitive", "categories", "reason"}``) into flags.

    A sensitive verdict gives one flag per category; an answer that cannot be read gives one flag of category
    ``unreadable_verdict`` (a curator looks), so nothing the classifier said is lost.
    """
    source = f"llm:{model}"
    verdict = _first_object(raw)
    if verdict is None or not isinstance(verdict.get("sensitive"), bool):
        reason = f"the classifier's answer could not be read: {raw.strip()[:200]!r}"
        return [SensitiveFlag(source=source, reason=reason, category="unreadable_verdict")]
    if not verdict["sensitive"]:
        return []
    reason = str(verdict.get("reason") or "no reason given")
    categories = verdict.get("categories") or ["unspecified"]
    names = [str(name) for name in categories] if isinstance(categories, list) else [str(categories)]
    return [SensitiveFlag(source=source, reason=reason, category=name) for name in names]
