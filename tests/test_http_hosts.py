"""The Host allowlist: a DNS-rebinding page (Host evil.example, matching Origin) gets 421 and
changes nothing; loopback names and the configured public names are served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from tests.support.hostile import assert_error, isolated_client, kb_files

REBOUND = {
    "Host": "evil.example:9981",
    "Origin": "http://evil.example:9981",
    "Sec-Fetch-Site": "same-origin",
}


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory, embeddings) -> AsyncIterator:  # noqa: ANN001
    async with isolated_client(tmp_path_factory.mktemp("hosts"), embeddings) as c:
        yield c


@asynccontextmanager
async def _app(client: httpx.AsyncClient, **settings: object) -> AsyncIterator[httpx.AsyncClient]:
    from server import create_app

    svc = client.services  # type: ignore[attr-defined]
    app = create_app(settings=svc.settings.model_copy(update=settings), services=svc)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:9981", timeout=60
        ) as c,
    ):
        yield c


async def test_rebound_host_cannot_overwrite_a_runbook_or_read_sessions(client) -> None:  # noqa: ANN001
    async with _app(client, allowed_hosts=[]) as c:
        kb = client.kb_dir  # type: ignore[attr-defined]
        before = kb_files(kb)
        target = next(iter(before))
        category, name = target.split("/", 1) if "/" in target else ("", target)
        r = await c.post(
            "/api/documents/upload",
            headers=REBOUND,
            files={"file": (name, b"# Replaced\n\nthe attacker's text\n", "text/markdown")},
            data={"category": category, "replace": "true"},
        )
        message = assert_error(r, 421, "misdirected_request")
        assert "evil.example" in message and "ALLOWED_HOSTS" in message
        assert kb_files(kb) == before  # nothing written
        for path in ("/api/sessions", "/api/documents", "/", "/api/insights"):
            assert_error(await c.get(path, headers={"Host": "evil.example:9981"}), 421)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:9981", "localhost", "LOCALHOST:9900", "[::1]:9981", "127.0.0.2", "app.localhost"],
)
async def test_loopback_names_are_served(client, host: str) -> None:  # noqa: ANN001
    async with _app(client, allowed_hosts=[]) as c:
        r = await c.get("/api/sessions", headers={"Host": host})
        assert r.status_code == 200, r.text


async def test_configured_public_names_are_served_and_others_refused(client) -> None:  # noqa: ANN001
    async with _app(client, allowed_hosts=["ops.example.com", "*.corp.example"]) as c:
        for host in (
            "ops.example.com",
            "OPS.example.com:443",
            "a.corp.example",
            "b.a.corp.example",
        ):
            r = await c.get("/api/sessions", headers={"Host": host})
            assert r.status_code == 200, (host, r.text)
        for host in (
            "evil.example",
            "ops.example.com.evil.example",
            "corp.example",
            "xops.example.com",
        ):
            assert_error(await c.get("/api/sessions", headers={"Host": host}), 421)
        # the public name passes the cross-site check too, when the page is really on it
        same = {"Host": "ops.example.com", "Origin": "https://ops.example.com"}
        r = await c.post(
            "/api/feedback", headers=same, json={"sessionId": "x", "feedback": "useful"}
        )
        assert r.status_code != 421 and r.status_code != 403, r.text


async def test_probes_may_use_any_host(client) -> None:  # noqa: ANN001
    """Kubernetes probes and Prometheus send the pod IP as Host: /healthz and /metrics answer."""
    async with _app(client, allowed_hosts=[]) as c:
        assert (await c.get("/healthz", headers={"Host": "10.1.2.3:9900"})).status_code == 200
        assert (await c.get("/metrics", headers={"Host": "10.1.2.3:9900"})).status_code == 200
        assert_error(await c.post("/healthz", headers={"Host": "10.1.2.3:9900"}), 421)


def test_bad_allowed_hosts_are_a_settings_error() -> None:
    from settings import SettingsError, load_settings

    assert load_settings(allowed_hosts="a.example, B.example:8080").allowed_hosts == [
        "a.example",
        "b.example",
    ]
    with pytest.raises(SettingsError, match="ALLOWED_HOSTS"):
        load_settings(allowed_hosts="http://a.example/")
