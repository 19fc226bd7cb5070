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
from typing import Any, NamedTuple

from sqlalchemy import Engine, Select, select
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


def target_id(item: Any, *, kind: str = "scenario") -> str:
    """The item's target as its kind names it (``studio.services.targets``): the scenario id,
    ``scenario:response_id`` or ``scenario:response_id:response_b_id``."""
    return target_kind(kind).export_target(item=item)


def campaign_questions(engine: Engine, campaign: str) -> list[str]:
    """The ids of the campaign's questions, in schema order; ``NotFound`` for an unknown campaign."""
    with read_session(engine) as session:
        found = get_campaign(session, campaign)
        return [str(question["id"]) for question in found.schema_snapshot.get("questions", [])]


class _ItemKey(NamedTuple):
    """What the export needs of an item (the fields :func:`target_id` and ``pair_order`` read), without loading it."""

    id: int
    scenario_id: str
    response_id: int | None
    response_b_id: int | None


def _targets(campaign: Campaign, row: Any, item: _ItemKey) -> dict[str, Any]:
    """What the person rated: ``model``/``variant`` of a response item, or both sides of a pair in the order this
    person saw them (A first); ``shown`` maps each side's response id to "A"/"B"."""
    targets: dict[str, Any] = dict.fromkeys(TARGET_COLUMNS)
    if item.response_b_id is None:
        if row.model_1 is not None:
            targets.update(model=row.model_1, variant=row.variant_1)
        return targets | {"shown": {}}
    shown_a, shown_b = pair_order(campaign, row.user_id, item)
    first, second = (row.model_1, row.variant_1), (row.model_2, row.variant_2)
    (model_a, variant_a), (model_b, variant_b) = (first, second) if shown_a == item.response_id else (second, first)
    targets.update(model_a=model_a, variant_a=variant_a, model_b=model_b, variant_b=variant_b)
    return targets | {"shown": {shown_a: "A", shown_b: "B"}}


def _votes_query(campaign_id: int | None, batch: int) -> Select[Any]:
    """The campaign's answers with what each names (plain columns: no ORM object is built), in item then annotator
    order, fetched ``batch`` rows at a time (a server-side cursor on PostgreSQL)."""
    first, second = aliased(ResponseRow), aliased(ResponseRow)
    return (
        select(
            col(Answer.user_id),
            col(Answer.values),
            col(Answer.seconds_spent),
            col(Answer.server_seconds),
            col(Answer.created_at),
            col(Item.id).label("item_id"),
            col(Item.scenario_id),
            col(Item.response_id),
            col(Item.response_b_id),
            col(User.username),
            col(first.model).label("model_1"),
            col(first.variant).label("variant_1"),
            col(second.model).label("model_2"),
            col(second.variant).label("variant_2"),
            col(LiveSession.variant).label("live_variant"),
        )
        .join(Item, col(Item.id) == col(Answer.item_id))
        .join(User, col(User.id) == col(Answer.user_id))
        .outerjoin(first, col(first.id) == col(Item.response_id))
        .outerjoin(second, col(second.id) == col(Item.response_b_id))
        .outerjoin(LiveSession, col(LiveSession.answer_id) == col(Answer.id))
        .where(col(Answer.campaign_id) == campaign_id)
        .order_by(col(Item.position), col(User.username))
        .execution_options(yield_per=batch)
    )


def vote_rows(
    engine: Engine, campaign: str, *, question: str | None = None, batch: int = 5000
) -> Iterator[dict[str, Any]]:
    """The campaign's votes, one dict per (answer, question), in item then annotator order, streamed from one read
    transaction as plain rows (``batch`` at a time); only ``question``'s when it is given. Each names what was rated
    (:data:`TARGET_COLUMNS`, see the module)."""
    with read_session(engine) as session:
        found = get_campaign(session, campaign)
        pairwise = {q.id for q in campaign_schema(found).questions if isinstance(q, Pairwise)}
        companion = (found.live_endpoint or {}).get("model")
        for row in session.execute(_votes_query(found.id, batch)):
            item = _ItemKey(row.item_id, row.scenario_id, row.response_id, row.response_b_id)
            targets = _targets(found, row, item)
            if row.live_variant is not None:  # a live session's rating: the campaign's companion, the session's variant
                targets.update(model=companion, variant=row.live_variant)
            shown = targets.pop("shown")
            common = {"campaign": found.name, "item": item.id, "target_id": target_id(item, kind=found.target_kind)}
            for asked, value in row.values.items():
                if question is not None and asked != question:
                    continue
                yield {
                    **common,
                    **targets,
                    "annotator": row.username,
                    "question": asked,
                    "value": value,
                    "value_shown": shown.get(value, value) if asked in pairwise else None,
                    "seconds_spent": row.seconds_spent,
                    "server_seconds": row.server_seconds,
                    "answered_at": row.created_at.isoformat(),
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
