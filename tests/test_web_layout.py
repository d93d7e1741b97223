"""The console's shape: every page is served with the one shared head and a nav linking all pages
(the current one marked), page templates repeat neither, and no console script outgrows 450 lines."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from api.routes.pages import PAGES, Page

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web"
LAYOUT = "_layout.html"
MAX_LINES = 450


class _Page(HTMLParser):
    """What a served page holds: its head's tags, its nav links, its scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.heads = 0
        self.head: list[tuple[str, dict[str, str | None]]] = []
        self.nav_links: list[dict[str, str | None]] = []
        self.nav_text: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "head":
            self.heads += 1
        if "head" in self._in:
            self.head.append((tag, a))
        if tag == "a" and "nav" in self._in:
            self.nav_links.append(a)
            self.nav_text.append("")
        if tag == "script":
            self.scripts.append(a)
            if not a.get("src"):
                self.inline.append("<script> without src")
        if tag == "style":
            self.inline.append("<style>")
        self.inline += [f"<{tag} {k}=…>" for k in a if k.startswith("on")]
        if "style" in a:
            self.inline.append(f"<{tag} style=…>")
        if tag not in ("meta", "link", "input", "br", "img"):
            self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._in:
            del self._in[len(self._in) - 1 - self._in[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        if "a" in self._in and "nav" in self._in and self.nav_text:
            self.nav_text[-1] += data.strip()
        if self._in and self._in[-1] == "title":
            self.head.append(("#title", {"text": data}))


@pytest.fixture(scope="module")
async def client() -> AsyncIterator[httpx.AsyncClient]:
    from server import create_app

    # The pages need no started services; this is the real app with its middleware (the CSP).
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


async def _served(client: httpx.AsyncClient, route: str) -> tuple[httpx.Response, _Page]:
    r = await client.get(route)
    assert r.status_code == 200, (route, r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("text/html"), r.headers["content-type"]
    parsed = _Page()
    parsed.feed(r.text)
    return r, parsed


def _static_file(url: str | None) -> Path:
    assert url and url.startswith("/static/"), url
    return WEB / url.removeprefix("/static/")


@pytest.mark.parametrize("page", PAGES, ids=[p.key for p in PAGES])
async def test_every_page_is_served_with_the_shared_head_and_a_nav_to_all_pages(
    client: httpx.AsyncClient, page: Page
) -> None:
    r, html = await _served(client, page.route)
    assert html.heads == 1
    assert ("meta", {"charset": "utf-8"}) in html.head
    viewport = {"name": "viewport", "content": "width=device-width, initial-scale=1"}
    assert ("meta", viewport) in html.head
    assert ("link", {"rel": "stylesheet", "href": "/static/app.css"}) in html.head
    titles = [a["text"] for tag, a in html.head if tag == "#title"]
    assert len(titles) == 1 and titles[0].endswith(" · SuperBiz Agent"), titles
    assert titles[0] != " · SuperBiz Agent", "the page names itself in the title"

    assert [a["href"] for a in html.nav_links] == [p.route for p in PAGES]
    assert [a["data-testid"] for a in html.nav_links] == [f"nav-{p.key}" for p in PAGES]
    assert all(html.nav_text), html.nav_text
    current = [a["href"] for a in html.nav_links if a.get("aria-current") == "page"]
    assert current == [page.route], f"{page.route} must mark itself, and only itself, in the nav"

    # Scripts come from files under /static that exist (the CSP allows nothing inline).
    assert html.scripts, f"{page.route} loads no script"
    for script in html.scripts:
        assert _static_file(script.get("src")).is_file(), script
    assert not html.inline, f"{page.route}: {html.inline}"
    assert "script-src 'self';" in r.headers["content-security-policy"]


async def test_the_head_is_the_same_on_every_page_but_its_title_and_scripts(
    client: httpx.AsyncClient,
) -> None:
    heads = {}
    for page in PAGES:
        _, html = await _served(client, page.route)
        heads[page.route] = [(t, a) for t, a in html.head if t not in ("#title", "script")]
    first = heads[PAGES[0].route]
    assert first and all(h == first for h in heads.values()), heads


async def test_every_nav_link_opens_a_page_and_every_page_template_is_in_the_nav(
    client: httpx.AsyncClient,
) -> None:
    _, html = await _served(client, "/")
    for link in html.nav_links:
        await _served(client, link["href"] or "")
    templates = {p.name for p in WEB.glob("*.html")} - {LAYOUT}
    assert templates == {p.template for p in PAGES}, "a page in web/ that no nav link reaches"


def test_page_templates_repeat_neither_the_head_nor_the_nav() -> None:
    layout = (WEB / LAYOUT).read_text(encoding="utf-8")
    assert "<head>" in layout and 'class="topnav"' in layout
    for name in sorted({p.template for p in PAGES}):
        text = (WEB / name).read_text(encoding="utf-8")
        assert text.startswith('{% extends "_layout.html" %}'), f"{name} must extend the layout"
        for repeated in ("<!doctype", "<head", "<meta", "app.css", "<nav", "topnav", "skip-link"):
            assert repeated not in text.lower(), f"{name} repeats {repeated!r} from {LAYOUT}"


def _scripts() -> list[Path]:
    scripts = sorted((WEB / "js").rglob("*.js"))
    assert len(scripts) > 10, "the console's scripts are in web/js/"
    return scripts


def test_no_console_script_is_longer_than_450_lines() -> None:
    too_long = {}
    for path in _scripts():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            too_long[str(path.relative_to(ROOT))] = lines
    assert not too_long, f"split these by job (limit {MAX_LINES} lines): {too_long}"


IMPORT = re.compile(r'import\s*\{([^}]*)\}\s*from\s*"\./([\w.]+)"')
EXPORT = re.compile(r"^export\s+(?:async\s+)?(?:function|class|const|let)\s+(\w+)", re.M)


def test_every_name_a_console_script_imports_is_exported_by_that_file() -> None:
    # A missing file or export stops the whole page's module graph in the browser.
    exports = {p.name: set(EXPORT.findall(p.read_text(encoding="utf-8"))) for p in _scripts()}
    missing = []
    for path in _scripts():
        for names, source in IMPORT.findall(path.read_text(encoding="utf-8")):
            for name in filter(None, (n.strip() for n in names.split(","))):
                if name not in exports.get(source, set()):
                    missing.append(f"{path.name}: {name} from ./{source}")
    assert not missing, missing


@pytest.mark.parametrize("name", ["index.html", LAYOUT])
async def test_static_serves_assets_not_page_templates(
    client: httpx.AsyncClient, name: str
) -> None:
    # The templates sit beside the scripts in web/; /static must not hand out their Jinja source.
    assert (WEB / name).is_file()
    r = await client.get(f"/static/{name}")
    assert r.status_code == 404, r.text[:200]
    assert "{%" not in r.text
    assert (await client.get("/static/app.css")).status_code == 200
