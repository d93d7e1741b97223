"""The console pages: each ``web/<page>.html`` extends ``web/_layout.html``, the one place that
holds the pages' head (meta, stylesheet) and the navigation, rendered with Jinja2. Scripts and
styles stay files under ``/static`` (the Content-Security-Policy allows no inline ones)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.types import Scope

from api.errors import ApiError

WEB_DIR = Path(__file__).resolve().parents[2] / "web"


@dataclass(frozen=True)
class Page:
    route: str
    template: str  # a file in web/
    key: str  # the nav link's data-testid is nav-<key>
    label: str  # the nav link's text


# In nav order; a new page is a row here and a template extending _layout.html.
PAGES = (
    Page("/", "index.html", "chat", "对话 Chat"),
    Page("/documents", "documents.html", "documents", "文档 Documents"),
    Page("/sessions", "sessions.html", "sessions", "会话记录 Sessions"),
    Page("/retrieval", "retrieval.html", "retrieval", "检索测试 Retrieval"),
    Page("/cases", "cases.html", "cases", "案例库 Cases"),
    Page("/insights", "insights.html", "insights", "洞察 Insights"),
    Page("/evals", "evals.html", "evals", "评测 Evals"),
)

templates = Jinja2Templates(
    env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(WEB_DIR),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
)
router = APIRouter(include_in_schema=False)


def _page(page: Page):  # noqa: ANN202 - a FastAPI endpoint
    async def serve(request: Request) -> HTMLResponse:
        if not (WEB_DIR / page.template).is_file():
            raise ApiError(404, "page_not_found", f"{page.template} is missing from web/")
        return templates.TemplateResponse(
            request, page.template, {"nav": PAGES, "current": page.route}
        )

    return serve


for _p in PAGES:
    router.add_api_route(_p.route, _page(_p), methods=["GET"], response_class=HTMLResponse)


class ConsoleAssets(StaticFiles):
    """``/static``: the pages' scripts, styles and vendored files. The page templates live in the
    same folder but are only ever rendered (their routes above), never served as Jinja source."""

    def __init__(self) -> None:
        super().__init__(directory=WEB_DIR, check_dir=False)

    async def get_response(self, path: str, scope: Scope):  # noqa: ANN201 - Starlette's signature
        if path.endswith(".html"):
            raise ApiError(
                404, "not_found", f"/static/{path} is not an asset: open the page itself"
            )
        return await super().get_response(path, scope)
