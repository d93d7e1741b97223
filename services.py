"""Everything a running SuperBiz Agent needs, started once and shared by the server, the CLIs,
LangGraph Studio, notebooks and tests."""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from graph.graphs import Graphs, compile_graphs
from graph.models import ModelFactory
from graph.prompts import Prompts, load_prompts
from persistence import repository as repo
from persistence.checkpoint import open_checkpointer
from persistence.db import Database
from persistence.migrate import upgrade
from persistence.startup import startup_lock
from retrieval.domains import DomainService
from retrieval.embeddings import SentenceTransformerEmbeddings
from retrieval.ingestion import Progress
from retrieval.knowledge import KnowledgeBase
from settings import Settings
from tools import build_tools

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    db: Database
    prompts: Prompts
    models: ModelFactory
    kb: KnowledgeBase
    domains: DomainService
    tools: list[BaseTool]
    graphs: Graphs | None = None
    checkpointer: BaseCheckpointSaver | None = None
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack, repr=False)

    @classmethod
    def build(
        cls, settings: Settings, *, embeddings: SentenceTransformerEmbeddings | None = None
    ) -> Services:
        """Wire the parts without touching the network or the disk beyond opening the stores."""
        prompts = load_prompts()  # a missing prompt file stops start-up here, naming the file
        db = Database(settings.database_url)
        models = ModelFactory(settings)
        holder: dict[str, Any] = {}

        async def enrich(doc):  # noqa: ANN001, ANN202 - forwards to the domain service built below
            return await holder["domains"].enrich(doc)

        async def on_change(categories: set[str]) -> None:
            await holder["domains"].refresh(categories)

        kb = KnowledgeBase.build(
            settings, db, embeddings=embeddings, enrich=enrich, on_change=on_change
        )
        domains = DomainService(
            db,
            kb.catalog,
            lambda role: models.for_role(role),
            prompts["document_enricher"],
            prompts["domain_summary"],
        )
        holder["domains"] = domains
        return cls(settings, db, prompts, models, kb, domains, build_tools(kb, settings))

    @classmethod
    async def start(
        cls,
        settings: Settings,
        *,
        embeddings: SentenceTransformerEmbeddings | None = None,
        migrate: bool = True,
        ingest_if_empty: bool = True,
        progress: Progress | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
        with_checkpointer: bool = True,
    ) -> Services:
        """Migrate, start the knowledge base, generate missing domain rows, compile the graphs.

        ``with_checkpointer=False`` compiles the graphs without one (LangGraph Studio's server
        brings its own)."""
        # Several workers may start together on a fresh install: first-start work runs under one
        # cross-process lock, so the first worker migrates and imports and the others find it done.
        async with startup_lock(settings.database_url, settings.data_dir):
            services = await cls._start_locked(
                settings,
                embeddings=embeddings,
                migrate=migrate,
                ingest_if_empty=ingest_if_empty,
                progress=progress,
                checkpointer=checkpointer,
                with_checkpointer=with_checkpointer,
            )
        return services

    @classmethod
    async def _start_locked(
        cls,
        settings: Settings,
        *,
        embeddings: SentenceTransformerEmbeddings | None,
        migrate: bool,
        ingest_if_empty: bool,
        progress: Progress | None,
        checkpointer: BaseCheckpointSaver | None,
        with_checkpointer: bool,
    ) -> Services:
        # Blocking work (migrations, opening Milvus, reading prompts) runs off the event loop.
        if migrate:
            await asyncio.to_thread(upgrade, settings.database_url)
        services = await asyncio.to_thread(cls.build, settings, embeddings=embeddings)
        try:
            async with services.db.session() as db:
                swept = await repo.fail_stale_sessions(db, settings.stale_session_minutes * 60)
            if swept:
                log.warning("marked %d interrupted session(s) FAILED", swept)
            await services.kb.start(ingest_if_empty=ingest_if_empty, progress=progress)
            created = await services.domains.ensure_all()
            if created:
                log.info("generated domain summaries for %s", ", ".join(created))
            if checkpointer is None and with_checkpointer:
                checkpointer = await services._stack.enter_async_context(
                    open_checkpointer(settings.database_url, settings.data_dir)
                )
            services.checkpointer = checkpointer
            services.graphs = compile_graphs(services, checkpointer)
        except BaseException:
            await services.close()
            raise
        return services

    async def close(self) -> None:
        await self._stack.aclose()
        await self.kb.close()
        await self.db.dispose()
