"""Everything a running SuperBiz Agent needs, started once and shared by the server, the CLIs,
LangGraph Studio, notebooks and tests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from graph.deps import AgentDeps
from graph.graphs import Graphs, compile_graphs
from graph.prompts import load_prompts
from graph.state import SCRATCH
from llm.factory import ModelFactory
from persistence.checkpoint import open_checkpointer
from persistence.db import Database
from persistence.leases import LeaseSweeper
from persistence.migrate import upgrade
from persistence.startup import startup_lock
from retrieval.domains import DomainService
from retrieval.knowledge import KnowledgeBase
from retrieval.l1.embeddings import CachedEmbeddings
from retrieval.l1.store import StoreUnavailable
from retrieval.lookup.runbook_reader import document_reader, runbook_reader
from retrieval.writing.ingestion import Progress
from runs.replay import Replayer
from runs.runner import Runner
from settings import Settings
from tools import build_tools

log = logging.getLogger(__name__)


def _domains_named_in(kb: KnowledgeBase) -> Callable[[str], set[str]]:
    def named(question: str) -> set[str]:
        return {m.entry.category for m in kb.catalog.l0.search(question)}

    return named


def runner_on(settings: Settings, db: Database, graphs: Graphs) -> Runner:
    """A runner recording ``graphs``' runs into ``db``, leased for ``RUN_LEASE_SECONDS``: the one
    way a runner is built (``Services.runner``, and the eval suite's on its own graphs)."""
    return Runner(db, graphs, lease_s=settings.run_lease_seconds)


@dataclass
class Services:
    settings: Settings
    db: Database
    kb: KnowledgeBase
    domains: DomainService
    deps: AgentDeps  # what the graph nodes use: models, prompts, tools, the knowledge map
    graphs: Graphs | None = None
    checkpointer: BaseCheckpointSaver | None = None
    _runner: Runner | None = field(default=None, repr=False)  # built with the graphs, by start
    _replayer: Replayer | None = field(default=None, repr=False)
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack, repr=False)

    @classmethod
    def build(cls, settings: Settings, *, embeddings: CachedEmbeddings | None = None) -> Services:
        """Wire the parts without touching the network or the disk beyond opening the stores."""
        # A missing prompt file stops start-up here, naming the file.
        prompts = load_prompts(settings.prompts_dir)
        db = Database(settings.database_url)
        models = ModelFactory(settings)
        kb = KnowledgeBase.build(settings, db, embeddings=embeddings)
        models.documents = document_reader(kb)
        domains = DomainService(
            db,
            kb.catalog,
            models.for_role,
            prompts["document_enricher"],
            prompts["domain_summary"],
        )
        # Imports ask the domain service to fill in missing fields and to re-summarise the
        # domains a change touched; it needs the catalog, so it is hooked in after both exist.
        kb.ingestion.enrich = domains.enrich
        kb.ingestion.on_change = domains.refresh
        deps = AgentDeps(
            models=models,
            prompts=prompts,
            tools=build_tools(kb, settings, messages_key=SCRATCH),
            knowledge_map=domains.knowledge_map,
            named_domains=_domains_named_in(kb),
            read_runbook=runbook_reader(settings.knowledge_base_dir),
        )
        return cls(settings, db, kb, domains, deps)

    @classmethod
    async def start(
        cls,
        settings: Settings,
        *,
        embeddings: CachedEmbeddings | None = None,
        migrate: bool = True,
        ingest_if_empty: bool = True,
        progress: Progress | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
        with_checkpointer: bool = True,
    ) -> Services:
        """Migrate, start the knowledge base, generate missing domain rows, compile the graphs.

        ``with_checkpointer=False`` compiles the graphs without one (LangGraph Studio's server
        brings its own)."""
        async with cls.start_holding_lock(
            settings,
            embeddings=embeddings,
            migrate=migrate,
            ingest_if_empty=ingest_if_empty,
            progress=progress,
            checkpointer=checkpointer,
            with_checkpointer=with_checkpointer,
        ) as services:
            return services

    @classmethod
    @asynccontextmanager
    async def start_holding_lock(cls, settings: Settings, **kwargs: Any) -> AsyncIterator[Services]:
        """``start`` that keeps the start-up lock until the block ends.

        Several workers may start together on a fresh install: first-start work runs under one
        cross-process lock, so the first worker migrates and imports and the others find it done.
        The server imports in the background while already serving, inside this block, so a worker
        starting meanwhile waits for that import instead of importing the same files again or
        "finishing" its rows as if a crash had left them PENDING."""
        async with startup_lock(settings.database_url, settings.data_dir):
            yield await cls._start_locked(settings, **kwargs)

    @classmethod
    async def _start_locked(
        cls,
        settings: Settings,
        *,
        embeddings: CachedEmbeddings | None = None,
        migrate: bool = True,
        ingest_if_empty: bool = True,
        progress: Progress | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
        with_checkpointer: bool = True,
        recover: bool = True,  # False: the caller runs the start-up recovery round (the server)
    ) -> Services:
        # Blocking work (migrations, opening Milvus, reading prompts) runs off the event loop.
        if migrate:
            await asyncio.to_thread(upgrade, settings.database_url)
        services = await asyncio.to_thread(cls.build, settings, embeddings=embeddings)
        try:
            await services.sweeper().sweep()  # sessions whose worker died while this one was down
            await cls._remove_stale_temps(settings)
            await services.kb.start(
                ingest_if_empty=ingest_if_empty, progress=progress, recover=recover
            )
            created = await services.domains.ensure_all()
            if created:
                log.info("generated domain summaries for %s", ", ".join(created))
            if checkpointer is None and with_checkpointer:
                checkpointer = await services._stack.enter_async_context(
                    open_checkpointer(settings.database_url, settings.data_dir)
                )
            services.checkpointer = checkpointer
            services.graphs = compile_graphs(services.deps, checkpointer)
            services._wire_runs()
        except BaseException:
            await services.close()
            raise
        return services

    @staticmethod
    async def _remove_stale_temps(settings: Settings) -> None:
        """Uploads that crashed between writing their temporary file and renaming it."""
        from retrieval.writing.uploads import remove_stale_temps

        if settings.knowledge_base_dir is None:
            return
        removed = await asyncio.to_thread(remove_stale_temps, settings.knowledge_base_dir)
        if removed:
            log.warning("removed %d stale upload temporary file(s)", len(removed))

    def _started(self) -> tuple[Graphs, BaseCheckpointSaver | None]:
        if self.graphs is None:
            raise RuntimeError("the services are not started (use Services.start)")
        return self.graphs, self.checkpointer

    def _wire_runs(self) -> None:
        """The one runner of this process, and the replayer that replays on it."""
        graphs, checkpointer = self._started()
        self._runner = runner_on(self.settings, self.db, graphs)
        if checkpointer is not None:
            self._replayer = Replayer(
                self._runner, checkpointer, self.deps, store_check=self._store_closed
            )

    def runner(self) -> Runner:
        """Runs graphs as recorded sessions: the one runner of this process, shared by the API,
        replay, the CLIs and Studio (it tracks background closing and scoring; ``close`` drains
        it)."""
        self._started()
        assert self._runner is not None
        return self._runner

    def sweeper(self) -> LeaseSweeper:
        """Closes the sessions of workers that died (``.start()`` repeats it in the background)."""
        return LeaseSweeper(
            self.db, self.settings.run_lease_seconds, self.settings.stale_session_minutes * 60
        )

    def replayer(self) -> Replayer:
        """Replays recorded sessions on ``runner()``."""
        self._started()
        if self._replayer is None:
            raise RuntimeError("replay needs a checkpointer (started with_checkpointer=False)")
        return self._replayer

    async def _store_closed(self) -> str | None:
        """Why the vector store cannot be opened from this process, or None when it can."""
        try:
            await asyncio.to_thread(lambda: self.kb.store.vectorstore)
        except StoreUnavailable as exc:
            return str(exc)
        return None

    async def close(self) -> None:
        if self._runner is not None:  # a closing retry or a score still running: let it end
            await self._runner.drain()
        await self._stack.aclose()
        await self.kb.close()
        await self.db.dispose()
