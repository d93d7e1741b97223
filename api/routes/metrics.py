"""``/metrics``: Prometheus text format (``telemetry/metrics.py`` lists what is exported).

Open by default, like ``/healthz``: a scraper should not need the API key (which also allows
changes), and the metrics carry no questions, answers, documents or ids. ``METRICS_TOKEN`` closes
it: then Prometheus sends ``Authorization: Bearer <token>`` (``authorization.credentials`` in its
scrape config).
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import Response

from api.errors import ApiError, responses
from telemetry import metrics

router = APIRouter(tags=["ops"])


def require_metrics_token(
    request: Request, authorization: Annotated[str | None, Header()] = None
) -> None:
    expected = request.app.state.settings.metrics_token
    if not expected:
        return
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise ApiError(
            401,
            "metrics_token_required",
            "this server requires a token for /metrics: send 'Authorization: Bearer <METRICS_TOKEN>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not hmac.compare_digest(token.strip().encode(), expected.encode()):
        raise ApiError(
            401,
            "invalid_metrics_token",
            "the bearer token does not match METRICS_TOKEN",
            headers={"WWW-Authenticate": "Bearer"},
        )


@router.get(
    "/metrics",
    response_class=Response,
    dependencies=[Depends(require_metrics_token)],
    responses={200: {"content": {"text/plain": {}}}, **responses(401)},
)
def prometheus_metrics() -> Response:
    """HTTP latency by route, lookups, model calls and tokens by node, imports, session outcomes."""
    body, content_type = metrics.exposition()
    return Response(body, media_type=content_type)
