"""Request and response models of the HTTP API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic.alias_generators import to_camel

from retrieval.lookup import knobs


class Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class ErrorBody(BaseModel):
    error: str = Field(description="machine-readable code, e.g. document_not_found")
    message: str = Field(description="what went wrong and how to fix it")


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="conversation id; omit to start one",
    )
    question: str = Field(min_length=1, max_length=8000)


class ChatResponse(Camel):
    answer: str
    session_id: str
    thread_id: str


class AiOpsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(default=None, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")


class FeedbackRequest(Camel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
    session_id: str = Field(min_length=1, max_length=64)
    feedback: str = Field(min_length=1, max_length=32, description="useful | not_useful")


class FeedbackResponse(Camel):
    success: bool
    message: str
    case_id: str | None


class AlertPayload(BaseModel):
    """A firing alert as Alertmanager / Prometheus send it: the lookup matches its name as an
    identifier and reads its annotations with the label values recognised as context."""

    model_config = ConfigDict(extra="forbid")
    alertname: str | None = Field(
        None,
        max_length=200,
        pattern=r"^[A-Za-z_:][\w:.-]*$",
        description="the alert's name; omit when labels.alertname holds it",
    )
    labels: dict[str, str] = Field(default_factory=dict, max_length=64)
    annotations: dict[str, str] = Field(
        default_factory=dict, max_length=32, description="summary, description, … as rendered"
    )

    @model_validator(mode="after")
    def _named(self) -> AlertPayload:
        if not (self.alertname or self.labels.get("alertname")):
            raise ValueError("alert needs an alertname (alert.alertname or alert.labels.alertname)")
        for name, value in [*self.labels.items(), *self.annotations.items()]:
            if len(value) > 4000:
                raise ValueError(f"alert value {name!r} is longer than 4000 characters")
        return self


class _LookupBody(Camel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        "", max_length=2000, description="the question or keywords; may be omitted with an alert"
    )
    alert: AlertPayload | None = Field(
        None, description="the firing alert the lookup is about (alertname, labels, annotations)"
    )

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> _LookupBody:
        if not self.query.strip() and self.alert is None:
            raise ValueError("give a query (the question or keywords) or an alert to look up")
        hi = getattr(self, "highly_relevant_threshold", None)
        ref = getattr(self, "reference_threshold", None)
        if hi is not None and ref is not None and ref > hi:
            raise ValueError(
                f"referenceThreshold ({ref}) must not exceed highlyRelevantThreshold ({hi})"
            )
        return self


# The knob fields come from retrieval/lookup/knobs.py, the one list of them.
LookupRequest = create_model(
    "LookupRequest",
    __base__=_LookupBody,
    __doc__="A retrieval test; every field but ``query`` and ``alert`` is a lookup knob that "
    "overrides the server's setting for this request only (omitted = the setting; "
    "``GET /api/knowledge/lookup/knobs`` lists them).",
    **knobs.request_fields(),
)


class LookupKnobOut(Camel):
    """One knob of the retrieval test, for a form."""

    name: str = Field(description="the request field, e.g. topK")
    label: str
    description: str
    type: Literal["integer", "number", "string"]
    minimum: int | float | None = None
    maximum: int | float | None = None
    exclusive_minimum: int | float | None = None
    enum: list[str] | None = None
    enum_labels: dict[str, str] | None = Field(None, description="an enum value's label")
    value: Any = Field(description="what this server runs with when the request omits it")


class Document(Camel):
    doc_id: str
    file_name: str
    file_path: str
    title: str
    category: str
    status: str
    chunk_count: int
    error_message: str | None = None
    metadata: dict[str, Any] | None = Field(default=None, validation_alias="doc_metadata")
    file_size: int
    fault_source: str | None = Field(default=None, description="故障源, e.g. redis")
    api_name: str | None = Field(default=None, description="接口名称, e.g. /api/pay")
    version: str = Field(default="v1.0", description="版本")
    chunk_size: int | None = Field(default=None, description="tokens per chunk it was indexed with")
    chunk_overlap: int | None = Field(
        default=None, description="overlap tokens it was indexed with"
    )
    enabled: bool = Field(default=True, description="false: kept, but no lookup returns it")
    created_at: datetime
    updated_at: datetime
    indexed_at: datetime | None = None


class Chunk(Camel):
    index: int
    breadcrumb: str
    text: str = Field(
        description="the chunk's text, without the breadcrumb line it is indexed with"
    )
    token_count: int | None = Field(
        default=None, description="embedding-model tokens of the indexed text (breadcrumb included)"
    )


class DocumentPatch(Camel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(
        description="false takes the document out of every lookup; true brings it back"
    )


class FaultSourceCount(Camel):
    fault_source: str
    documents: int


class DocumentDetail(Document):
    chunks: list[Chunk] = []
    chunks_unavailable: str | None = None  # set when the vector store cannot be read


class FileResultOut(Camel):
    file_path: str
    status: str
    doc_id: str | None = None
    chunks: int = 0
    error: str | None = None
    warnings: list[str] = []
    derived: list[str] = []


class UploadResponse(Camel):
    document: Document | None
    result: FileResultOut


class Page(Camel):
    total: int
    page: int
    page_size: int


class DocumentPage(Page):
    items: list[Document]


class SessionSummary(Camel):
    session_id: str
    thread_id: str | None
    query: str
    status: str
    agent_flow: str
    total_duration_ms: int | None
    total_tokens: int
    total_steps: int
    total_tool_calls: int
    evidence_score: int | None = None
    feedback: str | None
    replay_of: str | None
    origin: str = "user"
    created_at: datetime
    completed_at: datetime | None


class SessionDetail(SessionSummary):
    answer: str | None
    error_message: str | None
    self_evaluation: dict[str, Any] | None


class Step(Camel):
    id: int
    step_index: int
    agent_name: str
    model_input: str | None
    model_output: str | None
    thought: str | None
    has_tool_call: bool
    duration_ms: int | None
    token_count: int | None
    created_at: datetime


class Invocation(Camel):
    id: int
    call_key: str  # the tool call's id, as the AI-Ops report's evidence ledger cites it
    tool_name: str
    step_id: int | None
    input_params: dict[str, Any] | None
    output_preview: str | None
    output_length: int
    retrieval_layer: str | None
    l0_match_count: int | None
    l1_match_count: int | None
    is_truncated: bool
    relevance_level: str | None
    dedup_reason: str | None
    retrieval_details: dict[str, Any] | None
    duration_ms: int | None
    success: bool
    error_message: str | None


class SessionTraceOut(Camel):
    session: SessionDetail
    steps: list[Step]
    invocations: list[Invocation]


class SessionPage(Page):
    items: list[SessionSummary]


class ReplayRequest(Camel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
    mode: Literal["rerun", "checkpoint"] = "rerun"
    checkpoint_id: str | None = Field(default=None, max_length=64)


class RunOut(Camel):
    """A run that was continued (resume, or replay from a checkpoint)."""

    session_id: str
    thread_id: str
    status: str = Field(description="SUCCESS or FAILED")
    answer: str | None
    error: str | None


class ReplayReport(Camel):
    """A rerun with the recorded model outputs, compared with the recording step by step."""

    original_session_id: str
    replay_session_id: str
    identical: bool
    first_divergence: dict[str, Any] | None = Field(description="the first of ``differences``")
    differences: list[dict[str, Any]] = Field(description="step, tool result and answer diffs")
    replay_notes: list[dict[str, Any]] = Field(
        description="model calls that met the tape out of step (another agent, input, extra call)"
    )
    recorded_steps: int
    replayed_steps: int
    same_answer: bool
    status: str = Field(description="the replayed run's status")


class Checkpoint(Camel):
    checkpoint_id: str
    step: int | None
    source: str | None
    next: list[str]


class JobOut(Camel):
    job_id: str
    status: str
    force: bool
    total: int
    processed: int
    files: list[dict[str, Any]]
    summary: dict[str, Any] | None
    error: str | None
    first: bool = Field(False, description="the server's first import of an empty knowledge base")
    recovery: bool = Field(False, description="re-importing what an interrupted import left")
    embedding: dict[str, int] | None = Field(
        None,
        description="while files first..last (1-based) are embedded: done of total chunks",
    )


class DomainOut(Camel):
    name: str
    when_to_retrieve: str | None
    document_count: int
    source: str
    updated_at: datetime


class Deleted(Camel):
    deleted: str = Field(description="the id of the document removed")


class LookupResponse(Camel):
    """The retrieval test's answer. ``settings`` follows the lookup knobs (``top_k``, thresholds,
    weights, judge, ``overridden``): left open, so a new knob needs no change here."""

    result: dict[str, Any] = Field(description="what the model would see (the tool's payload)")
    scores: dict[str, Any] = Field(description="every raw score: L0 matches, dense / BM25 / RRF")
    settings: dict[str, Any] = Field(
        description="what the lookup ran with, and what was overridden"
    )


OPAQUE = {
    "served",
    "by_category",
    "by_status",
    "route_weights",
    "timings_ms",
}  # keys are data, not names


def camelize(value: Any) -> Any:
    """Recursively camelCase dict keys (the lookup artifact, stats), leaving data-keyed maps alone."""
    if isinstance(value, dict):
        return {to_camel(str(k)): (v if k in OPAQUE else camelize(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [camelize(v) for v in value]
    return value
