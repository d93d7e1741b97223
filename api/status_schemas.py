"""What the service says about itself: ``/healthz`` and the knowledge base's stats (camelCase).

Both routes leave out the fields a state does not have (``response_model_exclude_unset``): a
starting server has no database entry, a healthy vector store no ``vectorsError``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from api.schemas import Camel, JobOut


class DatabaseHealth(Camel):
    kind: str = Field(description="sqlite or mysql")
    ok: bool
    reachable: bool
    writable: bool


class VectorStoreHealth(Camel):
    kind: str = Field(description="milvus-lite (a local file) or milvus-server")
    ok: bool


class VectorStoreRepair(Camel):
    damaged: list[str] = Field(description="the damaged files found, each with what is wrong")
    set_aside_in: str | None = Field(description="where the damaged store's files were moved")
    processed: int = Field(description="documents rebuilt so far")
    total: int = Field(description="documents to rebuild")


class Health(Camel):
    status: Literal["ok", "degraded", "importing", "starting", "failed"]
    database: DatabaseHealth | None = None
    vector_store: VectorStoreHealth | None = None
    chat_model: str | None = Field(None, description="offline or openai-compatible")
    documents: int | None = Field(None, description="documents in the catalog lookups read")
    knowledge_version: int | None = None
    problems: list[str] | None = Field(
        None, description="what is wrong with the knowledge base and what to do, in words"
    )
    import_: JobOut | None = Field(
        None,
        alias="import",
        description="while importing: the first import's (or the recovery's) job",
    )
    repair: VectorStoreRepair | None = Field(
        None, description='while the vector store is rebuilt ("repairing the vector store")'
    )
    message: str | None = None
    timeline: dict[str, float] | None = Field(
        None, description="while starting: phase → seconds since the app started"
    )


class KnowledgeStats(Camel):
    documents: int
    by_status: dict[str, int] = Field(description="documents per status, every status named")
    by_category: dict[str, int]
    knowledge_version: int
    last_indexed_at: str | None = Field(description="ISO 8601, the last document indexed")
    importing: bool = Field(description="an import holds the write lock (on this worker)")
    vectors: int | None = Field(description="chunks in the vector store; null when unreadable")
    vectors_error: str | None = Field(None, description="why the vector store cannot be read")
    job: JobOut | None = Field(description="the running import job, if any")
