"""What an annotator sees of an item: built by ONE function that whitelists fields.

Model names, variants, auto-scores, judge scores and other people's answers never reach a client
unless the campaign's schema lists them in ``reveal``. Everything here is plain data (strings,
lists); clients render it as text, never as HTML.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row

from studio.models import ResponseRow, ScenarioRow, ScoreRow

#: Always shown (the defaults of DESIGN.md): the scenario's conversation.
BASE_SCENARIO_FIELDS: tuple[str, ...] = ("persona", "history", "user_input")
#: Tags an annotator may see when ``reveal`` includes ``tags`` (never ``high_risk`` kinds beyond the flag).
REVEALABLE_TAGS: tuple[str, ...] = ("language", "emotion", "instruction_kind", "high_risk", "risk_kind")


def pair_is_swapped(seed: str, user_id: int, item_id: int) -> bool:
    """Whether person ``user_id`` sees the pair of ``item_id`` as (B, A): deterministic, unguessable without seed."""
    digest = hmac.new(seed.encode("utf-8"), f"{user_id}:{item_id}".encode(), hashlib.sha256).digest()
    return bool(digest[0] & 1)


def _history(scenario: Any) -> list[dict[str, str]]:
    return [{"role": str(turn.get("role", "")), "content": str(turn.get("content", ""))} for turn in scenario.history]


def _scores(score: Any, reveal: set[str]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    if score is None:
        return shown
    if "auto_scores" in reveal:
        shown["auto_scores"] = {
            name: getattr(score, name) for name in ("bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rougeL", "ss", "S")
        }
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
    reveal: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Return the content of one item for an annotator.

    Rows are table models or, on the answering hot path, Core rows of the same tables
    (``studio.services.queue_rows``): the same column names either way.

    ``responses`` is empty for a scenario target, one (response, score) for a response target and
    two, already in the order this person sees them (A then B), for a pair. Only whitelisted fields
    are copied; ``reveal`` (from the schema) adds reference, subtask, tags, model, variant, auto_scores
    or judge_score.
    """
    wanted = set(reveal)
    content: dict[str, Any] = {
        "persona": scenario.persona,
        "history": _history(scenario),
        "user_input": scenario.user_input,
    }
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
    return content
