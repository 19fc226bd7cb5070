"""What an annotator sees of an item: built by ONE function that whitelists fields.

Model names, variants, auto-scores, judge scores and other people's answers never reach a client
unless the campaign's schema lists them in ``reveal``. Everything here is plain data (strings,
lists); clients render it as text, never as HTML.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Row, func, select
from sqlmodel import Session, col

from pipeline.prompts import CONTEXT_ORDER, context_fields
from pipeline.taxonomy import METRIC_NAMES
from studio.errors import NotFound
from studio.models import Item, ResponseRow, ScenarioRow, ScoreRow

#: Always shown (the defaults of ARCHITECTURE.md "Human evaluation"): the scenario's conversation.
BASE_SCENARIO_FIELDS: tuple[str, ...] = ("persona", "history", "user_input")
#: Tags an annotator may see when ``reveal`` includes ``tags`` (never ``high_risk`` kinds beyond the flag).
REVEALABLE_TAGS: tuple[str, ...] = ("language", "emotion", "instruction_kind", "high_risk", "risk_kind")
#: Longer texts are cut to this many characters in an item's content (a 10 MB reply is neither sent nor drawn whole);
#: ``content["cut"]`` names each cut text, and :func:`full_text` gives it whole on demand.
DISPLAY_CHARS = 20_000


def pair_is_swapped(seed: str, user_id: int, item_id: int) -> bool:
    """Whether person ``user_id`` sees the pair of ``item_id`` as (B, A): deterministic, unguessable without seed."""
    digest = hmac.new(seed.encode("utf-8"), f"{user_id}:{item_id}".encode(), hashlib.sha256).digest()
    return bool(digest[0] & 1)


def _history(scenario: Any) -> list[dict[str, str]]:
    return [{"role": str(turn.get("role", "")), "content": str(turn.get("content", ""))} for turn in scenario.history]


#: Shown wherever present, whatever the subtask: when and where the conversation happens.
ALWAYS_SHOWN_CONTEXT: frozenset[str] = frozenset({"date", "location"})


@lru_cache(maxsize=64)
def _shown_context_fields(subtask: str) -> tuple[str, ...]:
    prompted = set(context_fields(subtask)) | ALWAYS_SHOWN_CONTEXT
    return tuple(name for name in CONTEXT_ORDER if name in prompted)


def _context(scenario: Any) -> dict[str, Any]:
    """The scenario's context: the fields its subtask's prompt gave the model (``pipeline.prompts.context_fields``:
    memories for recollection, schedule, routine, hobbies or feedback for itinerary levels), and date and location
    wherever present; the empty ones left out."""
    stored = scenario.context if isinstance(scenario.context, dict) else {}
    shown: dict[str, Any] = {}
    for name in _shown_context_fields(str(scenario.subtask)):
        value = stored.get(name)
        if isinstance(value, list):
            value = [str(entry) for entry in value if str(entry).strip()]
        if value:
            shown[name] = value if isinstance(value, list) else str(value)
    return shown


def _scores(score: Any, reveal: set[str]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    if score is None:
        return shown
    if "auto_scores" in reveal:
        shown["auto_scores"] = {name: getattr(score, name) for name in METRIC_NAMES}
    if "judge_score" in reveal:
        shown["judge_score"] = {"J_judge": score.J_judge, "J": score.J}
    return shown


def _response(response: Any, score: Any, reveal: set[str]) -> dict[str, Any]:
    shown: dict[str, Any] = {"text": response.text}
    if "model" in reveal:
        shown["model"] = response.model
    if "variant" in reveal:
        shown["variant"] = response.variant
    shown.update(_scores(score, reveal))
    return shown


def build_item_content(
    *,
    scenario: ScenarioRow | Row[*tuple[Any, ...]],
    responses: Sequence[tuple[ResponseRow | Row[*tuple[Any, ...]], ScoreRow | Row[*tuple[Any, ...]] | None]],
    reveal: Sequence[str] = (),
    display_chars: int | None = DISPLAY_CHARS,
) -> dict[str, Any]:
    """Return the content of one item for an annotator.

    Rows are table models or, on the answering hot path, Core rows of the same tables
    (``studio.services.queue_rows``): the same column names either way.

    ``responses`` is empty for a scenario target, one (response, score) for a response target and
    two, already in the order this person sees them (A then B), for a pair. Only whitelisted fields
    are copied; ``reveal`` (from the schema) adds reference, subtask, tags, model, variant, auto_scores
    or judge_score. The scenario's ``context`` (what the model was prompted with) is always shown. Texts longer
    than ``display_chars`` are cut (see :func:`cut_long_texts`); None keeps them whole.
    """
    wanted = set(reveal)
    content: dict[str, Any] = {
        "persona": scenario.persona,
        "history": _history(scenario),
        "user_input": scenario.user_input,
    }
    context = _context(scenario)
    if context:
        content["context"] = context
    if "reference" in wanted:
        content["reference"] = scenario.reference
    if "subtask" in wanted:
        content["subtask"] = scenario.subtask
    if "tags" in wanted:
        content["tags"] = {name: scenario.tags.get(name) for name in REVEALABLE_TAGS if name in scenario.tags}
    if len(responses) == 1:
        content["response"] = _response(*responses[0], wanted)
    elif len(responses) == 2:
        content["response_a"] = _response(*responses[0], wanted)
        content["response_b"] = _response(*responses[1], wanted)
    return content if display_chars is None else cut_long_texts(content, display_chars=display_chars)


def _cut(value: Any, path: str, limit: int, cuts: list[dict[str, Any]]) -> Any:
    if isinstance(value, str) and len(value) > limit:
        cuts.append({"field": path, "shown_chars": limit, "total_chars": len(value)})
        return value[:limit]
    if isinstance(value, dict):
        return {key: _cut(entry, f"{path}.{key}" if path else str(key), limit, cuts) for key, entry in value.items()}
    if isinstance(value, list):
        return [_cut(entry, f"{path}.{index}", limit, cuts) for index, entry in enumerate(value)]
    return value


def cut_long_texts(content: dict[str, Any], *, display_chars: int) -> dict[str, Any]:
    """``content`` with every text longer than ``display_chars`` cut to its first ``display_chars`` characters, and
    ``cut``: one ``{"field", "shown_chars", "total_chars"}`` per cut text (``field`` is its dotted path, e.g.
    ``response.text`` or ``history.2.content``, the name :func:`full_text` takes); no ``cut`` key when none was."""
    cuts: list[dict[str, Any]] = []
    shortened: dict[str, Any] = _cut(content, "", display_chars, cuts)
    if cuts:
        shortened["cut"] = cuts
    return shortened


def full_text(content: dict[str, Any], field: str) -> str:
    """The text at dotted path ``field`` of an item's uncut content; ``NotFound`` when no text is there."""
    value: Any = content
    for part in field.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise NotFound(f"field: the item has no text {field!r}")
    if not isinstance(value, str):
        raise NotFound(f"field: {field!r} is not a text of the item")
    return value


#: Characters of a scenario's user input that name an item in a person's list of their answers.
EXCERPT_CHARS = 48


def user_input_excerpts(session: Session, item_ids: Sequence[int]) -> dict[int, str]:
    """The first :data:`EXCERPT_CHARS` characters of each item's user input (one query), by item id."""
    if not item_ids:
        return {}
    query = (
        select(col(Item.id), func.substr(col(ScenarioRow.user_input), 1, EXCERPT_CHARS + 1))
        .join(ScenarioRow, col(ScenarioRow.id) == col(Item.scenario_id))
        .where(col(Item.id).in_(list(item_ids)))
    )
    excerpts = {}
    for item_id, text in session.execute(query):
        flat = " ".join(str(text or "").split())
        excerpts[int(item_id)] = flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS].rstrip() + "…"
    return excerpts
