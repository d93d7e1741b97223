"""Initial schema: sessions, steps, tool invocations, documents, domains, cases, knowledge state.

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_step",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("step_key", sa.String(length=191), nullable=False),
        sa.Column("step_index", sa.Integer(), nullable=False),
        sa.Column("agent_name", sa.String(length=64), nullable=False),
        sa.Column("model_input", sa.Text(), nullable=True),
        sa.Column("model_output", sa.Text(), nullable=True),
        sa.Column("thought", sa.Text(), nullable=True),
        sa.Column("output_message", sa.JSON(), nullable=True),
        sa.Column("has_tool_call", sa.Boolean(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("token_count", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "step_key", name="uq_agent_step_session_key"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    with op.batch_alter_table("agent_step", schema=None) as batch_op:
        batch_op.create_index(
            "ix_agent_step_session_index", ["session_id", "step_index"], unique=False
        )

    op.create_table(
        "api_document",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("doc_id", sa.String(length=64), nullable=False),
        sa.Column("file_name", sa.String(length=255), nullable=False),
        sa.Column("file_path", sa.String(length=512), nullable=False),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("file_size", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("doc_id"),
        sa.UniqueConstraint("file_path"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    with op.batch_alter_table("api_document", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_document_category"), ["category"], unique=False)
        batch_op.create_index(
            "ix_api_document_status_category", ["status", "category"], unique=False
        )

    op.create_table(
        "case_library",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.Column("root_cause", sa.Text(), nullable=True),
        sa.Column("solution", sa.Text(), nullable=True),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("case_id"),
        sa.UniqueConstraint("session_id"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    with op.batch_alter_table("case_library", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_case_library_category"), ["category"], unique=False)

    op.create_table(
        "diagnosis_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("thread_id", sa.String(length=64), nullable=True),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("agent_flow", sa.String(length=16), nullable=False),
        sa.Column("total_duration_ms", sa.Integer(), nullable=True),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("total_steps", sa.Integer(), nullable=False),
        sa.Column("total_tool_calls", sa.Integer(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("self_evaluation", sa.JSON(), nullable=True),
        sa.Column("feedback", sa.String(length=16), nullable=True),
        sa.Column("feedback_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("replay_of", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    with op.batch_alter_table("diagnosis_session", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_diagnosis_session_replay_of"), ["replay_of"], unique=False
        )
        batch_op.create_index(
            "ix_diagnosis_session_status_created",
            ["status", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_diagnosis_session_thread_id"), ["thread_id"], unique=False
        )

    op.create_table(
        "knowledge_domain",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("when_to_retrieve", sa.Text(), nullable=True),
        sa.Column("document_count", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    op.create_table(
        "knowledge_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    op.create_table(
        "tool_invocation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("step_id", sa.Integer(), nullable=True),
        sa.Column("call_key", sa.String(length=191), nullable=False),
        sa.Column("tool_name", sa.String(length=64), nullable=False),
        sa.Column("input_params", sa.JSON(), nullable=True),
        sa.Column("output_preview", sa.String(length=500), nullable=True),
        sa.Column("output_length", sa.Integer(), nullable=False),
        sa.Column("retrieval_layer", sa.String(length=8), nullable=True),
        sa.Column("l0_match_count", sa.Integer(), nullable=True),
        sa.Column("l1_match_count", sa.Integer(), nullable=True),
        sa.Column("is_truncated", sa.Boolean(), nullable=False),
        sa.Column("relevance_level", sa.String(length=20), nullable=True),
        sa.Column("dedup_reason", sa.String(length=32), nullable=True),
        sa.Column("retrieval_details", sa.JSON(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "call_key", name="uq_tool_invocation_session_key"),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    with op.batch_alter_table("tool_invocation", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_tool_invocation_session_id"), ["session_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_tool_invocation_step_id"), ["step_id"], unique=False)
        batch_op.create_index(
            "ix_tool_invocation_tool_relevance",
            ["tool_name", "relevance_level"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("tool_invocation", schema=None) as batch_op:
        batch_op.drop_index("ix_tool_invocation_tool_relevance")
        batch_op.drop_index(batch_op.f("ix_tool_invocation_step_id"))
        batch_op.drop_index(batch_op.f("ix_tool_invocation_session_id"))

    op.drop_table("tool_invocation")
    op.drop_table("knowledge_state")
    op.drop_table("knowledge_domain")
    with op.batch_alter_table("diagnosis_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_diagnosis_session_thread_id"))
        batch_op.drop_index("ix_diagnosis_session_status_created")
        batch_op.drop_index(batch_op.f("ix_diagnosis_session_replay_of"))

    op.drop_table("diagnosis_session")
    with op.batch_alter_table("case_library", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_case_library_category"))

    op.drop_table("case_library")
    with op.batch_alter_table("api_document", schema=None) as batch_op:
        batch_op.drop_index("ix_api_document_status_category")
        batch_op.drop_index(batch_op.f("ix_api_document_category"))

    op.drop_table("api_document")
    with op.batch_alter_table("agent_step", schema=None) as batch_op:
        batch_op.drop_index("ix_agent_step_session_index")

    op.drop_table("agent_step")
