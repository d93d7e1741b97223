"""Cross-site requests are refused in every mode, every response carries the security headers, and
with an API key the reads are guarded too (pages and /healthz stay open)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.hostile import assert_error, document_rows, isolated_client, kb_files

EVIL = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
RUNBOOK = b"# Replaced\n\nThe attacker's text.\n"


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory, embeddings) -> AsyncIterator:  # noqa: ANN001
    async with isolated_client(tmp_path_factory.mktemp("cross-site"), embeddings) as c:
        yield c


@pytest.fixture(scope="module")
async def keyed(client) -> AsyncIterator[httpx.AsyncClient]:  # noqa: ANN001
    """The same stack behind an app with API_KEY set (reads guarded by default)."""
    async with _app(client, api_key="s3cret") as c:
        yield c


def _app(client: httpx.AsyncClient, **settings: object):  # noqa: ANN202
    from contextlib import asynccontextmanager

    from server import create_app

    svc = client.services  # type: ignore[attr-defined]
    auth = settings.pop("auth", None)
    updated = svc.settings.model_copy(update=settings)
    if auth is not None:
        updated = updated.model_copy(update={"auth": updated.auth.model_copy(update=auth)})
    app = create_app(settings=updated, services=svc)

    @asynccontextmanager
    async def run():  # noqa: ANN202
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=60
            ) as c,
        ):
            yield c

    return run()


async def _doc(client: httpx.AsyncClient, path: str) -> dict:
    items = (await client.get("/api/documents", params={"q": path})).json()["items"]
    return next(d for d in items if d["filePath"] == path)


async def test_cross_site_writes_change_nothing(client) -> None:  # noqa: ANN001
    files, rows = kb_files(client.kb_dir), await document_rows(client.services)
    victim = await _doc(client, "api/payment-errors.md")
    attempts = [
        (
            "POST",
            "/api/documents/upload",
            {
                "files": {"file": ("payment-errors.md", RUNBOOK, "text/markdown")},
                "data": {"category": "api", "replace": "true"},
            },
        ),
        ("POST", "/api/knowledge/init?force=true", {}),
        ("POST", f"/api/documents/{victim['docId']}/reindex", {}),
        ("DELETE", f"/api/documents/{victim['docId']}", {}),
        ("POST", "/api/chat", {"json": {"question": "ERR_TIMEOUT"}}),
        ("POST", "/api/feedback", {"json": {"sessionId": "x", "feedback": "useful"}}),
    ]
    headers_variants = [
        EVIL,
        {"Origin": "http://evil.example"},  # Origin alone
        {"Sec-Fetch-Site": "cross-site"},  # fetch metadata alone
        {"Origin": "null"},  # sandboxed frame, local file
        {"Origin": "http://test.evil.example"},  # a look-alike host
        {"Origin": "http://127.0.0.1:9900", "Sec-Fetch-Site": "same-site"},  # another port
    ]
    for headers in headers_variants:
        for method, url, kwargs in attempts:
            r = await client.request(method, url, headers=headers, **kwargs)
            message = assert_error(r, 403, "cross_site_request")
            if headers.get("Origin", "null") != "null":
                assert "auth.allowed-origins" in message, message
    assert kb_files(client.kb_dir) == files
    assert await document_rows(client.services) == rows
    after = await _doc(client, "api/payment-errors.md")
    assert after["updatedAt"] == victim["updatedAt"] and after["status"] == "INDEXED"
    assert (await client.get("/api/knowledge/stats")).json()["importing"] is False


async def test_same_origin_and_non_browser_clients_keep_working(client) -> None:  # noqa: ANN001
    lookup = {"query": "ERR_TIMEOUT"}
    same = {"Origin": "http://test", "Sec-Fetch-Site": "same-origin"}
    assert (
        await client.post("/api/knowledge/lookup", json=lookup, headers=same)
    ).status_code == 200
    assert (await client.post("/api/knowledge/lookup", json=lookup)).status_code == 200  # no Origin
    typed = {"Sec-Fetch-Site": "none"}  # the operator typed the URL
    assert (
        await client.post("/api/knowledge/lookup", json=lookup, headers=typed)
    ).status_code == 200
    proxied = {"Origin": "https://ops.example.com", "X-Forwarded-Host": "ops.example.com"}
    assert (
        await client.post("/api/knowledge/lookup", json=lookup, headers=proxied)
    ).status_code == 200


async def test_allowed_origins_let_a_trusted_site_in(client) -> None:  # noqa: ANN001
    async with _app(client, auth={"allowed_origins": ["https://portal.example.com"]}) as c:
        ok = await c.post(
            "/api/knowledge/lookup",
            json={"query": "ERR_TIMEOUT"},
            headers={"Origin": "https://portal.example.com", "Sec-Fetch-Site": "cross-site"},
        )
        assert ok.status_code == 200
        assert_error(
            await c.post("/api/knowledge/lookup", json={"query": "x"}, headers=EVIL),
            403,
            "cross_site_request",
        )


@pytest.mark.parametrize(
    "path", ["/", "/documents", "/sessions", "/retrieval", "/healthz", "/api/documents",
             "/static/js/api.js", "/api/nope", "/openapi.json"]
)  # fmt: skip
async def test_every_response_carries_security_headers(client, path: str) -> None:  # noqa: ANN001
    r = await client.get(path)
    csp = r.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp, csp
    assert "script-src 'self';" in csp  # no inline or foreign script on the console
    assert r.headers.get("x-frame-options") == "DENY"
    assert r.headers.get("x-content-type-options") == "nosniff"
    refused = await client.post("/api/knowledge/init", headers=EVIL)
    assert refused.headers.get("x-frame-options") == "DENY"


async def test_pages_need_no_inline_script_or_style(repo_root) -> None:  # noqa: ANN001
    import re

    for page in (repo_root / "web").glob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), f"{page.name}: inline script"
        assert not re.search(r"\son[a-z]+\s*=", html), f"{page.name}: inline event handler"
        assert " style=" not in html, f"{page.name}: inline style"


async def test_with_a_key_reads_are_guarded_too(client, keyed) -> None:  # noqa: ANN001
    doc = await _doc(client, "api/payment-errors.md")
    session_id = "0" * 32
    reads = [
        ("GET", "/api/documents", None),
        ("GET", f"/api/documents/{doc['docId']}", None),
        ("GET", "/api/sessions", None),
        ("GET", f"/api/sessions/{session_id}", None),
        ("GET", f"/api/sessions/{session_id}/checkpoints", None),
        ("GET", "/api/knowledge/stats", None),
        ("GET", "/api/knowledge/jobs/whatever", None),
        ("GET", "/api/domains", None),
        ("POST", "/api/knowledge/lookup", {"query": "ERR_TIMEOUT"}),
    ]
    for method, url, body in reads:
        assert_error(await keyed.request(method, url, json=body), 401, "api_key_required")
        bad = await keyed.request(method, url, json=body, headers={"X-API-Key": "nope"})
        assert_error(bad, 401, "invalid_api_key")
        ok = await keyed.request(method, url, json=body, headers={"X-API-Key": "s3cret"})
        assert ok.status_code in (200, 404), (url, ok.text)
    for open_path in ("/", "/documents", "/sessions", "/retrieval", "/healthz", "/static/app.css"):
        assert (await keyed.get(open_path)).status_code == 200, open_path


async def test_protect_reads_can_be_turned_off(client) -> None:  # noqa: ANN001
    async with _app(client, api_key="s3cret", auth={"protect_reads": False}) as c:
        assert (await c.get("/api/documents")).status_code == 200
        assert (await c.post("/api/knowledge/lookup", json={"query": "x"})).status_code == 200
        assert_error(await c.post("/api/knowledge/init"), 401, "api_key_required")


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        ({}, False),
        ({"sec-fetch-site": "none"}, False),
        ({"sec-fetch-site": "same-origin", "origin": "http://h:1", "host": "h:1"}, False),
        ({"origin": "HTTP://H:1/", "host": "h:1"}, False),
        ({"origin": "https://a.example", "host": "b.example"}, True),
        ({"origin": "https://a.example", "host": "x", "x-forwarded-host": "a.example"}, False),
        ({"origin": "null", "host": "h"}, True),
        ({"sec-fetch-site": "same-site", "host": "h"}, True),
        ({"origin": "https://ok.example", "host": "h"}, False),
    ],
)
def test_cross_site_rule(headers: dict[str, str], refused: bool) -> None:
    from api.security import cross_site_refusal

    reason = cross_site_refusal(headers, {"https://ok.example"})
    assert (reason is not None) is refused, reason
