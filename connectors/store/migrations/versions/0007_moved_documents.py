"""documents that left their path by a move, served until the indexes hold the new one

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06 15:40:00

- `documents.moved_to`: set with `deleted_at` on a document whose bytes the same listing found
  at a new path: the document there. Its index entries (and chunk rows) stay, and the query
  service still serves it while that document is live with the same bytes, under the access
  both give, until no index holds it (`DocumentStore.retire_moved`): a rename took the document
  out of search from the listing to the end of the sync, and for good when that sync was
  interrupted (an operator pass).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("documents", sa.Column("moved_to", sa.String(32)))
    # every index step asks for its source's kept old paths: by this, not a scan of the source
    op.create_index("ix_documents_moved_to", "documents", ["moved_to"])


def downgrade() -> None:
    op.drop_index("ix_documents_moved_to", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("moved_to")
