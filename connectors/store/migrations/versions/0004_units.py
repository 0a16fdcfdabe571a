"""units (small-to-big): the text of a unit of several chunks, on its first chunk

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 21:00:00

- `chunks.unit_text`: chunks are grouped into units (the whole document, a section, or a run of
  one section's chunks; `assets.chunking.group_units`). `parent_id` names a chunk's unit by its
  first chunk, whose `unit_text` is the document text the unit spans. NULL on every other chunk,
  on single-chunk units (their text is the chunk's own) and on rows cut before this migration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chunks") as b:
        b.add_column(sa.Column("unit_text", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chunks") as b:
        b.drop_column("unit_text")
