"""SQLModel tables. The same definitions migrate identically on SQLite and MySQL/MariaDB/TiDB.

Datetimes are timezone-aware UTC (SQLModel enforces it). JSON columns store text with ``ensure_ascii=False`` (see ``db.py``) so
Chinese stays readable in the database. Idempotency keys (``step_key``, ``call_key``) let a resumed or
replayed run write its rows once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

# MySQL needs utf8mb4 for Chinese and emoji; SQLite ignores these.
MYSQL_TABLE_ARGS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def utcnow() -> datetime:
    return datetime.now(UTC)


def _json(nullable: bool = True) -> Any:
    return Field(default=None, sa_column=sa.Column(sa.JSON, nullable=nullable))


def _text(nullable: bool = True) -> Any:
    return Field(default=None, sa_column=sa.Column(sa.Text, nullable=nullable))


def _created() -> Any:
    return Field(default_factory=utcnow, nullable=False)


class SessionStatus(StrEnum):
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"


class AgentFlow(StrEnum):
    CHAT = "CHAT"
    AI_OPS = "AI_OPS"


class SessionOrigin(StrEnum):
    """Who started a run: insights count ``user`` and ``studio`` runs as traffic; replays and eval
    runs are recorded the same way but kept apart."""

    USER = "user"
    STUDIO = "studio"
    REPLAY = "replay"
    EVAL = "eval"


# The runs insights count as traffic: people asking (console, API, Studio), not replays or evals.
TRAFFIC_ORIGINS = (SessionOrigin.USER.value, SessionOrigin.STUDIO.value)


DEFAULT_VERSION = "v1.0"


class DocumentStatus(StrEnum):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    INDEXED = "INDEXED"
    FAILED = "FAILED"


class DiagnosisSession(SQLModel, table=True):
    """One run: one user question or one alert analysis on a conversation thread."""

    __tablename__ = "diagnosis_session"
    __table_args__ = (
        sa.Index("ix_diagnosis_session_status_created", "status", "created_at"),
        sa.Index("ix_diagnosis_session_status_lease", "status", "lease_until"),
        MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=64, unique=True, nullable=False)
    thread_id: str | None = Field(default=None, max_length=64, index=True)
    query: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    status: str = Field(default=SessionStatus.RUNNING, max_length=16, nullable=False)
    agent_flow: str = Field(default=AgentFlow.CHAT, max_length=16, nullable=False)
    total_duration_ms: int | None = None
    total_tokens: int = Field(default=0, nullable=False)
    total_steps: int = Field(default=0, nullable=False)
    total_tool_calls: int = Field(default=0, nullable=False)
    answer: str | None = _text()
    error_message: str | None = _text()
    self_evaluation: dict[str, Any] | None = _json()
    feedback: str | None = Field(default=None, max_length=16)
    feedback_at: datetime | None = None
    replay_of: str | None = Field(default=None, max_length=64, index=True)
    origin: str = Field(
        default=SessionOrigin.USER,
        max_length=16,
        nullable=False,
        index=True,
        sa_column_kwargs={"server_default": SessionOrigin.USER.value},
    )
    # The run's lease (``persistence/leases.py``): the run attempt holding it and until when. The
    # holder renews it while the run streams; a session runs on one worker at a time, and a RUNNING
    # session whose lease ran out belonged to a worker that died.
    lease_owner: str | None = Field(default=None, max_length=64)
    lease_until: datetime | None = None
    heartbeat_at: datetime | None = None
    created_at: datetime = _created()
    updated_at: datetime = _created()
    completed_at: datetime | None = None


class AgentStep(SQLModel, table=True):
    """One model call inside a run."""

    __tablename__ = "agent_step"
    __table_args__ = (
        sa.UniqueConstraint("session_id", "step_key", name="uq_agent_step_session_key"),
        sa.Index("ix_agent_step_session_index", "session_id", "step_index"),
        MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=64, nullable=False)
    step_key: str = Field(max_length=191, nullable=False)
    step_index: int = Field(nullable=False)
    agent_name: str = Field(max_length=64, nullable=False)
    model_input: str | None = _text()
    model_output: str | None = _text()
    thought: str | None = _text()
    output_message: dict[str, Any] | None = _json()  # full AIMessage, for replay
    input_hash: str | None = Field(default=None, max_length=64)  # sha256 of the full model input
    has_tool_call: bool = Field(default=False, nullable=False)
    duration_ms: int | None = None
    token_count: int | None = None
    created_at: datetime = _created()


class ToolInvocation(SQLModel, table=True):
    """One tool call, with the retrieval facts FS-6 asks to query."""

    __tablename__ = "tool_invocation"
    __table_args__ = (
        sa.UniqueConstraint("session_id", "call_key", name="uq_tool_invocation_session_key"),
        sa.Index("ix_tool_invocation_tool_relevance", "tool_name", "relevance_level"),
        MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=64, nullable=False, index=True)
    step_id: int | None = Field(default=None, index=True)
    call_key: str = Field(max_length=191, nullable=False)
    tool_name: str = Field(max_length=64, nullable=False)
    input_params: dict[str, Any] | None = _json()
    output_preview: str | None = Field(default=None, max_length=500)
    output_length: int = Field(default=0, nullable=False)
    retrieval_layer: str | None = Field(default=None, max_length=8)
    l0_match_count: int | None = None
    l1_match_count: int | None = None
    is_truncated: bool = Field(default=False, nullable=False)
    relevance_level: str | None = Field(default=None, max_length=20)
    dedup_reason: str | None = Field(default=None, max_length=32)
    retrieval_details: dict[str, Any] | None = _json()
    duration_ms: int | None = None
    success: bool = Field(default=True, nullable=False)
    error_message: str | None = _text()
    created_at: datetime = _created()


class ApiDocument(SQLModel, table=True):
    """One knowledge-base file and its indexing state."""

    __tablename__ = "api_document"
    __table_args__ = (
        sa.Index("ix_api_document_status_category", "status", "category"),
        sa.Index("ix_api_document_fault_source", "fault_source"),
        MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    doc_id: str = Field(max_length=64, unique=True, nullable=False)
    file_name: str = Field(max_length=255, nullable=False)
    # Relative to the knowledge-base folder, '/'-separated. 512 utf8mb4 chars stays under InnoDB's
    # 3072-byte index limit.
    file_path: str = Field(max_length=512, unique=True, nullable=False)
    title: str = Field(default="", max_length=512, nullable=False)
    category: str = Field(default="general", max_length=64, nullable=False, index=True)
    status: str = Field(default=DocumentStatus.PENDING, max_length=16, nullable=False)
    chunk_count: int = Field(default=0, nullable=False)
    error_message: str | None = _text()
    doc_metadata: dict[str, Any] | None = Field(
        default=None, sa_column=sa.Column("metadata", sa.JSON, nullable=True)
    )
    content_hash: str | None = Field(default=None, max_length=64)
    file_size: int = Field(default=0, nullable=False)
    # The seed's document fields (``retrieval/parsing/doc_fields.py``): what the runbook is about and the
    # chunking it was indexed with (in the embedding model's tokens).
    fault_source: str | None = Field(default=None, max_length=128)
    api_name: str | None = Field(default=None, max_length=255)
    version: str = Field(
        default=DEFAULT_VERSION,
        max_length=32,
        sa_column_kwargs={"server_default": DEFAULT_VERSION},
        nullable=False,
    )
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    # A disabled document keeps its row and vectors but no lookup returns it.
    enabled: bool = Field(
        default=True, nullable=False, sa_column_kwargs={"server_default": sa.true()}
    )
    created_at: datetime = _created()
    updated_at: datetime = _created()
    indexed_at: datetime | None = None


class KnowledgeDomain(SQLModel, table=True):
    """One domain per category, with the model-aggregated when_to_retrieve."""

    __tablename__ = "knowledge_domain"
    __table_args__ = (MYSQL_TABLE_ARGS,)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=64, unique=True, nullable=False)
    when_to_retrieve: str | None = _text()
    document_count: int = Field(default=0, nullable=False)
    source: str = Field(default="MODEL", max_length=16, nullable=False)  # MODEL | FALLBACK
    updated_at: datetime = _created()


class CaseLibrary(SQLModel, table=True):
    """A solved case, created from a session marked useful (one per session)."""

    __tablename__ = "case_library"
    __table_args__ = (MYSQL_TABLE_ARGS,)

    id: int | None = Field(default=None, primary_key=True)
    case_id: str = Field(max_length=64, unique=True, nullable=False)
    session_id: str = Field(max_length=64, unique=True, nullable=False)
    title: str = Field(max_length=255, nullable=False)
    problem: str | None = _text()
    root_cause: str | None = _text()
    solution: str | None = _text()
    category: str = Field(default="GENERAL", max_length=32, nullable=False, index=True)
    source: str = Field(default="AUTO", max_length=16, nullable=False)
    tags: list[str] | None = _json()
    created_at: datetime = _created()


class KnowledgeState(SQLModel, table=True):
    """A single row whose version is bumped on every document change.

    Each worker compares it with the version its in-memory L0 index was built from, so several API
    workers stay in step with the database without a message bus.
    """

    __tablename__ = "knowledge_state"
    __table_args__ = (MYSQL_TABLE_ARGS,)

    id: int = Field(default=1, primary_key=True)
    version: int = Field(default=0, nullable=False)
    updated_at: datetime = _created()


class WriteProbe(SQLModel, table=True):
    """One row that health checks rewrite: the cheapest proof that the database accepts writes
    (a read-only file or a full disk still answers ``SELECT 1``)."""

    __tablename__ = "write_probe"
    __table_args__ = (MYSQL_TABLE_ARGS,)

    id: int = Field(default=1, primary_key=True)
    written_by: str = Field(default="", max_length=64, nullable=False)
    written_at: datetime = _created()


class EvalRunStatus(StrEnum):
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"


class EvalRun(SQLModel, table=True):
    """One run of the incident eval suite (``python -m evals run``): which model, code and
    prompts it judged, and how they did. Its scenarios' results are ``eval_result`` rows; their
    sessions are ordinary ``diagnosis_session`` rows with origin ``eval``."""

    __tablename__ = "eval_run"
    __table_args__ = (MYSQL_TABLE_ARGS,)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(max_length=64, unique=True, nullable=False)
    status: str = Field(default=EvalRunStatus.RUNNING, max_length=16, nullable=False)
    model: str = Field(max_length=128, nullable=False)
    judge_model: str | None = Field(default=None, max_length=128)
    git_commit: str | None = Field(default=None, max_length=64)  # sha, "-dirty" when edited
    prompt_hash: str = Field(max_length=64, nullable=False)  # the prompts the runs were sent
    knowledge_hash: str | None = Field(default=None, max_length=64)  # the runbooks judged on
    embedding_model: str | None = Field(default=None, max_length=255)
    scenario_count: int = Field(default=0, nullable=False)
    result_count: int = Field(default=0, nullable=False)  # scenarios × repeats
    passed: int = Field(default=0, nullable=False)
    pass_rate: float | None = None
    model_calls: int = Field(default=0, nullable=False)
    total_tokens: int = Field(default=0, nullable=False)
    duration_ms: int | None = None
    summary: dict[str, Any] | None = _json()  # pass rates by language/flow/intent, options
    error_message: str | None = _text()
    created_at: datetime = Field(default_factory=utcnow, nullable=False, index=True)
    completed_at: datetime | None = None


class EvalResult(SQLModel, table=True):
    """One scenario of one eval run (one repeat): pass or fail, each check with its reason, what
    it cost, and the sessions it ran as."""

    __tablename__ = "eval_result"
    __table_args__ = (
        sa.UniqueConstraint("run_id", "scenario_id", "repeat_index", name="uq_eval_result_key"),
        MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(max_length=64, nullable=False, index=True)
    scenario_id: str = Field(max_length=128, nullable=False, index=True)
    repeat_index: int = Field(default=0, nullable=False)
    title: str = Field(default="", max_length=255, nullable=False)
    language: str = Field(max_length=8, nullable=False)
    flow: str = Field(max_length=8, nullable=False)
    intent: str = Field(max_length=32, nullable=False)
    passed: bool = Field(default=False, nullable=False)
    checks: list[dict[str, Any]] | None = _json()  # [{name, passed, reason}]
    session_ids: list[str] | None = _json()
    answer: str | None = _text()
    model_calls: int = Field(default=0, nullable=False)
    total_tokens: int = Field(default=0, nullable=False)
    duration_ms: int | None = None
    judge: dict[str, Any] | None = _json()  # the optional LLM judge's score, apart from the checks
    created_at: datetime = _created()


class ConversationLease(SQLModel, table=True):
    """One run at a time per conversation (``persistence/conversations.py``): the row of a thread
    names the run attempt holding it and until when; concurrent turns on one thread would fork its
    checkpoints and keep only one of the questions."""

    __tablename__ = "conversation_lease"
    __table_args__ = (MYSQL_TABLE_ARGS,)

    thread_id: str = Field(max_length=64, primary_key=True)
    owner: str = Field(max_length=64, nullable=False)
    session_id: str = Field(max_length=64, nullable=False)
    lease_until: datetime | None = None
    updated_at: datetime = _created()
