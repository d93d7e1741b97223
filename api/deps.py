"""FastAPI dependencies, typed (``SessionDep = Annotated[AsyncSession, Depends(get_session)]``, as
the FastAPI full-stack template writes them): the running services, their knowledge base, a
database session per request, the import jobs, the runner and replayer, the API-key guard, content-type checks. A
route names what it needs as a parameter and opens nothing itself."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ApiError
from api.jobs import JobRegistry
from api.security import SAFE_METHODS
from retrieval.knowledge import KnowledgeBase
from runs.replay import Replayer
from runs.runner import Runner
from services import Services

READ_ONLY_POSTS = frozenset({"/api/knowledge/lookup"})  # the retrieval test changes nothing


def started(request: Request, name: str) -> Any:
    """``app.state.<name>`` once the services are up (``api/boot.py`` publishes them all at once);
    until then 503 ``starting``. The one place that answers "still starting"."""
    value = getattr(request.app.state, name, None)
    if value is None:
        raise ApiError(503, "starting", "the service is still starting; retry in a few seconds")
    return value


def get_services(request: Request) -> Services:
    return started(request, "services")


ServicesDep = Annotated[Services, Depends(get_services)]


def get_runner(services: ServicesDep) -> Runner:
    """The process's one runner (``Services.runner``): every run is leased and drained alike."""
    return services.runner()


def get_replayer(services: ServicesDep) -> Replayer:
    """The replayer on that runner (``Services.replayer``)."""
    return services.replayer()


def get_jobs(request: Request) -> JobRegistry:
    return started(request, "jobs")


def get_knowledge(services: ServicesDep) -> KnowledgeBase:
    return services.kb


async def get_session(services: ServicesDep) -> AsyncIterator[AsyncSession]:
    """One database session for the route; closed when the route returns (``scope="function"``),
    before the response is sent, as a route's own ``async with`` closed it."""
    async with services.db.session() as session:
        yield session


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


KnowledgeDep = Annotated[KnowledgeBase, Depends(get_knowledge)]
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
JobsDep = Annotated[JobRegistry, Depends(get_jobs)]
RunnerDep = Annotated[Runner, Depends(get_runner)]
ReplayerDep = Annotated[Replayer, Depends(get_replayer)]
Guarded = [Depends(require_api_key)]  # on every API router
JsonBody = [Depends(json_body)]
