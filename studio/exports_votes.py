"""``h2h export votes``: every stored answer of a campaign, one row per question, as CSV, JSONL or Parquet.

The format follows the output's suffix. In CSV, cells that a spreadsheet would run as a formula (starting
with = + - @, or a tab / carriage return) get a leading apostrophe; JSONL keeps each value as answered
(numbers, lists); Parquet holds the value as text (a JSON text for numbers and lists), since one column
cannot hold a question's labels and another's numbers.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlmodel import col

from pipeline.csvsafe import neutralise_cell as csv_cell
from pipeline.jsonl import write_records
from studio.db import read_session
from studio.models import Answer, Item, User
from studio.services.queue import get_campaign

SUFFIXES: tuple[str, ...] = (".csv", ".jsonl", ".parquet")
#: ``seconds_spent`` is what the annotator's page reported (empty when the client sent none); ``server_seconds`` is
#: what the server measured from handing the item out to storing the answer, so every answer has a time.
COLUMNS = (
    "campaign",
    "item",
    "target_id",
    "annotator",
    "question",
    "value",
    "seconds_spent",
    "server_seconds",
    "answered_at",
)


def neutralise_cell(value: Any) -> str:
    """The cell as text, with a leading ``'`` when a spreadsheet would read it as a formula."""
    return str(csv_cell(value_text(value)))


def target_id(item: Item) -> str:
    """The item's target: the scenario id, ``scenario:response_id`` or ``scenario:response_id:response_b_id``."""
    parts = [item.scenario_id] + [str(part) for part in (item.response_id, item.response_b_id) if part is not None]
    return ":".join(parts)


def value_text(value: Any) -> str:
    """A vote's value as text: labels as they are, numbers and lists as JSON (``5``, ``["a", "b"]``)."""
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def campaign_questions(engine: Engine, campaign: str) -> list[str]:
    """The ids of the campaign's questions, in schema order; ``NotFound`` for an unknown campaign."""
    with read_session(engine) as session:
        found = get_campaign(session, campaign)
        return [str(question["id"]) for question in found.schema_snapshot.get("questions", [])]


def vote_rows(
    engine: Engine, campaign: str, *, question: str | None = None, batch: int = 5000
) -> Iterator[dict[str, Any]]:
    """The campaign's votes, one dict per (answer, question), in item then annotator order (streamed);
    only ``question``'s when it is given."""
    with read_session(engine) as session:
        found = get_campaign(session, campaign)
        query = (
            select(Answer, Item, col(User.username))
            .join(Item, col(Item.id) == col(Answer.item_id))
            .join(User, col(User.id) == col(Answer.user_id))
            .where(col(Answer.campaign_id) == found.id)
            .order_by(col(Item.position), col(User.username))
            .execution_options(yield_per=batch)
        )
        for answer, item, username in session.execute(query):
            for asked, value in answer.values.items():
                if question is not None and asked != question:
                    continue
                yield {
                    "campaign": found.name,
                    "item": item.id,
                    "target_id": target_id(item),
                    "annotator": username,
                    "question": asked,
                    "value": value,
                    "seconds_spent": answer.seconds_spent,
                    "server_seconds": answer.server_seconds,
                    "answered_at": answer.created_at.isoformat(),
                }


def export_votes(engine: Engine, campaign: str, output: Path | str, *, question: str | None = None) -> int:
    """Write the campaign's votes (only ``question``'s when given) to ``output`` in the format its suffix names
    (.csv, .jsonl or .parquet), atomically; return the number of rows.

    Raises ``ValueError`` for another suffix, before reading anything.
    """
    output = Path(output)
    suffix = output.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{output}: unknown export format {suffix!r}; use one of {', '.join(SUFFIXES)}")
    asked = campaign_questions(engine, campaign)  # an unknown campaign fails here, before any file is opened
    if question is not None and question not in asked:
        raise ValueError(f"question: campaign {campaign!r} has no question {question!r}; it has {', '.join(asked)}")
    rows = vote_rows(engine, campaign, question=question)
    if suffix == ".jsonl":
        return write_records(output, rows)
    if suffix == ".parquet":
        return _write_parquet(rows, output)
    return _write_csv(rows, output)


def _write_csv(rows: Iterator[dict[str, Any]], output: Path) -> int:
    temporary = output.with_name(output.name + ".tmp")
    count = 0
    with temporary.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow([neutralise_cell(row[column]) for column in COLUMNS])
            count += 1
    os.replace(temporary, output)
    return count


def _write_parquet(rows: Iterator[dict[str, Any]], output: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, list[Any]] = {column: [] for column in COLUMNS}
    for row in rows:
        for column in COLUMNS:
            columns[column].append(value_text(row["value"]) if column == "value" else row[column])
    types = {"item": pa.int64(), "seconds_spent": pa.float64(), "server_seconds": pa.float64()}
    table = pa.table(
        {column: pa.array(values, type=types.get(column, pa.string())) for column, values in columns.items()}
    )
    temporary = output.with_name(output.name + ".tmp")
    pq.write_table(table, temporary)
    os.replace(temporary, output)
    return int(table.num_rows)
