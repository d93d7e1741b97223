"""Recovery at start-up and periodically.

- Imports a crash interrupted (rows left PENDING or PROCESSING) are finished from their files, or
  marked FAILED when the file is gone.
- The documents table, the vector store and the catalog (L0) are reconciled document by document:
  a document whose vectors differ from its chunk count is re-imported from its file, vectors nothing
  should hold are deleted, the catalog is rebuilt from the INDEXED rows.
- A Milvus Lite store whose files are damaged is set aside and rebuilt from the documents
  (``store_rebuild.py``): at start-up, and when the periodic check finds it while running.
- What cannot be repaired is reported: :meth:`KnowledgeRecovery.health` gives ``/healthz`` a live
  check of the vector store plus what the last round left, in sentences saying what to do.

Several workers may run this at once; what one repairs the others find agreeing. A worker that
restarts while another one imports may import a document twice; the extra vectors are found and
repaired by the next round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from persistence import document_repository as docs_repo
from persistence.models import DocumentStatus
from retrieval.l1.vector_census import files_removed, vectors_per_document
from retrieval.repair.catalog_loader import CatalogLoader
from retrieval.repair.consistency import audit
from retrieval.repair.store_rebuild import StoreRebuild, set_aside_if_damaged
from retrieval.writing import failures
from retrieval.writing.errors import store_files_removed
from retrieval.writing.ingestion import IngestionService
from retrieval.writing.progress import Progress
from retrieval.writing.uploads import ImportReport

log = logging.getLogger(__name__)

# Kinds of problem: the store itself, or what a round's re-imports or reconciliation left.
STORE, INTERRUPTED_LEFT, REPAIR = "store", "interrupted", "repair"
LIVE_TIMEOUT_S = 3.0
INTERRUPTED = "interrupted; the file is gone"
LOST = "its vectors were lost and the file is gone"


class KnowledgeRecovery:
    def __init__(self, ingestion: IngestionService, loader: CatalogLoader) -> None:
        self.ingestion, self.loader = ingestion, loader
        self.store, self.db, self.catalog = ingestion.store, ingestion.db, ingestion.catalog
        self._problems: dict[str, str] = {}  # kind → sentence, from the last round
        # Set while the store is unusable: the interrupted imports wait for it to come back.
        self._interrupted_left = False
        self._task: asyncio.Task[None] | None = None
        self._progress: Progress | None = None
        self.last_report: ImportReport | None = None  # the last round's interrupted imports
        self.rebuild = StoreRebuild()  # active while a damaged store is rebuilt

    # --- one round ----------------------------------------------------------------------------

    async def run(self, *, thorough: bool, progress: Progress | None = None) -> list[str]:
        """Reconcile and repair; returns what is left wrong.

        ``thorough`` (at start-up, when no import of this process can be running) also finishes
        the imports a crash interrupted, and compares every document; otherwise the totals are
        compared first and the documents only when they differ. ``progress`` receives the
        re-imports' events, as an import job's."""
        self._progress = progress
        try:
            async with self.ingestion.writing():
                self._problems = await self._round(thorough)
        finally:
            self._progress = None
        return list(self._problems.values())

    async def recover(self, progress: Progress | None = None) -> ImportReport | None:
        """The start-up round (thorough), as the server runs it in the background once it serves:
        what it re-imported, its problems logged."""
        self.last_report = None
        for problem in await self.run(thorough=True, progress=progress):
            log.warning("knowledge base: %s", problem)
        return self.last_report

    async def interrupted(self) -> int:
        """Documents an interrupted import left PENDING or PROCESSING (to re-import)."""
        async with self.db.session() as s:
            rows = await docs_repo.documents_with_status(
                s, DocumentStatus.PENDING, DocumentStatus.PROCESSING
            )
        return len(rows)

    async def set_aside_damaged(self, *, at_start: bool = False) -> bool:
        """Set a store whose files are damaged aside (``at_start``: before it is opened); the next
        round rebuilds it. True when it did."""
        if not self.store.local or self.rebuild.active:
            return False
        found = await asyncio.to_thread(set_aside_if_damaged, self.store, running=not at_start)
        if found is None:
            return False
        damaged, where = found
        log.warning(
            "the vector store's files under %s are damaged (%s): moved them to %s (nothing is "
            "deleted; remove that folder once you no longer need it) and rebuilding the vector "
            "store from the documents",
            self.store.uri,
            "; ".join(damaged[:5]) + (" …" if len(damaged) > 5 else ""),
            where,
        )
        self.rebuild.started(damaged, where)
        return True

    async def _round(self, thorough: bool) -> dict[str, str]:
        await self.set_aside_damaged()
        if trouble := await self.store_problem():
            self._interrupted_left |= thorough
            return {STORE: trouble}
        problems: dict[str, str] = {}
        try:
            if thorough or self._interrupted_left:
                self.last_report = await self._finish_interrupted()
                self._note(problems, INTERRUPTED_LEFT, self.last_report)
                self._interrupted_left = False
            if self.rebuild.active:
                self._note(problems, REPAIR, await self._rebuild())
            else:
                self._note(problems, REPAIR, await self._reconcile(thorough))
        except Exception as exc:  # the next round tries again
            log.warning("reconciling the knowledge base failed", exc_info=True)
            reason = failures.describe(exc, vector_store=self.store.uri)
            problems[REPAIR] = (
                f"the documents could not be reconciled with the vector store ({reason}); "
                "the next check retries"
            )
        return problems

    async def _finish_interrupted(self) -> ImportReport | None:
        async with self.db.session() as s:
            rows = await docs_repo.documents_with_status(
                s, DocumentStatus.PENDING, DocumentStatus.PROCESSING
            )
        if not rows:
            return None
        log.warning(
            "%d document(s) left unfinished by an interrupted import; importing them again: %s",
            len(rows),
            ", ".join(r.file_path for r in rows[:10]) + (" …" if len(rows) > 10 else ""),
        )
        return await self.ingestion.reimport(rows, gone=INTERRUPTED, progress=self._progress)

    async def _reconcile(self, thorough: bool) -> ImportReport | None:
        await self.loader.refresh_if_stale()
        if not thorough and await self._totals_agree():
            return None
        # Vectors before rows: a document imported in between then looks short of vectors (and
        # is re-imported for nothing) rather than its vectors looking orphaned (and deleted).
        vectors = await asyncio.to_thread(vectors_per_document, self.store)
        async with self.db.session() as s:
            rows = await docs_repo.all_documents(s)
        found = audit(rows, vectors, {d.doc_id for d in self.catalog.all()})
        if found.clean:
            return None
        log.warning("knowledge base out of step: %s; repairing", found.summary())
        if found.orphans:
            await asyncio.to_thread(self._drop, found.orphans)
        report = (
            await self.ingestion.reimport(found.reimport, gone=LOST, progress=self._progress)
            if found.reimport
            else None
        )
        await self.loader.load()
        return report

    async def _rebuild(self) -> ImportReport | None:
        """Every document from its file into the store its damaged files were moved out of."""
        outer, cache = self._progress, self.store.vector_cache
        embedded = cache.misses

        def both(event: dict) -> None:
            self.rebuild.on_event(event)
            if outer is not None:
                outer(event)

        self._progress = both
        try:
            report = await self._reconcile(thorough=True)
        finally:
            self._progress = outer
        cache.forget_kept()
        self.rebuild.end()
        log.warning(
            "vector store rebuilt from the documents: %d document(s) re-imported, %d chunk(s) "
            "embedded anew; the damaged files stay in %s",
            report.count("INDEXED") if report else 0,
            cache.misses - embedded,
            self.rebuild.set_aside_in,
        )
        return report

    async def _totals_agree(self) -> bool:
        vectors = await asyncio.to_thread(self.store.count)
        async with self.db.session() as s:
            docs, chunks = await docs_repo.indexed_totals(s)
        return vectors == chunks and len(self.catalog) == docs

    def _drop(self, doc_ids: list[str]) -> None:
        with self.store.bulk():
            for doc_id in doc_ids:
                self.store.delete_doc(doc_id)

    @staticmethod
    def _note(problems: dict[str, str], kind: str, report: ImportReport | None) -> None:
        """A re-import that failed for a passing reason (not a file that is gone) is reported."""
        failed = [
            r
            for r in (report.results if report else [])
            if r.status == "FAILED" and r.error not in (INTERRUPTED, LOST)
        ]
        if failed:
            problems[kind] = (
                f"{len(failed)} document(s) could not be re-imported ({failed[0].error}); "
                "see GET /api/documents?status=FAILED and re-index them when the cause is fixed"
            )

    # --- health -------------------------------------------------------------------------------

    async def store_problem(self) -> str | None:
        """Live: why the vector store cannot be used right now, or None."""
        try:
            return await asyncio.wait_for(asyncio.to_thread(self._probe), timeout=LIVE_TIMEOUT_S)
        except TimeoutError:
            if self.ingestion.busy:  # slow while an import writes to it and embeds: busy, not down
                return None  # (a store really gone fails the import, which says so)
            return self._unreachable()
        except Exception:
            return self._unreachable()

    def _unreachable(self) -> str:
        return (
            f"the vector store at {self.store.uri} is unreachable: lookups answer from "
            "keywords (L0) only and imports fail until it is back"
        )

    def _probe(self) -> str | None:
        self.store.exists()  # raises while the store cannot be reached
        if not files_removed(self.store):
            return None
        lost = f"{self.store.count()} chunks of {len(self.catalog)} documents"
        return store_files_removed(self.store.uri, lost=lost)

    async def health(self) -> tuple[bool, list[str]]:
        """(is the vector store usable, what is wrong with the knowledge base). The live check
        replaces the last round's view of the store; what the round could not repair stays."""
        live = await self.store_problem()
        left = [text for kind, text in self._problems.items() if kind != STORE]
        return live is None, [live, *left] if live else left

    # --- periodically -------------------------------------------------------------------------

    def start(self, interval_s: float) -> KnowledgeRecovery:
        self._task = asyncio.create_task(self._forever(interval_s))
        return self

    async def _forever(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            if self.ingestion.busy:  # an import is running; the next round checks its result
                continue
            try:
                problems = await self.run(thorough=False)
            except Exception:  # never let one bad round end the checks
                log.exception("knowledge-base check failed")
                continue
            for text in problems:
                log.warning("knowledge base: %s", text)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
