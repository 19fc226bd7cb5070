"""``h2h export votes``: every stored answer of a campaign, one row per question, as CSV, JSONL or Parquet.

Each row names what was rated: the scenario (``target_id``), and for a response item its ``model`` and ``variant``
(for a live session's rating, the campaign's companion and the session's variant);
for a pair, both sides as that person saw them — ``model_a``/``variant_a`` is the response shown to them as A — and,
for a pairwise question, ``value_shown``: their choice as they made it (A, B or tie), while ``value`` keeps the
stored answer (the chosen response's id). The export is for researchers: annotators never see it.

The format follows the output's suffix, looked up in the registry of export formats
(``studio.results.export_formats``), whose row writers write the file. CSV is UTF-8 with a byte-order mark (so
Excel reads Chinese right), and cells that a spreadsheet would run as a formula (starting with = + - @, or a tab /
carriage return) get a leading apostrophe; JSONL keeps each value as answered (numbers, lists); Parquet holds the
value as text (a JSON text for numbers and lists), since one column cannot hold a question's labels and another's
numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import aliased
from sqlmodel import col

from pipeline.csvsafe import neutralise_cell as csv_cell
from studio.db import read_session
from studio.models import Answer, Campaign, Item, LiveSession, ResponseRow, User
from studio.results.export_formats import ColumnKind, format_for
from studio.results.export_formats import cell_text as value_text
from studio.services.queue import campaign_schema, get_campaign, pair_order
from studio.services.targets import target_kind
from studio.workflows import Pairwise

#: ``seconds_spent`` is what the annotator's page reported (empty when the client sent none); ``server_seconds`` is
#: what the server measured from handing the item out to storing the answer, so every answer has a time.
COLUMNS = (
    "campaign",
    "item",
    "target_id",
    "model",
    "variant",
    "model_a",
    "variant_a",
    "model_b",
    "variant_b",
    "annotator",
    "question",
    "value",
    "value_shown",
    "seconds_spent",
    "server_seconds",
    "answered_at",
)
#: How Parquet types the columns (the rest are text): the value as text — a JSON text for numbers and lists — since
#: one column cannot hold a question's labels and another's numbers.
COLUMN_KINDS: dict[str, ColumnKind] = {
    "item": "int",
    "value": "json",
    "value_shown": "json",
    "seconds_spent": "float",
    "server_seconds": "float",
}
#: Columns that hold what was rated (empty where the item has no such side).
TARGET_COLUMNS: tuple[str, ...] = ("model", "variant", "model_a", "variant_a", "model_b", "variant_b")


def neutralise_cell(value: Any) -> str:
    """The cell as text, with a leading ``'`` when a spreadsheet would read it as a formula."""
    return str(csv_cell(value_text(value)))


def target_id(item: Item, *, kind: str = "scenario") -> str:
    """The item's target as its kind names it (``studio.services.targets``): the scenario id,
    ``scenario:response_id`` or ``scenario:response_id:response_b_id``."""
    return target_kind(kind).export_target(item=item)


def campaign_questions(engine: Engine, campaign: str) -> list[str]:
    """The ids of the campaign's questions, in schema order; ``NotFound`` for an unknown campaign."""
    with read_session(engine) as session:
        found = get_campaign(session, campaign)
        return [str(question["id"]) for question in found.schema_snapshot.get("questions", [])]


def _targets(campaign: Campaign, user_id: int, item: Item, first: Any, second: Any) -> dict[str, Any]:
    """What the person rated: ``model``/``variant`` of a response item, or both sides of a pair in the order this
    person saw them (A first); ``shown`` maps each side's response id to "A"/"B"."""
    targets: dict[str, Any] = dict.fromkeys(TARGET_COLUMNS)
    if item.response_b_id is None:
        if first is not None:
            targets.update(model=first.model, variant=first.variant)
        return targets | {"shown": {}}
    shown_a, _shown_b = pair_order(campaign, user_id, item)
    side_a, side_b = (first, second) if shown_a == item.response_id else (second, first)
    targets.update(model_a=side_a.model, variant_a=side_a.variant, model_b=side_b.model, variant_b=side_b.variant)
    return targets | {"shown": {side_a.id: "A", side_b.id: "B"}}


def vote_rows(
    engine: Engine, campaign: str, *, question: str | None = None, batch: int = 5000
) -> Iterator[dict[str, Any]]:
    """The campaign's votes, one dict per (answer, question), in item then annotator order (streamed);
    only ``question``'s when it is given. Each names what was rated (:data:`TARGET_COLUMNS`, see the module)."""
    first, second = aliased(ResponseRow), aliased(ResponseRow)
    with read_session(engine) as session:
        found = get_campaign(session, campaign)
        pairwise = {q.id for q in campaign_schema(found).questions if isinstance(q, Pairwise)}
        query = (
            select(Answer, Item, col(User.username), first, second, col(LiveSession.variant))
            .join(Item, col(Item.id) == col(Answer.item_id))
            .join(User, col(User.id) == col(Answer.user_id))
            .outerjoin(first, col(first.id) == col(Item.response_id))
            .outerjoin(second, col(second.id) == col(Item.response_b_id))
            .outerjoin(LiveSession, col(LiveSession.answer_id) == col(Answer.id))
            .where(col(Answer.campaign_id) == found.id)
            .order_by(col(Item.position), col(User.username))
            .execution_options(yield_per=batch)
        )
        for answer, item, username, response, response_b, live_variant in session.execute(query):
            targets = _targets(found, answer.user_id, item, response, response_b)
            if live_variant is not None:  # a live session's rating: the campaign's companion, the session's variant
                targets.update(model=(found.live_endpoint or {}).get("model"), variant=live_variant)
            shown = targets.pop("shown")
            for asked, value in answer.values.items():
                if question is not None and asked != question:
                    continue
                yield {
                    "campaign": found.name,
                    "item": item.id,
                    "target_id": target_id(item, kind=found.target_kind),
                    **targets,
                    "annotator": username,
                    "question": asked,
                    "value": value,
                    "value_shown": shown.get(value, value) if asked in pairwise else None,
                    "seconds_spent": answer.seconds_spent,
                    "server_seconds": answer.server_seconds,
                    "answered_at": answer.created_at.isoformat(),
                }


def export_votes(engine: Engine, campaign: str, output: Path | str, *, question: str | None = None) -> int:
    """Write the campaign's votes (only ``question``'s when given) to ``output`` in the format its suffix names
    (one of the registry's: .csv, .jsonl, .parquet, …), atomically; return the number of rows.

    Raises ``ValueError`` for a suffix no format is registered for, before reading anything.
    """
    output = Path(output)
    export_format = format_for(output)  # an unknown suffix fails here, before anything is read
    asked = campaign_questions(engine, campaign)  # an unknown campaign fails here, before any file is opened
    if question is not None and question not in asked:
        raise ValueError(f"question: campaign {campaign!r} has no question {question!r}; it has {', '.join(asked)}")
    rows = vote_rows(engine, campaign, question=question)
    return export_format.write_rows(rows, output, columns=COLUMNS, kinds=COLUMN_KINDS)
