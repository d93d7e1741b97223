"""FastAPI dependencies: the running services, their runner and replayer, the API-key guard,
content-type checks."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, Request

from api.errors import ApiError
from api.security import SAFE_METHODS
from runs.replay import Replayer
from runs.runner import Runner
from services import Services

READ_ONLY_POSTS = frozenset({"/api/knowledge/lookup"})  # the retrieval test changes nothing


def get_services(request: Request) -> Services:
    services = getattr(request.app.state, "services", None)
    if services is None:
        raise ApiError(503, "starting", "the service is still starting; retry in a few seconds")
    return services


def get_runner(services: Annotated[Services, Depends(get_services)]) -> Runner:
    """The process's one runner (``Services.runner``): every run is leased and drained alike."""
    return services.runner()


def get_replayer(services: Annotated[Services, Depends(get_services)]) -> Replayer:
    """The replayer on that runner (``Services.replayer``)."""
    return services.replayer()


def require_api_key(request: Request, x_api_key: Annotated[str | None, Header()] = None) -> None:
    """When API_KEY is set, every API call needs the X-API-Key header; reads only while
    ``auth.protect-reads`` is on (the default with a key). Pages and /healthz are not guarded."""
    settings = request.app.state.settings
    expected = settings.api_key
    reads = request.method in SAFE_METHODS or request.url.path in READ_ONLY_POSTS
    if not expected or (reads and not settings.reads_protected):
        return
    if not x_api_key:
        raise ApiError(
            401,
            "api_key_required",
            "this server requires an API key: send it in the X-API-Key header "
            "(the console asks for it)",
        )
    if not hmac.compare_digest(x_api_key.encode(), expected.encode()):
        raise ApiError(401, "invalid_api_key", "the X-API-Key header does not match API_KEY")


def json_body(request: Request) -> None:
    ctype = request.headers.get("content-type", "")
    if ctype and not ctype.split(";")[0].strip().lower().endswith(("/json", "+json")):
        raise ApiError(
            415, "unsupported_media_type", f"send the body as application/json (got {ctype})"
        )


ServicesDep = Annotated[Services, Depends(get_services)]
RunnerDep = Annotated[Runner, Depends(get_runner)]
ReplayerDep = Annotated[Replayer, Depends(get_replayer)]
Guarded = [Depends(require_api_key)]  # on every API router
JsonBody = [Depends(json_body)]
