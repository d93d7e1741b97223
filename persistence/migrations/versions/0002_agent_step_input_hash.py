"""agent_step.input_hash: a digest of the full model input, so a replay can name the first step
whose input changed (e.g. after a prompt edit).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("agent_step", schema=None) as batch_op:
        batch_op.add_column(sa.Column("input_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_step", schema=None) as batch_op:
        batch_op.drop_column("input_hash")
