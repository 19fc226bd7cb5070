"""item fill index

Revision ID: 0010
Revises: 0009

The queue's ``fill`` order (most-answered first, then position) as an index, ``ix_item_fill``: on PostgreSQL the next
item is then one index scan that stops at the first open item no other transaction holds (``FOR NO KEY UPDATE SKIP
LOCKED``), where it took a level query and a candidate query per level tried while others held the fullest items.
Create Date: 2026-11-27 13:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_item_fill", "item", ["campaign_id", sa.text("answer_count DESC"), "position"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_item_fill", table_name="item")
