"""Knowledge bases and started stacks on a private copy of the fixture runbooks.

Every test that needs runbooks gets its own copy of ``FIXTURE_KB`` under a temporary folder, so a
test that edits, uploads or deletes documents never touches another test's — or the checkout's.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.mysql import fresh_mysql_db
from tests.support.paths import FIXTURE_KB, fixture_docs

if TYPE_CHECKING:
    from retrieval.knowledge import KnowledgeBase
    from retrieval.writing.uploads import ImportReport
    from services import Services
    from settings import Settings


def copy_fixture_kb(dest: Path) -> Path:
    """``dest`` holding a copy of the fixture runbooks (left as it is when it already exists)."""
    if not dest.exists():
        shutil.copytree(FIXTURE_KB, dest)
    return dest


def kb_settings(base: Path, **overrides: object) -> Settings:
    """Settings for an isolated stack under ``base``: SQLite, Milvus Lite, a copy of the runbooks."""
    from settings import load_settings

    values: dict[str, object] = {
        "database_url": f"sqlite+aiosqlite:///{base / 'kb.db'}",
        "milvus_uri": str(base / "milvus.db"),
        "knowledge_base_dir": copy_fixture_kb(base / "knowledge_base"),
        "data_dir": base,
    }
    values.update(overrides)
    return load_settings(**values)


async def build_kb(settings: Settings, embeddings: Any, **kwargs: Any) -> KnowledgeBase:
    """A migrated database and a built (not yet started) knowledge base on ``settings``."""
    from persistence.db import Database
    from persistence.migrate import upgrade
    from retrieval.knowledge import KnowledgeBase

    upgrade(settings.database_url)
    return KnowledgeBase.build(
        settings, Database(settings.database_url), embeddings=embeddings, **kwargs
    )


@asynccontextmanager
async def started_kb(
    base: Path, embeddings: Any, *, progress: Any = None, **overrides: object
) -> AsyncIterator[tuple[KnowledgeBase, ImportReport]]:
    """A knowledge base whose first start imported every fixture runbook, and that import's report.

    ``overrides`` are settings (e.g. ``max_upload_mb``); ``progress`` receives the import events.
    """
    knowledge = await build_kb(kb_settings(base, **overrides), embeddings)
    try:
        report = await knowledge.start(progress=progress)
        assert report is not None and report.count("INDEXED") == len(fixture_docs()), (
            report.as_dict() if report else "nothing imported"
        )
        yield knowledge, report
    finally:
        await knowledge.close()
        await knowledge.db.dispose()


@asynccontextmanager
async def started_services(
    base: Path, embeddings: Any, *, mysql: bool = False, **overrides: object
) -> AsyncIterator[Services]:
    """The whole offline stack (``Services.start``) on a copy of the fixture runbooks under ``base``.

    ``mysql=True`` keeps records and checkpoints in a fresh MariaDB/MySQL database, dropped
    afterwards (the test skips with a hint when ``TEST_MYSQL_URL`` is unset). ``overrides`` are
    settings."""
    from services import Services

    async with AsyncExitStack() as stack:
        if mysql:
            overrides["database_url"] = await stack.enter_async_context(fresh_mysql_db())
        svc = await Services.start(kb_settings(base, **overrides), embeddings=embeddings)
        stack.push_async_callback(svc.close)
        yield svc
