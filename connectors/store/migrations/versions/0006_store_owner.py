"""the data_dir a store belongs to

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05 11:45:00

- `store_owner`: one row naming the data_dir (by the id in its `store-id` file) whose embedded
  index files the store's generations point into. Two deployments on one database each took the
  other's sources for removed ones and published their own snapshots into the shared generation
  rows, so one sync of the second emptied the first's search; the row lets the second be refused
  (`connectors.store.ownership`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_owner",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("store_id", sa.String(64), nullable=False),
        sa.Column("data_dir", sa.Text, nullable=False),
        sa.Column("claimed_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("store_owner")
