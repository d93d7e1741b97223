"""api_document: the seed's document fields (fault source, API name, version, chunk size and
overlap) and ``enabled`` (a disabled document stays stored but no lookup returns it).

Revision ID: 0004_document_metadata
Revises: 0003
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_document_metadata"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_document", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fault_source", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("api_name", sa.String(length=255), nullable=True))
        batch_op.add_column(
            sa.Column("version", sa.String(length=32), server_default="v1.0", nullable=False)
        )
        batch_op.add_column(sa.Column("chunk_size", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("chunk_overlap", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("enabled", sa.Boolean(), server_default=sa.true(), nullable=False)
        )
        batch_op.create_index("ix_api_document_fault_source", ["fault_source"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("api_document", schema=None) as batch_op:
        batch_op.drop_index("ix_api_document_fault_source")
        batch_op.drop_column("enabled")
        batch_op.drop_column("chunk_overlap")
        batch_op.drop_column("chunk_size")
        batch_op.drop_column("version")
        batch_op.drop_column("api_name")
        batch_op.drop_column("fault_source")
