"""diagnosis_session lease (owner, until, heartbeat) so a session runs on one worker at a time and a
dead worker's sessions are found; write_probe, the row health checks rewrite to prove writes work.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("diagnosis_session", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_owner", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(
            "ix_diagnosis_session_status_lease", ["status", "lease_until"], unique=False
        )
    op.create_table(
        "write_probe",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("written_by", sa.String(length=64), nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )


def downgrade() -> None:
    op.drop_table("write_probe")
    with op.batch_alter_table("diagnosis_session", schema=None) as batch_op:
        batch_op.drop_index("ix_diagnosis_session_status_lease")
        batch_op.drop_column("heartbeat_at")
        batch_op.drop_column("lease_until")
        batch_op.drop_column("lease_owner")
