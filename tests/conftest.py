"""Shared fixtures: database URLs for both engines, the embedded defaults kept offline, started stacks.

Helpers live in ``tests/support/``; this file holds fixtures, and imports the hook that hands
the longest test files to the workers first (``tests/support/schedule.py``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.kb import started_services
from tests.support.mysql import MigratedMySQL, fresh_mysql_db
from tests.support.paths import ROOT
from tests.support.schedule import pytest_collection_modifyitems  # noqa: F401 - longest files first

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# In-process clients call the app as http://test (or t, or Starlette's testserver): names the Host
# allowlist refuses unless configured, as an operator would configure a public name.
os.environ.setdefault("ALLOWED_HOSTS", "test,t,testserver")


@pytest.fixture(scope="session", autouse=True)
def _hypothesis_outside_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Hypothesis (schemathesis' engine) keeps its caches under ./.hypothesis of the directory pytest
    # started in, i.e. the checkout; it reads this variable the first time it touches storage.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path_factory.mktemp("hypothesis")))
        yield


@pytest.fixture(scope="session", autouse=True)
def _cache_outside_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # The bf16 probe's verdict (``retrieval/l1/bf16_verdict.py``): one folder for the run, shared
    # by the in-process model and every server a test starts (they inherit the environment), so
    # the probe runs once per worker, not once per start, and nothing lands in the home folder.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERBIZ_CACHE_DIR", str(tmp_path_factory.mktemp("superbiz-cache")))
        yield


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A developer's config.yaml or .env must not leak into tests; tests set what they need.
    monkeypatch.setenv("CONFIG_FILE", str(tmp_path / "absent-config.yaml"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
async def mysql_url() -> AsyncIterator[str]:
    async with fresh_mysql_db() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
async def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database on each engine (the MySQL case skips with a hint when unavailable)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
        return
    async with fresh_mysql_db() as url:
        yield url


@pytest.fixture(scope="session")
async def _migrated_mysql() -> AsyncIterator[MigratedMySQL]:
    migrated = MigratedMySQL()  # nothing is created until a test asks for it
    yield migrated
    await migrated.drop()


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
async def db_url(
    request: pytest.FixtureRequest, tmp_path: Path, _migrated_mysql: MigratedMySQL
) -> str:
    """A database on each engine, migrated to head, with no rows: a fresh SQLite file, or the
    worker's migrated MariaDB/MySQL database emptied (the MySQL case skips with a hint when
    unavailable)."""
    if request.param == "mysql":
        return await _migrated_mysql.emptied()
    import asyncio

    from persistence.migrate import upgrade

    url = f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
    await asyncio.to_thread(upgrade, url)
    return url


@pytest.fixture
def repo_root() -> Iterator[Path]:
    yield ROOT


def _one_torch_thread() -> None:
    if "OMP_NUM_THREADS" not in os.environ:
        import torch

        # One intra-op thread: on a shared 2-core machine under load, two threads spin against the
        # other processes (measured: the fixture runbooks embed in 15 s with one thread, 33 s with two).
        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def embeddings():
    """The default model (multilingual-e5-small), loaded once for the whole run; each distinct
    document text is embedded once per run, however many tests import it."""
    from tests.support.embeddings import SessionEmbeddings

    _one_torch_thread()
    emb = SessionEmbeddings()
    assert emb.dimension == 384
    return emb


@pytest.fixture(scope="session")
def minilm():
    """The packaged English MiniLM (still selectable), loaded once for the tests of that path."""
    from tests.support.embeddings import SessionMiniLM

    _one_torch_thread()
    emb = SessionMiniLM()
    assert emb.dimension == 384
    return emb


@pytest.fixture(scope="session")
async def services(tmp_path_factory: pytest.TempPathFactory, embeddings):
    """A started offline stack on a private copy of the fixture runbooks, shared by graph tests."""
    async with started_services(tmp_path_factory.mktemp("services"), embeddings) as svc:
        yield svc


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


@pytest.fixture(scope="session")
async def browser():
    """One headless Chromium per worker, shared by the browser test modules (a launch costs seconds
    on a loaded machine); each test opens its own context (``checked_page``), so no cookies,
    storage or pages pass from one test to the next."""
    from tests.support.browser import chromium

    async with chromium() as b:
        yield b
