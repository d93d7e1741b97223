"""Shared fixtures: database URLs for both engines, the embedded defaults kept offline."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
MYSQL_SKIP = (
    "MySQL tests need a server: set TEST_MYSQL_URL=mysql+asyncmy://root:@127.0.0.1:3306/test "
    "(any user allowed to CREATE/DROP DATABASE); .ci/run does this against the local MariaDB."
)


def mysql_server_url() -> str | None:
    return os.environ.get("TEST_MYSQL_URL") or None


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A developer's config.yaml or .env must not leak into tests; tests set what they need.
    monkeypatch.setenv("CONFIG_FILE", str(tmp_path / "absent-config.yaml"))
    monkeypatch.chdir(tmp_path)


async def _create_mysql_db(server_url: str) -> str:
    name = f"sbtest_{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(make_url(server_url))
    async with admin.begin() as conn:
        await conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    await admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


async def _drop_mysql_db(server_url: str, url: str) -> None:
    admin = create_async_engine(make_url(server_url))
    async with admin.begin() as conn:
        await conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{make_url(url).database}`"))
    await admin.dispose()


@asynccontextmanager
async def fresh_mysql_db() -> AsyncIterator[str]:
    """A new, empty MariaDB/MySQL database, dropped afterwards; skips the test when none is set up."""
    server = mysql_server_url()
    if not server:
        pytest.skip(MYSQL_SKIP)
    url = await _create_mysql_db(server)
    try:
        yield url
    finally:
        await _drop_mysql_db(server, url)


@pytest.fixture
async def mysql_url() -> AsyncIterator[str]:
    async with fresh_mysql_db() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"


@pytest.fixture(params=["sqlite", "mysql"])
async def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database on each engine (the MySQL case skips with a hint when unavailable)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
        return
    async with fresh_mysql_db() as url:
        yield url


@pytest.fixture
async def db_url(empty_db_url: str) -> str:
    """A database on each engine, migrated to head."""
    import asyncio

    from persistence.migrate import upgrade

    await asyncio.to_thread(upgrade, empty_db_url)
    return empty_db_url


@pytest.fixture
def repo_root() -> Iterator[Path]:
    yield ROOT


@pytest.fixture(scope="session")
def embeddings():
    """The packaged MiniLM model, loaded once for the whole run."""
    from retrieval.embeddings import SentenceTransformerEmbeddings

    emb = SentenceTransformerEmbeddings()
    assert emb.dimension == 384
    return emb


def kb_settings(base: Path, **overrides: object):
    """Settings for an isolated knowledge base under ``base`` (a copy of the sample runbooks)."""
    import shutil

    from settings import load_settings

    kb = base / "knowledge_base"
    if not kb.exists():
        shutil.copytree(ROOT / "knowledge_base", kb)
    values: dict[str, object] = {
        "database_url": f"sqlite+aiosqlite:///{base / 'kb.db'}",
        "milvus_uri": str(base / "milvus.db"),
        "knowledge_base_dir": kb,
        "data_dir": base,
    }
    values.update(overrides)
    return load_settings(**values)


async def build_kb(settings, embeddings, **kwargs: object):
    from persistence.db import Database
    from persistence.migrate import upgrade
    from retrieval.knowledge import KnowledgeBase

    upgrade(settings.database_url)
    db = Database(settings.database_url)
    return KnowledgeBase.build(settings, db, embeddings=embeddings, **kwargs)


@pytest.fixture(scope="session")
async def services(tmp_path_factory: pytest.TempPathFactory, embeddings):
    """A started offline stack on a private copy of the sample runbooks, shared by graph tests."""
    from services import Services

    base = tmp_path_factory.mktemp("services")
    svc = await Services.start(kb_settings(base), embeddings=embeddings)
    yield svc
    await svc.close()


class ModelInputs:
    """Callback that records what each graph node sent to the model."""

    def __init__(self) -> None:
        from langchain_core.callbacks import AsyncCallbackHandler

        outer = self

        class _Handler(AsyncCallbackHandler):
            async def on_chat_model_start(self, serialized, messages, *, metadata=None, **kw):  # noqa: ANN001
                node = (metadata or {}).get("langgraph_node", "?")
                outer.calls.append((node, messages[0]))

        self.calls: list[tuple[str, list]] = []
        self.handler = _Handler()

    def for_node(self, node: str) -> list[list]:
        return [m for n, m in self.calls if n == node]


@pytest.fixture
async def client(services):
    """An httpx client on the FastAPI app, sharing the started offline stack."""
    import httpx

    from server import create_app

    app = create_app(services=services)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as c:
            c.app = app  # type: ignore[attr-defined]
            yield c


def sse_events(text: str) -> list[tuple[str, dict]]:
    """Parse a Server-Sent Events body into (event, data) pairs."""
    import json

    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            out.append((event, json.loads("\n".join(data))))
    return out


def all_keys(obj: object) -> set[str]:
    """Every dict key anywhere in a JSON-like value (to prove no score field reaches the model)."""
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in all_keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in all_keys(v)}
    return set()
