"""access and quality state: the ACL each generation indexed a document with, and when a
source's parse-quality check last accepted a batch

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 05:40:00

- `index_state.acl_hash`: the document's ACL hash when it was last written to that generation.
  A document whose ACL changed but cannot be rewritten in a generation (its records for that
  generation's stage versions are not in the store) is removed from it instead of being left
  under its old ACL. Rows written before this migration have NULL (unknown): such a document is
  removed when it cannot be rewritten (fail closed), and rewritten normally otherwise.
- `sources.parse_accepted_at`: parses created after this time form the batch the blocking
  parse-quality check judges; it moves only when the check passes (or warns), so a failed
  batch is judged again, identically, on the next run.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("index_state") as b:
        b.add_column(sa.Column("acl_hash", sa.String(length=16), nullable=True))
    with op.batch_alter_table("sources") as b:
        b.add_column(sa.Column("parse_accepted_at", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sources") as b:
        b.drop_column("parse_accepted_at")
    with op.batch_alter_table("index_state") as b:
        b.drop_column("acl_hash")
