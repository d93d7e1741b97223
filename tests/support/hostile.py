"""Helpers for the hostile-input, clean-upload and cross-site tests: an app on its own private
knowledge base (so "nothing was stored" can be checked exactly), and the debris checks."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from tests.support.kb import kb_settings

# A Python exception class name (ValueError, MilvusException, …) or a traceback in a message.
CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b|Traceback")


@asynccontextmanager
async def isolated_client(
    base: Path, embeddings: Any, **overrides: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client on a fresh app and stack over a private copy of the sample runbooks.
    ``client.services`` is the stack; ``client.kb_dir`` the knowledge-base folder."""
    from server import create_app
    from services import Services

    svc = await Services.start(kb_settings(base, **overrides), embeddings=embeddings)
    app = create_app(services=svc)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=120
            ) as client,
        ):
            client.services = svc  # type: ignore[attr-defined]
            client.kb_dir = svc.settings.knowledge_base_dir  # type: ignore[attr-defined]
            yield client
    finally:
        await svc.close()


def kb_files(kb_dir: Path) -> dict[str, str]:
    """Every file under the folder, hidden and temporary ones included: path -> sha256."""
    return {
        p.relative_to(kb_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(kb_dir.rglob("*"))
        if p.is_file()
    }


async def document_rows(services: Any) -> dict[str, tuple[str, str | None]]:
    """file_path -> (status, content_hash) for every api_document row."""
    from persistence.models import ApiDocument

    async with services.db.session() as s:
        rows = (await s.execute(sa.select(ApiDocument))).scalars()
        return {r.file_path: (str(r.status), r.content_hash) for r in rows}


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> str:
    """The JSON error contract, with a message in words; returns the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"error", "message"} and body["message"], body
    if code:
        assert body["error"] == code, body
    assert not CLASS_NAME.search(body["message"]), body["message"]
    return body["message"]


def alias_bomb(levels: int = 6, width: int = 9) -> bytes:
    """The classic "billion laughs": each level repeats the previous one ``width`` times."""
    lines = ["---", "a: &a [" + ",".join(['"lol"'] * width) + "]"]
    names = "abcdefghij"
    for prev, name in zip(names, names[1:levels], strict=False):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * width) + "]")
    top = names[levels - 1]
    lines += [f"title: *{top}", f"summary: *{top}", "---", "# Bomb", "", "body"]
    return "\n".join(lines).encode()
