"""diagnosis_session.origin: who started the run (user, studio, replay, eval), so insights can keep
replays and eval runs apart from traffic. Existing replays (``replay_of`` set) become ``replay``.

Revision ID: 0005_session_origin
Revises: 0004_document_metadata
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_session_origin"
down_revision: str | None = "0004_document_metadata"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("diagnosis_session", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("origin", sa.String(length=16), server_default="user", nullable=False)
        )
        batch_op.create_index("ix_diagnosis_session_origin", ["origin"], unique=False)
    op.execute("UPDATE diagnosis_session SET origin = 'replay' WHERE replay_of IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("diagnosis_session", schema=None) as batch_op:
        batch_op.drop_index("ix_diagnosis_session_origin")
        batch_op.drop_column("origin")
