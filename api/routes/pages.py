"""The console pages (static files from ``web/``)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse

from api.errors import ApiError

WEB_DIR = Path(__file__).resolve().parents[2] / "web"
PAGES = {
    "/": "index.html",
    "/documents": "documents.html",
    "/sessions": "sessions.html",
    "/retrieval": "retrieval.html",
    "/cases": "cases.html",
    "/insights": "insights.html",
    "/evals": "evals.html",
}

router = APIRouter(include_in_schema=False)


def _page(name: str):  # noqa: ANN202 - a FastAPI endpoint
    async def serve() -> FileResponse:
        path = WEB_DIR / name
        if not path.is_file():
            raise ApiError(404, "page_not_found", f"{name} is missing from web/")
        return FileResponse(path, media_type="text/html; charset=utf-8")

    return serve


for route, filename in PAGES.items():
    router.add_api_route(route, _page(filename), methods=["GET"], response_class=HTMLResponse)
