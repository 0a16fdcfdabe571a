"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-30 13:32:14.611068
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('bindings',
    sa.Column('alias', sa.String(length=32), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('previous_generation_id', sa.Integer(), nullable=True),
    sa.Column('flipped_at', sa.Float(), nullable=False),
    sa.Column('flipped_by', sa.String(length=128), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('alias')
    )
    op.create_table('chunks',
    sa.Column('chunk_id', sa.String(length=32), nullable=False),
    sa.Column('doc_id', sa.String(length=32), nullable=False),
    sa.Column('chunk_version', sa.String(length=32), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('parse_version', sa.String(length=32), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('display_text', sa.Text(), nullable=False),
    sa.Column('embed_text', sa.Text(), nullable=False),
    sa.Column('text_hash', sa.String(length=32), nullable=False),
    sa.Column('heading_path', sa.JSON(), nullable=False),
    sa.Column('page', sa.Integer(), nullable=True),
    sa.Column('char_start', sa.Integer(), nullable=True),
    sa.Column('char_end', sa.Integer(), nullable=True),
    sa.Column('tokens', sa.Integer(), nullable=True),
    sa.Column('parent_id', sa.String(length=32), nullable=True),
    sa.PrimaryKeyConstraint('chunk_id')
    )
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.create_index('ix_chunks_doc_version', ['doc_id', 'chunk_version'], unique=False)

    op.create_table('contexts',
    sa.Column('input_hash', sa.String(length=32), nullable=False),
    sa.Column('context_version', sa.String(length=32), nullable=False),
    sa.Column('prefix', sa.Text(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=True),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('cache_read_tokens', sa.Integer(), nullable=False),
    sa.Column('cache_creation_tokens', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('input_hash', 'context_version')
    )
    with op.batch_alter_table('contexts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_contexts_content_hash'), ['content_hash'], unique=False)

    op.create_table('dead_letters',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('doc_id', sa.String(length=32), nullable=False),
    sa.Column('source', sa.String(length=64), nullable=False),
    sa.Column('external_id', sa.String(length=1024), nullable=False),
    sa.Column('stage', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.String(length=32), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('trace', sa.Text(), nullable=True),
    sa.Column('content_hash', sa.String(length=64), nullable=True),
    sa.Column('at', sa.Float(), nullable=False),
    sa.Column('resolved_at', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('dead_letters', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dead_letters_doc_id'), ['doc_id'], unique=False)

    op.create_table('documents',
    sa.Column('doc_id', sa.String(length=32), nullable=False),
    sa.Column('source', sa.String(length=64), nullable=False),
    sa.Column('external_id', sa.String(length=1024), nullable=False),
    sa.Column('uri', sa.Text(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=True),
    sa.Column('fingerprint', sa.String(length=128), nullable=True),
    sa.Column('size', sa.BigInteger(), nullable=True),
    sa.Column('acl', sa.JSON(), nullable=False),
    sa.Column('acl_hash', sa.String(length=16), nullable=False),
    sa.Column('metadata', sa.JSON(), nullable=False),
    sa.Column('source_modified_at', sa.Float(), nullable=True),
    sa.Column('first_seen', sa.Float(), nullable=False),
    sa.Column('last_seen', sa.Float(), nullable=False),
    sa.Column('changed_at', sa.Float(), nullable=False),
    sa.Column('deleted_at', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('doc_id'),
    sa.UniqueConstraint('source', 'external_id', name='uq_documents_source_external')
    )
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_documents_deleted_at'), ['deleted_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_documents_source'), ['source'], unique=False)

    op.create_table('embeddings',
    sa.Column('text_hash', sa.String(length=32), nullable=False),
    sa.Column('embedder_id', sa.String(length=64), nullable=False),
    sa.Column('dim', sa.Integer(), nullable=False),
    sa.Column('vector', sa.LargeBinary(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('text_hash', 'embedder_id')
    )
    with op.batch_alter_table('embeddings', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_embeddings_content_hash'), ['content_hash'], unique=False)

    op.create_table('events',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('source', sa.String(length=64), nullable=True),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.Column('at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('generations',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('stage_versions', sa.JSON(), nullable=False),
    sa.Column('stage_configs', sa.JSON(), nullable=False),
    sa.Column('embedder_id', sa.String(length=64), nullable=False),
    sa.Column('vector_index', sa.Text(), nullable=False),
    sa.Column('keyword_index', sa.Text(), nullable=False),
    sa.Column('vector_snapshot', sa.Text(), nullable=True),
    sa.Column('keyword_snapshot', sa.Text(), nullable=True),
    sa.Column('published_at', sa.Float(), nullable=True),
    sa.Column('counts', sa.JSON(), nullable=False),
    sa.Column('eval_report', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('promoted_at', sa.Float(), nullable=True),
    sa.Column('retired_at', sa.Float(), nullable=True),
    sa.Column('forced_by', sa.String(length=128), nullable=True),
    sa.Column('force_reason', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('index_state',
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('doc_id', sa.String(length=32), nullable=False),
    sa.Column('source', sa.String(length=64), nullable=False),
    sa.Column('digest', sa.String(length=32), nullable=False),
    sa.Column('chunks', sa.Integer(), nullable=False),
    sa.Column('indexed_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('generation_id', 'doc_id')
    )
    op.create_table('parses',
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('parse_version', sa.String(length=32), nullable=False),
    sa.Column('format', sa.String(length=16), nullable=False),
    sa.Column('doc_id', sa.String(length=32), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('blocks', sa.JSON(), nullable=True),
    sa.Column('metrics', sa.JSON(), nullable=True),
    sa.Column('page_metrics', sa.JSON(), nullable=True),
    sa.Column('doc_metadata', sa.JSON(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('reason', sa.String(length=32), nullable=True),
    sa.Column('seconds', sa.Float(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('content_hash', 'parse_version', 'format')
    )
    op.create_table('sources',
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('config', sa.JSON(), nullable=False),
    sa.Column('last_listing_at', sa.Float(), nullable=True),
    sa.Column('last_listing_count', sa.Integer(), nullable=True),
    sa.Column('last_good_listing_at', sa.Float(), nullable=True),
    sa.Column('last_good_listing_count', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('probe', sa.String(length=64), nullable=True),
    sa.PrimaryKeyConstraint('name')
    )


def downgrade() -> None:
    op.drop_table('sources')
    op.drop_table('parses')
    op.drop_table('index_state')
    op.drop_table('generations')
    op.drop_table('events')
    with op.batch_alter_table('embeddings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_embeddings_content_hash'))

    op.drop_table('embeddings')
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_documents_source'))
        batch_op.drop_index(batch_op.f('ix_documents_deleted_at'))

    op.drop_table('documents')
    with op.batch_alter_table('dead_letters', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dead_letters_doc_id'))

    op.drop_table('dead_letters')
    with op.batch_alter_table('contexts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_contexts_content_hash'))

    op.drop_table('contexts')
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.drop_index('ix_chunks_doc_version')

    op.drop_table('chunks')
    op.drop_table('bindings')
