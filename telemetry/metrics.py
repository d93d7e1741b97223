"""Every Prometheus metric the app exports, defined once, with the helpers that record them.

This module sits at the bottom of the layers (it imports only prometheus-client), so each layer
records what it alone sees: the HTTP middleware (``api/http_metrics.py``) requests, the lookup
service lookups, the run recorder model calls, the runner session outcomes, ingestion imports.

Labels are bounded by construction: route templates (never raw paths), graph node names, levels,
layers, outcomes; never a question, a session id or a file name.

Metrics are per process. Under several uvicorn workers, set ``PROMETHEUS_MULTIPROC_DIR`` to an
empty folder before the workers start (the Docker image's start script does): every worker then
writes its values there and ``/metrics``, whichever worker answers, sums them all
(prometheus-client's multiprocess mode). Without it each worker reports only its own counts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)

# No ``*_created`` series beside each counter and histogram: Prometheus does not need them (it
# detects counter resets itself) and they would double what every scrape carries.
disable_created_metrics()

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
NONE = "none"  # label value for "not applicable" (no dedup, no layer): Prometheus has no null

# Seconds. Lookups and HTTP reads take milliseconds; model calls and chats take seconds.
FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SLOW = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# Status codes on the counter only: on the histogram they would multiply its buckets.
HTTP_REQUESTS = Counter(
    "superbiz_http_requests_total",
    "HTTP requests by route template, method and status code.",
    ["method", "route", "status"],
)
HTTP_SECONDS = Histogram(
    "superbiz_http_request_duration_seconds",
    "HTTP request time by route template and method (streams: until the last byte).",
    ["method", "route"],
    buckets=SLOW,
)
LOOKUPS = Counter(
    "superbiz_lookups_total",
    "Knowledge-base lookups (agent tool, retrieval test, CLI) by layer, relevance level and "
    "dedup reason.",
    ["layer", "level", "dedup_reason"],
)
LOOKUP_SECONDS = Histogram(
    "superbiz_lookup_duration_seconds",
    "Knowledge-base lookup time by layer.",
    ["layer"],
    buckets=FAST,
)
MODEL_CALLS = Counter(
    "superbiz_model_calls_total", "Chat-model calls by graph node and outcome.", ["node", "outcome"]
)
MODEL_SECONDS = Histogram(
    "superbiz_model_call_duration_seconds",
    "Chat-model call time by graph node.",
    ["node"],
    buckets=SLOW,
)
MODEL_TOKENS = Counter(
    "superbiz_model_tokens_total",
    "Tokens the chat model reported, by graph node and kind (input, output).",
    ["node", "kind"],
)
DOCUMENT_IMPORTS = Counter(
    "superbiz_documents_imported_total",
    "Documents imported by outcome: indexed, failed, or skipped (unchanged, in a folder import).",
    ["outcome"],
)
DOCUMENT_IMPORT_SECONDS = Histogram(
    "superbiz_document_import_duration_seconds",
    "Time to import one document (parse, embed, write) by outcome.",
    ["outcome"],
    buckets=SLOW,
)
IMPORT_RUN_SECONDS = Histogram(
    "superbiz_import_run_duration_seconds",
    "Time of a whole knowledge-base folder import (first start, POST /api/knowledge/init).",
    ["force"],
    buckets=SLOW,
)
SESSIONS = Counter(
    "superbiz_sessions_total",
    "Finished diagnosis sessions by flow (CHAT, AI_OPS) and status (SUCCESS, FAILED).",
    ["flow", "status"],
)


def _label(value: Any) -> str:
    return str(getattr(value, "value", value)) if value not in (None, "") else NONE


def record_http(method: str, route: str, status: int, seconds: float) -> None:
    method = method if method in HTTP_METHODS else "other"  # a client may send any word
    HTTP_REQUESTS.labels(method, route, str(status)).inc()
    HTTP_SECONDS.labels(method, route).observe(seconds)


def record_lookup(artifact: Mapping[str, Any], seconds: float) -> None:
    """From the lookup's artifact (the raw record the recorder stores too)."""
    layer = _label(artifact.get("layer"))
    LOOKUPS.labels(
        layer, _label(artifact.get("relevance_level")), _label(artifact.get("dedup_reason"))
    ).inc()
    LOOKUP_SECONDS.labels(layer).observe(seconds)


def record_model_call(node: str, seconds: float, usage: Mapping[str, Any] | None) -> None:
    MODEL_CALLS.labels(node, "ok").inc()
    MODEL_SECONDS.labels(node).observe(seconds)
    for kind in ("input", "output"):
        tokens = (usage or {}).get(f"{kind}_tokens")
        if tokens:
            MODEL_TOKENS.labels(node, kind).inc(tokens)


def record_model_error(node: str) -> None:
    MODEL_CALLS.labels(node, "error").inc()


def record_document_import(status: str, seconds: float) -> None:
    outcome = status.lower()
    DOCUMENT_IMPORTS.labels(outcome).inc()
    DOCUMENT_IMPORT_SECONDS.labels(outcome).observe(seconds)


def record_import_run(force: bool, seconds: float, skipped: int) -> None:
    IMPORT_RUN_SECONDS.labels(str(force).lower()).observe(seconds)
    if skipped:
        DOCUMENT_IMPORTS.labels("skipped").inc(skipped)


def record_session(flow: str, status: Any) -> None:
    SESSIONS.labels(_label(flow), _label(status)).inc()


def exposition() -> tuple[bytes, str]:
    """The text format for ``/metrics``: this process's metrics, or every worker's summed in
    multiprocess mode."""
    registry: CollectorRegistry = REGISTRY
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    return generate_latest(registry), CONTENT_TYPE_LATEST
