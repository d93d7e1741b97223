"""Wires the knowledge base together once, for the server, the CLI, notebooks and tests."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from persistence import document_repository as docs_repo
from persistence.db import Database
from retrieval.l0.catalog import DocumentCatalog
from retrieval.l1.embeddings import CachedEmbeddings, make_embeddings
from retrieval.l1.milvus_lite import in_use_by_another_server, in_use_message
from retrieval.l1.readability import make_readability
from retrieval.l1.store import ChunkStore, StoreUnavailable
from retrieval.lookup.alert_input import AlertInput
from retrieval.lookup.first_import import FirstImport
from retrieval.lookup.memory import SessionMemory
from retrieval.lookup.runbook_reader import runbook_reader
from retrieval.lookup.service import LookupConfig, LookupOutcome, LookupService
from retrieval.repair.catalog_loader import CatalogLoader
from retrieval.repair.recovery import KnowledgeRecovery
from retrieval.writing import failures
from retrieval.writing.errors import MilvusFileInUse
from retrieval.writing.ingestion import ChangeHook, Enricher, ImportReport, IngestionService
from retrieval.writing.progress import Progress
from retrieval.writing.seed import seed_knowledge
from settings import KNOWLEDGE_SUBDIR, SHIPPED_KNOWLEDGE_DIR, Settings

log = logging.getLogger(__name__)


@dataclass
class KnowledgeBase:
    settings: Settings
    db: Database
    embeddings: CachedEmbeddings
    store: ChunkStore
    catalog: DocumentCatalog
    ingestion: IngestionService  # the only writer
    loader: CatalogLoader  # what lookups read the database through
    recovery: KnowledgeRecovery
    lookup_service: LookupService
    # While the server's first import runs in the background, lookups say they see part of it.
    first_import: FirstImport = field(default_factory=FirstImport)

    @classmethod
    def build(
        cls,
        settings: Settings,
        db: Database,
        *,
        embeddings: CachedEmbeddings | None = None,
        enrich: Enricher | None = None,
        on_change: ChangeHook | None = None,
    ) -> KnowledgeBase:
        r = settings.retrieval
        embeddings = embeddings or make_embeddings(r.embedding)
        if settings.milvus_kind == "milvus-lite":
            # Milvus Lite keeps its data in a folder named like the URI; make its parent.
            Path(settings.milvus_uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
        store = ChunkStore(
            settings.milvus_uri, embeddings, collection=r.collection, token=settings.milvus_token
        )
        catalog = DocumentCatalog()
        ingestion = IngestionService(
            db,
            store,
            catalog,
            settings.knowledge_base_dir,
            chunk_size=r.chunk_size,
            chunk_overlap=r.chunk_overlap,
            max_upload_bytes=settings.max_upload_mb * 1024 * 1024,
            enrich=enrich,
            on_change=on_change,
        )
        body_of = runbook_reader(settings.knowledge_base_dir)
        lookup = LookupService(
            catalog,
            store,
            LookupConfig.from_settings(r),
            body_loader=lambda doc: body_of(doc.file_path),
            readability=_LazyReadability(embeddings, r.embedding.effective_scripts()),
        )
        loader = CatalogLoader(db, catalog)
        recovery = KnowledgeRecovery(ingestion, loader)
        return cls(settings, db, embeddings, store, catalog, ingestion, loader, recovery, lookup)

    async def start(
        self,
        *,
        ingest_if_empty: bool = True,
        progress: Progress | None = None,
        recover: bool = True,
    ) -> ImportReport | None:
        """Load the catalog, finish what a crash interrupted and reconcile the stores; on a first
        start (no documents yet) import the knowledge-base folder.

        ``recover=False``: the caller runs that recovery round itself once it serves (the server
        does, as a background job: re-embedding interrupted imports can take minutes)."""
        await asyncio.to_thread(self.seed)
        # A second server on the same Milvus Lite file would run without its vectors (degraded,
        # uploads FAILED): it refuses to start instead, saying why and what to do.
        uri = self.settings.milvus_uri
        if self.store.local and await asyncio.to_thread(in_use_by_another_server, uri):
            raise MilvusFileInUse(in_use_message(uri))
        # Damaged Milvus Lite files would keep the store unusable for good: moved aside before it
        # opens, the recovery round rebuilds it from the documents (store_rebuild.py).
        await self.recovery.set_aside_damaged(at_start=True)
        load = getattr(self.embeddings, "load", None) or (lambda: self.embeddings.dimension)
        await asyncio.to_thread(load)  # load the model off the loop
        try:  # a collection of another embedding model stops start-up (EmbeddingMismatch)
            await asyncio.to_thread(self.store.check_model)
        except StoreUnavailable as exc:  # Milvus down: L0 still answers; checked on reconnect
            log.warning("vector store not reachable at start-up: %s", exc)
        await self.loader.load()
        if not recover:
            return None
        for problem in await self.recovery.run(thorough=True):
            log.warning("knowledge base: %s", problem)
        if ingest_if_empty and await self.needs_first_import():
            log.info("no documents indexed yet: importing %s", self.settings.knowledge_base_dir)
            return await self.ingestion.init(progress=progress)
        return None

    def seed(self) -> bool:
        """Seed DATA_DIR's knowledge folder with the shipped samples if it does not exist yet."""
        kb_dir = Path(self.settings.knowledge_base_dir)
        owned = kb_dir == Path(self.settings.data_dir) / KNOWLEDGE_SUBDIR
        return seed_knowledge(kb_dir, SHIPPED_KNOWLEDGE_DIR, owned)

    async def needs_first_import(self) -> bool:
        """Nothing indexed yet, and runbooks waiting in the folder."""
        return len(self.catalog) == 0 and bool(await asyncio.to_thread(self.ingestion.scan))

    def lookup(
        self,
        query: str,
        memory: SessionMemory | None = None,
        config: LookupConfig | None = None,
        alert: AlertInput | None = None,
    ) -> LookupOutcome:
        return self._annotate(self.lookup_service.lookup(query, memory, config, alert))

    async def alookup(
        self,
        query: str,
        memory: SessionMemory | None = None,
        config: LookupConfig | None = None,
        alert: AlertInput | None = None,
    ) -> LookupOutcome:
        """Lookup off the event loop (embedding and Milvus calls block).

        First a cheap version check, so a document changed through another worker is seen here.
        """
        try:
            await self.loader.refresh_if_stale()
        except Exception as exc:  # the database being down must not stop a lookup
            log.warning("knowledge version check failed: %s", exc)
        outcome = await asyncio.to_thread(self.lookup_service.lookup, query, memory, config, alert)
        return self._annotate(outcome)

    def _annotate(self, outcome: LookupOutcome) -> LookupOutcome:
        """While the first import or a rebuild runs, a lookup says it sees part of the documents."""
        return self.recovery.rebuild.annotate(self.first_import.annotate(outcome))

    async def stats(self, *, count_vectors: bool = True) -> dict[str, Any]:
        """Documents per status and category, vectors, knowledge version, last import."""
        async with self.db.session() as s:
            out = await docs_repo.document_stats(s)
        out["importing"] = self.ingestion.busy
        if not count_vectors:
            return out | {"vectors": None}
        try:
            out["vectors"] = await asyncio.to_thread(self.store.count)
        except Exception as exc:  # the vector store being down must not hide the rest
            out["vectors"] = None
            out["vectors_error"] = failures.describe(exc, vector_store=self.store.uri)
        return out

    async def stored_chunks(self, doc_id: str) -> StoredChunks:
        """One document's chunks as the vector store holds them, in order, each with
        ``token_count`` (the embedding model's tokens of its indexed text; None when the model
        cannot count); when the store cannot be read, none, and why in words."""
        try:
            rows = await asyncio.to_thread(self.store.chunks_of, doc_id)
        except Exception as exc:
            log.warning("chunks of %s unavailable", doc_id, exc_info=True)
            return StoredChunks([], failures.describe(exc, vector_store=self.store.uri))
        count = getattr(self.store.embeddings, "count_tokens", None)

        def counted() -> list[dict[str, Any]]:
            return [
                r | {"token_count": count(str(r.get("text", ""))) if count else None} for r in rows
            ]

        return StoredChunks(await asyncio.to_thread(counted))

    async def close(self) -> None:
        self.store.close()


@dataclass
class StoredChunks:
    chunks: list[dict[str, Any]]
    unavailable: str | None = None  # why the vector store could not be read


class _LazyReadability:
    """Built on first use: a local model's tokenizer exists only once the model is loaded."""

    def __init__(self, embeddings: CachedEmbeddings, scripts: list[str] | str) -> None:
        self.embeddings, self.scripts = embeddings, scripts
        self._fn = None

    def __call__(self, text: str) -> float:
        if self._fn is None:
            self._fn = make_readability(self.embeddings.tokenizer, self.scripts)
        return self._fn(text)
