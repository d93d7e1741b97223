"""eval_run and eval_result: the incident eval suite's runs (model, commit, prompt hash, pass rate,
cost) and each scenario's checks, so the console can list them.

Revision ID: 0006_eval_runs
Revises: 0005_session_origin
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_eval_runs"
down_revision: str | None = "0005_session_origin"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def upgrade() -> None:
    op.create_table(
        "eval_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("judge_model", sa.String(length=128), nullable=True),
        sa.Column("git_commit", sa.String(length=64), nullable=True),
        sa.Column("prompt_hash", sa.String(length=64), nullable=False),
        sa.Column("knowledge_hash", sa.String(length=64), nullable=True),
        sa.Column("embedding_model", sa.String(length=255), nullable=True),
        sa.Column("scenario_count", sa.Integer(), nullable=False),
        sa.Column("result_count", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("pass_rate", sa.Float(), nullable=True),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id"),
        **MYSQL,
    )
    with op.batch_alter_table("eval_run", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_eval_run_created_at"), ["created_at"], unique=False)

    op.create_table(
        "eval_result",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("scenario_id", sa.String(length=128), nullable=False),
        sa.Column("repeat_index", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("flow", sa.String(length=8), nullable=False),
        sa.Column("intent", sa.String(length=32), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=True),
        sa.Column("session_ids", sa.JSON(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("judge", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "scenario_id", "repeat_index", name="uq_eval_result_key"),
        **MYSQL,
    )
    with op.batch_alter_table("eval_result", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_eval_result_run_id"), ["run_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_eval_result_scenario_id"), ["scenario_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("eval_result", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_result_scenario_id"))
        batch_op.drop_index(batch_op.f("ix_eval_result_run_id"))
    op.drop_table("eval_result")
    with op.batch_alter_table("eval_run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_run_created_at"))
    op.drop_table("eval_run")
