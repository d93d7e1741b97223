"""Ingestion, the knowledge base's only writer: folder scan, upload, re-index, delete and recovery,
keeping the database rows, the Milvus vectors and the in-memory catalog (L0) in step.

Status moves PENDING → PROCESSING → INDEXED | FAILED (with ``error_message``). A file that fails is
recorded as FAILED and the import goes on. Unchanged files are skipped by relative path and content
hash; ``force`` re-imports everything, replacing vectors rather than adding to them. Every change
bumps the knowledge version, which other workers watch to refresh their catalog.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path, PurePosixPath

from persistence import document_repository as docs_repo
from persistence.db import Database
from persistence.models import ApiDocument, DocumentStatus, utcnow
from retrieval.l0.catalog import DocInfo, DocumentCatalog, compact_summary
from retrieval.l1.freed_memory import release_memory
from retrieval.l1.store import ChunkStore
from retrieval.l1.vector_census import files_removed
from retrieval.parsing.doc_fields import DocFields
from retrieval.parsing.documents import DocumentError, ParsedDocument, parse_bounded
from retrieval.parsing.terms import judge_fields
from retrieval.writing import failures
from retrieval.writing.errors import (
    DocumentExists,
    DocumentNotFound,
    ImportInProgress,
    InvalidChunking,
    InvalidDocument,
    InvalidUpload,
    VectorStoreDamaged,
    store_files_removed,
)
from retrieval.writing.import_rows import REFUSED, is_current, is_refused, new_document
from retrieval.writing.import_windows import import_windows
from retrieval.writing.indexer import VectorIndexer
from retrieval.writing.progress import Progress, embedding_progress, emit
from retrieval.writing.upload_undo import UploadUndo
from retrieval.writing.uploads import (
    ALLOWED_SUFFIXES,
    FileResult,
    ImportReport,
    check_upload,
    inside,
    remove_file,
    store_file,
)
from telemetry import metrics

log = logging.getLogger(__name__)

Enricher = Callable[[ParsedDocument], Awaitable[ParsedDocument]]
ChangeHook = Callable[[set[str]], Awaitable[None]]
Todo = list[tuple[str, bytes, str]]  # (relative path, content, sha256) of files to import


class IngestionService:
    def __init__(
        self,
        db: Database,
        store: ChunkStore,
        catalog: DocumentCatalog,
        kb_dir: Path,
        *,
        chunk_size: int = 500,
        chunk_overlap: int = 50,
        max_upload_bytes: int = 10 * 1024 * 1024,
        enrich: Enricher | None = None,
        on_change: ChangeHook | None = None,
    ) -> None:
        self.db, self.store, self.catalog = db, store, catalog
        self.kb_dir = Path(kb_dir)
        self.indexer = VectorIndexer(store, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        self.max_upload_bytes = max_upload_bytes
        self.enrich, self.on_change = enrich, on_change
        self._write_lock = asyncio.Lock()

    @property
    def busy(self) -> bool:
        return self._write_lock.locked()

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """Hold the document-write lock: nothing else in this process writes documents meanwhile.
        On leaving it memory goes back to the system: a large document's parse, chunks, payloads
        (hundreds of MB for a 5 MB file) and the model's word cache otherwise stay resident."""
        try:
            async with self._write_lock:
                yield
        finally:
            await asyncio.to_thread(release_memory, self.store.embeddings)

    async def ensure_writable(self) -> None:
        """Refuse a change up front when the vector store could not take it (nothing is touched)."""
        if await self._store_damaged():
            raise VectorStoreDamaged(f"{store_files_removed(self.store.uri)}. Nothing was changed.")

    async def _store_damaged(self) -> bool:
        try:
            return await asyncio.to_thread(files_removed, self.store)
        except Exception:  # unreachable: each import then fails with that reason, as before
            return False

    async def changed(self, categories: set[str]) -> None:
        """After a document change: bump the knowledge version, refresh the touched domains."""
        await self._changed(categories)

    async def _changed(self, categories: set[str]) -> None:
        async with self.db.session() as s:
            self.catalog.version = await docs_repo.bump_knowledge_version(s)
        if self.on_change and categories:
            try:
                await self.on_change(categories)
            except Exception:  # domain summaries are a convenience; never fail an import
                log.exception("knowledge change hook failed for %s", sorted(categories))

    # --- folder import ------------------------------------------------------------------------

    def scan(self) -> list[str]:
        if not self.kb_dir.is_dir():
            return []
        out = []
        for p in sorted(self.kb_dir.rglob("*")):
            if p.is_file() and p.suffix.lower() in ALLOWED_SUFFIXES and not p.name.startswith("."):
                out.append(p.relative_to(self.kb_dir).as_posix())
        return out

    async def init(self, force: bool = False, progress: Progress | None = None) -> ImportReport:
        if self._write_lock.locked():
            raise ImportInProgress("an import is already running; wait for it to finish")
        await self.ensure_writable()
        async with self.writing():
            report = await self._init(force, progress)
        metrics.record_import_run(force, report.duration_ms / 1000, report.count("SKIPPED"))
        return report

    async def _init(self, force: bool, progress: Progress | None) -> ImportReport:
        t0 = time.perf_counter()
        report = ImportReport()
        files = await asyncio.to_thread(self.scan)
        async with self.db.session() as s:
            known = {r.file_path: r for r in await docs_repo.all_documents(s)}
        todo, remembered = await self._plan(files, known, force, report)
        report.results += remembered
        await self._mark_pending([rel for rel, _, _ in todo], known)
        await emit(
            progress, {"event": "start", "total": len(todo), "skipped": report.count("SKIPPED")}
        )
        touched: set[str] = set()
        async with self.indexer.run(fresh_paths={rel for rel, _, _ in todo if rel not in known}):
            await self._import_all(todo, report, touched, progress)
            await self._forget_removed(known, set(files), report, touched)
        if touched or any(r.status == "FAILED" and r not in remembered for r in report.results):
            await self._changed(touched)
        report.duration_ms = (time.perf_counter() - t0) * 1000
        await emit(
            progress,
            {"event": "done", **{k: v for k, v in report.as_dict().items() if k != "files"}},
        )
        return report

    async def _plan(
        self, files: list[str], known: dict[str, ApiDocument], force: bool, report: ImportReport
    ) -> tuple[Todo, list[FileResult]]:
        """What to import; unreadable and unchanged files go into ``report`` (and refused ones,
        unchanged since, into the second list: the reason still holds)."""
        todo: Todo = []
        remembered: list[FileResult] = []
        for rel in files:
            try:
                raw = await asyncio.to_thread((self.kb_dir / rel).read_bytes)
            except OSError as exc:  # this file fails with a reason; the import goes on
                log.warning("cannot read %s", rel, exc_info=True)
                doc_id = known[rel].doc_id if rel in known else None
                error = f"{rel}: {failures.describe(exc)}"
                report.results.append(FileResult(rel, "FAILED", doc_id, error=error))
                continue
            digest = hashlib.sha256(raw).hexdigest()
            row = known.get(rel)
            if row and not force and row.content_hash == digest:
                if is_current(row):
                    report.results.append(FileResult(rel, "SKIPPED", row.doc_id, row.chunk_count))
                    continue
                if is_refused(row):
                    remembered.append(
                        FileResult(rel, "FAILED", row.doc_id, error=row.error_message)
                    )
                    continue
            todo.append((rel, raw, digest))
        return todo, remembered

    async def _import_all(
        self, todo: Todo, report: ImportReport, touched: set[str], progress: Progress | None
    ) -> None:
        """Import ``todo`` window by window (inside ``indexer.run``): each window's chunks are
        embedded in one batch, then its files are imported one by one."""
        total = len(todo)
        for start, window in import_windows(todo):
            # (Embedding the next window while this one is written measured no faster: the
            # model already keeps both cores busy.)
            files = [rel for rel, _, _ in window]
            await asyncio.to_thread(
                self.indexer.prepare, window, embedding_progress(progress, files, start, total)
            )
            for i, (rel, raw, digest) in enumerate(window, start=start + 1):
                event = {"event": "file", "index": i, "total": total, "file": rel}
                await emit(progress, event | {"status": "PROCESSING"})
                result, category = await self._import(rel, raw, digest)
                report.results.append(result)
                if category:
                    touched.add(category)
                await emit(
                    progress,
                    event
                    | {"status": result.status, "error": result.error, "chunks": result.chunks},
                )
                if result.status == "FAILED" and await self._store_damaged():
                    # Every further file would fail the same way: stop; they stay PENDING.
                    raise VectorStoreDamaged(store_files_removed(self.store.uri))
            self.indexer.end_window()

    async def _forget_removed(
        self,
        known: dict[str, ApiDocument],
        files: set[str],
        report: ImportReport,
        touched: set[str],
    ) -> None:
        for rel, row in known.items():
            if rel in files:
                continue
            try:  # the file is gone from the folder: forget it everywhere
                await self._forget(row)
            except ConnectionError as exc:  # vectors cannot go yet: keep the row
                log.warning("could not forget %s: %s", rel, exc)
                reason = failures.describe(exc, vector_store=self.store.uri)
                report.results.append(
                    FileResult(rel, "FAILED", row.doc_id, error=f"not removed: {reason}")
                )
                continue
            touched.add(row.category)
            report.results.append(FileResult(rel, "REMOVED", row.doc_id))

    async def _mark_pending(self, paths: list[str], known: dict[str, ApiDocument]) -> None:
        new = [new_document(rel) for rel in paths if rel not in known]
        async with self.db.session() as s:
            await docs_repo.mark_pending(s, new, [known[rel] for rel in paths if rel in known])

    async def reimport(
        self, rows: Sequence[ApiDocument], *, gone: str, progress: Progress | None = None
    ) -> ImportReport:
        """Import these documents again from their files (recovery; call it inside
        :meth:`writing`). A document whose file is gone is marked FAILED, ``gone`` saying why."""
        report, todo, touched = ImportReport(), [], set()
        for row in rows:
            try:
                raw = await asyncio.to_thread((self.kb_dir / row.file_path).read_bytes)
            except OSError as exc:
                reason = gone if isinstance(exc, FileNotFoundError) else failures.describe(exc)
                await self._fail(row.doc_id, reason)
                report.results.append(FileResult(row.file_path, "FAILED", row.doc_id, error=reason))
                touched.add(row.category)
                continue
            todo.append((row.file_path, raw, hashlib.sha256(raw).hexdigest()))
        async with self.indexer.run():
            await self._import_all(todo, report, touched, progress)
        if report.results:
            await self._changed(touched)
        return report

    # --- one file -----------------------------------------------------------------------------

    async def _import(
        self,
        rel: str,
        raw: bytes,
        digest: str,
        given: DocFields | None = None,
        *,
        raise_full: bool = False,
    ) -> tuple[FileResult, str | None]:
        """``given``: the upload's fields; None keeps those of the last upload of this file.
        ``raise_full``: a full disk raises (an upload undoes itself) instead of storing FAILED."""
        t0 = time.perf_counter()
        async with self.db.session() as s:
            row = await docs_repo.start_import(
                s, new_document(rel), content_hash=digest, file_size=len(raw)
            )
            doc_id, old_category, enabled = row.doc_id, row.category, row.enabled
            if given is None:
                given = DocFields.from_given((row.doc_metadata or {}).get("given"))
        result = FileResult(rel, "FAILED", doc_id)
        try:
            parsed = self.indexer.with_fields(await parse_bounded(raw, rel), given)
            if self.enrich and (not parsed.covers or not parsed.when_to_retrieve):
                parsed = await self.enrich(parsed)
            n = await asyncio.to_thread(self.indexer.index, doc_id, parsed)
        except Exception as exc:
            if raise_full and failures.is_disk_full(exc):
                raise
            reason = failures.describe(exc, vector_store=self.store.uri)
            # The raw error is for the log only.
            log.warning(
                "import of %s failed: %s", rel, reason, exc_info=not isinstance(exc, DocumentError)
            )
            # An unchanged refused file is not parsed again on every init.
            await self._fail(doc_id, reason, refused=isinstance(exc, DocumentError))
            result.error = reason
            result.duration_ms = (time.perf_counter() - t0) * 1000
            metrics.record_document_import(result.status, result.duration_ms / 1000)
            return result, old_category
        named = " ".join([parsed.title, PurePosixPath(rel).stem, *parsed.keywords, parsed.body])
        counted = await asyncio.to_thread(judge_fields, named)  # jieba, a body scan: off the loop
        meta = parsed.metadata() | {
            "compact": compact_summary(parsed.title, parsed.summary, parsed.body),
            **counted,
            "given": given.given(),
        }
        async with self.db.session() as s:
            await docs_repo.update_document(
                s,
                doc_id,
                status=DocumentStatus.INDEXED,
                error_message=None,
                title=parsed.title[:512],
                category=parsed.category,
                chunk_count=n,
                doc_metadata=meta,
                indexed_at=utcnow(),
                **self.indexer.columns(parsed),
            )
        if enabled:
            self.catalog.put(DocInfo.from_row(doc_id, rel, parsed.title, parsed.category, meta))
        else:
            self.catalog.disable(doc_id)
        result.status, result.chunks = "INDEXED", n
        result.warnings, result.derived = parsed.warnings, parsed.derived
        result.duration_ms = (time.perf_counter() - t0) * 1000
        metrics.record_document_import(result.status, result.duration_ms / 1000)
        return result, parsed.category

    async def _fail(self, doc_id: str, reason: str, *, refused: bool = False) -> None:
        """FAILED with ``reason``, and gone from the vector store and the catalog."""
        await asyncio.to_thread(self.indexer.drop, doc_id)
        self.catalog.remove(doc_id)
        async with self.db.session() as s:
            await docs_repo.update_document(
                s,
                doc_id,
                status=DocumentStatus.FAILED,
                error_message=reason[:2000],
                chunk_count=0,
                **({"doc_metadata": {REFUSED: True}} if refused else {}),
            )

    async def _forget(self, row: ApiDocument) -> None:
        await asyncio.to_thread(self.store.delete_doc, row.doc_id)
        self.catalog.remove(row.doc_id)
        async with self.db.session() as s:
            await docs_repo.delete_document(s, row.doc_id)

    # --- single-document operations -----------------------------------------------------------

    def check_upload(self, filename: str, category: str, size: int | None) -> tuple[str, str]:
        """Validate before anything is written; returns (relative path, category)."""
        return check_upload(filename, category, size, self.max_upload_bytes)

    async def upload(
        self,
        filename: str,
        data: bytes,
        category: str,
        *,
        replace: bool = False,
        fields: DocFields | None = None,
    ) -> FileResult:
        """Check, store and index one file (``fields``: the form's, see ``doc_fields.py``). Content
        that cannot be imported is refused before anything is written; the file and its row are
        written together or not at all."""
        rel, _ = self.check_upload(filename, category, len(data))
        fields = fields or DocFields()
        if problem := self.indexer.check_chunking(fields):
            raise InvalidChunking(problem)
        target = self.kb_dir / rel
        if not await asyncio.to_thread(inside, target, self.kb_dir):
            raise InvalidUpload(f"{filename!r} would be stored outside the knowledge base")
        try:
            self.indexer.with_fields(await parse_bounded(data, rel), fields)
        except DocumentError as exc:
            raise InvalidDocument(f"{exc}; nothing was stored") from None
        await self.ensure_writable()
        async with self.writing():
            async with self.db.session() as s:
                existing = await docs_repo.get_document_by_path(s, rel)
            if (existing or await asyncio.to_thread(target.exists)) and not replace:
                raise DocumentExists(
                    f"{rel} already exists; delete it first or upload with replace=true"
                )
            async with UploadUndo(self, rel, target, existing):
                await store_file(
                    target,
                    data,
                    record=lambda: self._mark_pending([rel], {rel: existing} if existing else {}),
                )
                result, category_touched = await self._import(
                    rel, data, hashlib.sha256(data).hexdigest(), fields, raise_full=True
                )
            await self._changed({category_touched} if category_touched else set())
            return result

    async def _existing(self, doc_id: str) -> ApiDocument:
        async with self.db.session() as s:
            row = await docs_repo.get_document(s, doc_id)
        if row is None:
            raise DocumentNotFound(f"document {doc_id} does not exist")
        return row

    async def reindex(self, doc_id: str) -> FileResult:
        await self.ensure_writable()
        async with self.writing():
            row = await self._existing(doc_id)
            path = self.kb_dir / row.file_path
            if not await asyncio.to_thread(path.is_file):
                raise DocumentNotFound(f"{row.file_path} is no longer in the knowledge-base folder")
            raw = await asyncio.to_thread(path.read_bytes)
            result, category = await self._import(
                row.file_path, raw, hashlib.sha256(raw).hexdigest()
            )
            await self._changed({category} if category else set())
            return result

    async def delete(self, doc_id: str) -> ApiDocument:
        """Remove the row, its vectors, its L0 entries and its file, together."""
        await self.ensure_writable()
        async with self.writing():
            row = await self._existing(doc_id)
            await self._forget(row)
            path = self.kb_dir / row.file_path
            if await asyncio.to_thread(inside, path, self.kb_dir):
                await asyncio.to_thread(remove_file, path, self.kb_dir)
            await self._changed({row.category})
            return row
