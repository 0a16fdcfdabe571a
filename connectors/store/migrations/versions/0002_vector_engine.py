"""generations record the vector engine that built them

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 06:00:00

NULL on rows created before this revision: connectors.generations.vector_engine reads such a
row as Qdrant local mode (its vector index is a path) or a Qdrant server (a collection name).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('generations') as batch:
        batch.add_column(sa.Column('vector_engine', sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('generations') as batch:
        batch.drop_column('vector_engine')
