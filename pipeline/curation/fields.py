"""The text fields of a scenario, addressed by dotted paths (``persona``, ``history.0.content``, ``reference``...).

Preprocess reads and rewrites a scenario through these paths, and every flag names its field with one, so the
studio can point at the exact text a flag is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.records import Scenario

#: Context fields that hold free text (``date`` is a date and stays untouched).
CONTEXT_TEXT_FIELDS = ("routine", "feedback", "location")
CONTEXT_LIST_FIELDS = ("memories", "schedule", "hobbies")


def text_fields(scenario: Scenario) -> list[tuple[str, str]]:
    """Every non-empty text field as ``(path, text)`` in reading order: persona, context, history, input, reference."""
    fields: list[tuple[str, str]] = [("persona", scenario.persona)]
    context = scenario.context
    for name in CONTEXT_LIST_FIELDS:
        fields.extend((f"context.{name}.{index}", item) for index, item in enumerate(getattr(context, name)))
    for name in CONTEXT_TEXT_FIELDS:
        value = getattr(context, name)
        if value:
            fields.append((f"context.{name}", value))
    fields.extend((f"history.{index}.content", turn.content) for index, turn in enumerate(scenario.history))
    fields.extend([("user_input", scenario.user_input), ("reference", scenario.reference)])
    return [(path, text) for path, text in fields if text]


def _set_path(data: dict[str, Any], path: str, value: str) -> None:
    parts = path.split(".")
    node: Any = data
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def with_fields(scenario: Scenario, changes: Mapping[str, str]) -> Scenario:
    """A copy of ``scenario`` with the text at each path of ``changes`` replaced (validated again)."""
    if not changes:
        return scenario
    data = scenario.model_dump(mode="json")
    for path, value in changes.items():
        _set_path(data, path, value)
    return Scenario.model_validate(data)
