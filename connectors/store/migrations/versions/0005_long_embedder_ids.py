"""embedder ids up to 255 characters

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05 02:20:00

- `embeddings.embedder_id`, `generations.embedder_id`: an embedder id is the model's last path
  part and a hash of its settings (`connectors.embedder.embedder_id`); a local fine-tuned model
  in a folder with a long name made one over 64 characters, which PostgreSQL refused on every
  sync (SQLite does not enforce a VARCHAR's length). Only PostgreSQL's columns change: SQLite
  would rebuild the embeddings table to change a length it never checks.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_COLUMNS = (("embeddings", "embedder_id"), ("generations", "embedder_id"))


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table, column in _COLUMNS:
        op.alter_column(table, column, type_=sa.String(255), existing_type=sa.String(64))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table, column in _COLUMNS:
        op.alter_column(table, column, type_=sa.String(64), existing_type=sa.String(255))
