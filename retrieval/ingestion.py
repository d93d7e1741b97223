"""Ingestion: folder scan, upload, re-index and delete, keeping the database rows, the Milvus vectors
and the in-memory catalog (L0) in step.

Status moves PENDING → PROCESSING → INDEXED | FAILED (with ``error_message``). A file that fails is
recorded as FAILED and the import goes on. Unchanged files are skipped by relative path and content
hash; ``force`` re-imports everything, replacing vectors rather than adding to them. Every change
bumps the knowledge version, which other workers watch to refresh their catalog.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from typing import Any

import sqlalchemy as sa
from sqlmodel import select

from persistence import repository as repo
from persistence.db import Database
from persistence.models import ApiDocument, DocumentStatus, utcnow
from retrieval import failures
from retrieval.catalog import DocInfo, DocumentCatalog, compact_summary
from retrieval.chunking import Chunk, card_text, chunk_document, with_card
from retrieval.documents import (
    DocumentError,
    ParsedDocument,
    parse_bounded,
    parse_document,
    section_titles,
)
from retrieval.errors import (
    DocumentExists,
    DocumentNotFound,
    ImportInProgress,
    InvalidDocument,
    InvalidUpload,
)
from retrieval.store import ChunkStore
from retrieval.terms import document_terms
from retrieval.uploads import (
    ALLOWED_SUFFIXES,
    FileResult,
    ImportReport,
    check_upload,
    inside,
    store_file,
)

log = logging.getLogger(__name__)

PREPARE_FILES = 8  # init() embeds the chunks of this many files in one batch
Progress = Callable[[dict[str, Any]], Any]
Enricher = Callable[[ParsedDocument], Awaitable[ParsedDocument]]
ChangeHook = Callable[[set[str]], Awaitable[None]]
REFUSED = "refused"  # doc_metadata flag: the content itself was refused (not a passing fault)


def _refused(row: ApiDocument) -> bool:
    return row.status == DocumentStatus.FAILED and bool((row.doc_metadata or {}).get(REFUSED))


async def _emit(progress: Progress | None, event: dict[str, Any]) -> None:
    if progress is None:
        return
    out = progress(event)
    if inspect.isawaitable(out):
        await out


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
        self.chunk_size, self.chunk_overlap = chunk_size, chunk_overlap
        self.max_upload_bytes = max_upload_bytes
        self.enrich, self.on_change = enrich, on_change
        self._write_lock = asyncio.Lock()
        # Paths first seen by the running init(): fresh doc_ids, so no vectors to delete yet.
        self._fresh_paths: set[str] = set()
        # Chunks computed ahead by init()'s batch embedding, keyed by (path, title, body).
        self._chunk_memo: dict[tuple[str, str, str], list[Chunk]] = {}

    @property
    def busy(self) -> bool:
        return self._write_lock.locked()

    # --- catalog ------------------------------------------------------------------------------

    async def load_catalog(self) -> int:
        """Rebuild the in-memory catalog (and L0 index) from the INDEXED rows."""
        async with self.db.session() as s:
            version = await repo.knowledge_version(s)
            rows = (
                await s.execute(
                    select(ApiDocument).where(ApiDocument.status == DocumentStatus.INDEXED)
                )
            ).scalars()
            docs = [
                DocInfo.from_row(r.doc_id, r.file_path, r.title, r.category, r.doc_metadata)
                for r in rows
            ]
        self.catalog.replace_all(docs, version)
        return version

    async def refresh_if_stale(self) -> bool:
        """Cheap per-lookup check (one indexed SELECT) that keeps several workers in step."""
        async with self.db.session() as s:
            version = await repo.knowledge_version(s)
        if version != self.catalog.version:
            await self.load_catalog()
            return True
        return False

    async def _changed(self, categories: set[str]) -> None:
        async with self.db.session() as s:
            self.catalog.version = await repo.bump_knowledge_version(s)
        if self.on_change and categories:
            try:
                await self.on_change(categories)
            except Exception:  # domain summaries are a convenience; never fail an import
                log.exception("knowledge change hook failed for %s", sorted(categories))

    # --- scanning -----------------------------------------------------------------------------

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
        async with self._write_lock:
            return await self._init(force, progress)

    async def _init(self, force: bool, progress: Progress | None) -> ImportReport:
        t0 = time.perf_counter()
        report = ImportReport()
        files = await asyncio.to_thread(self.scan)
        async with self.db.session() as s:
            known = {r.file_path: r for r in (await s.execute(select(ApiDocument))).scalars()}
        todo: list[tuple[str, bytes, str]] = []
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
                if row.status == DocumentStatus.INDEXED:
                    report.results.append(FileResult(rel, "SKIPPED", row.doc_id, row.chunk_count))
                    continue
                if _refused(row):  # unchanged since it was refused: the reason still holds
                    remembered.append(
                        FileResult(rel, "FAILED", row.doc_id, error=row.error_message)
                    )
                    continue
            todo.append((rel, raw, digest))
        report.results += remembered
        await self._mark_pending([rel for rel, _, _ in todo], known)
        touched: set[str] = set()
        total = len(todo)
        await _emit(
            progress, {"event": "start", "total": total, "skipped": report.count("SKIPPED")}
        )
        # Files without a row before this run get a fresh doc_id, so they cannot have vectors yet:
        # their Milvus delete (a scan of the collection) is skipped.
        self._fresh_paths = {rel for rel, _, _ in todo if rel not in known}
        # One vector batch for the whole run: Milvus flushes (and builds its indexes) once at the
        # end, or every ``flush_rows`` rows, instead of after every file.
        self.store.begin_bulk()
        try:
            windows = [todo[i : i + PREPARE_FILES] for i in range(0, total, PREPARE_FILES)]
            for w, window in enumerate(windows):
                # Embed the window's chunks in one batch; then import its files one by one.
                # (Embedding the next window while this one is written measured no faster: the
                # model already keeps both cores busy.)
                await asyncio.to_thread(self._prepare_vectors, window)
                for i, (rel, raw, digest) in enumerate(window, start=w * PREPARE_FILES + 1):
                    await _emit(
                        progress,
                        {
                            "event": "file",
                            "index": i,
                            "total": total,
                            "file": rel,
                            "status": "PROCESSING",
                        },
                    )
                    result, category = await self._import(rel, raw, digest)
                    report.results.append(result)
                    if category:
                        touched.add(category)
                    await _emit(
                        progress,
                        {
                            "event": "file",
                            "index": i,
                            "total": total,
                            "file": rel,
                            "status": result.status,
                            "error": result.error,
                            "chunks": result.chunks,
                        },
                    )
                self._chunk_memo.clear()  # whatever a failed file left behind
                self.store.discard_prepared()
            for rel, row in known.items():
                if rel not in files:  # the file is gone from the folder: forget it everywhere
                    try:
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
        finally:
            self._fresh_paths = set()
            self._chunk_memo.clear()
            self.store.discard_prepared()
            try:
                await asyncio.to_thread(self.store.end_bulk)
            except ConnectionError as exc:  # nothing was written if the store is down
                log.warning("vector store flush skipped: %s", exc)
        if touched or any(r.status == "FAILED" and r not in remembered for r in report.results):
            await self._changed(touched)
        report.duration_ms = (time.perf_counter() - t0) * 1000
        await _emit(
            progress,
            {"event": "done", **{k: v for k, v in report.as_dict().items() if k != "files"}},
        )
        return report

    async def _mark_pending(self, paths: list[str], known: dict[str, ApiDocument]) -> None:
        async with self.db.session() as s:
            for rel in paths:
                row = known.get(rel)
                if row is None:
                    s.add(
                        ApiDocument(
                            doc_id=uuid.uuid4().hex,
                            file_name=PurePosixPath(rel).name,
                            file_path=rel,
                            category=PurePosixPath(rel).parts[0] if "/" in rel else "general",
                            status=DocumentStatus.PENDING,
                        )
                    )
                else:
                    await s.execute(
                        sa.update(ApiDocument)
                        .where(ApiDocument.id == row.id)
                        .values(status=DocumentStatus.PENDING, updated_at=utcnow())
                    )
            await s.commit()

    # --- one file -----------------------------------------------------------------------------

    async def _import(self, rel: str, raw: bytes, digest: str) -> tuple[FileResult, str | None]:
        t0 = time.perf_counter()
        async with self.db.session() as s:
            row = await repo.get_document_by_path(s, rel)
            if row is None:
                row = ApiDocument(
                    doc_id=uuid.uuid4().hex, file_name=PurePosixPath(rel).name, file_path=rel
                )
                s.add(row)
            row.status = DocumentStatus.PROCESSING
            row.updated_at = utcnow()
            row.content_hash, row.file_size = digest, len(raw)
            await s.commit()
            doc_id, old_category = row.doc_id, row.category
        result = FileResult(rel, "FAILED", doc_id)
        try:
            parsed = await parse_bounded(raw, rel)
            if self.enrich and (not parsed.covers or not parsed.when_to_retrieve):
                parsed = await self.enrich(parsed)
            n = await asyncio.to_thread(self._index_vectors, doc_id, parsed)
        except Exception as exc:
            reason = failures.describe(exc, vector_store=self.store.uri)
            # The raw error is for the log only.
            log.warning(
                "import of %s failed: %s", rel, reason, exc_info=not isinstance(exc, DocumentError)
            )
            await asyncio.to_thread(self._drop_vectors, doc_id)
            self.catalog.remove(doc_id)
            async with self.db.session() as s:
                await repo.update_document(
                    s,
                    doc_id,
                    status=DocumentStatus.FAILED,
                    error_message=reason[:2000],
                    chunk_count=0,
                    # An unchanged refused file is not parsed again on every init.
                    **({"doc_metadata": {REFUSED: True}} if isinstance(exc, DocumentError) else {}),
                )
            result.error = reason
            result.duration_ms = (time.perf_counter() - t0) * 1000
            return result, old_category
        named = " ".join([parsed.title, PurePosixPath(rel).stem, *parsed.keywords, parsed.body])
        meta = parsed.metadata() | {
            "compact": compact_summary(parsed.title, parsed.summary, parsed.body),
            "terms": await asyncio.to_thread(document_terms, named),  # jieba: off the loop
        }
        async with self.db.session() as s:
            await repo.update_document(
                s,
                doc_id,
                status=DocumentStatus.INDEXED,
                error_message=None,
                title=parsed.title[:512],
                category=parsed.category,
                chunk_count=n,
                doc_metadata=meta,
                indexed_at=utcnow(),
            )
        self.catalog.put(DocInfo.from_row(doc_id, rel, parsed.title, parsed.category, meta))
        result.status, result.chunks = "INDEXED", n
        result.warnings, result.derived = parsed.warnings, parsed.derived
        result.duration_ms = (time.perf_counter() - t0) * 1000
        return result, parsed.category

    def _chunks(self, parsed: ParsedDocument) -> list[Chunk]:
        emb = self.store.embeddings
        count = getattr(emb, "count_tokens", None) or (lambda t: len(t.split()))
        window = getattr(emb, "max_tokens", None)
        body = chunk_document(
            parsed.title,
            parsed.body,
            size=self.chunk_size,
            overlap=self.chunk_overlap,
            count=count,
            window=window,
        )
        card = card_text(
            file_stem=PurePosixPath(parsed.file_path).stem,
            keywords=parsed.keywords,
            summary=parsed.summary,
            covers=parsed.covers,
            sections=section_titles(parsed.body),
        )
        return with_card(body, parsed.title, card, min(self.chunk_size, window or 10**9), count)

    def _prepare_vectors(self, window: list[tuple[str, bytes, str]]) -> None:
        """Parse, chunk and embed a window of files ahead of their one-by-one import.

        Several small files' chunks embed ~1.25× faster as one length-sorted batch than file by
        file. Best effort: a file that does not parse here is skipped (its import reports why), and
        if the batch cannot be embedded each file embeds its own chunks as before.
        """
        texts: list[str] = []
        for rel, raw, _ in window:
            try:
                parsed = parse_document(raw, rel)
                chunks = self._chunks(parsed)
            except Exception:
                continue
            self._chunk_memo[(parsed.file_path, parsed.title, parsed.body)] = chunks
            texts += [c.indexed_text for c in chunks]
        try:
            self.store.prepare(texts)
        except Exception:
            log.warning("batch embedding failed; embedding file by file", exc_info=True)

    def _index_vectors(self, doc_id: str, parsed: ParsedDocument) -> int:
        chunks = self._chunk_memo.pop((parsed.file_path, parsed.title, parsed.body), None)
        if chunks is None:
            chunks = self._chunks(parsed)
        with self.store.bulk():  # delete + insert: one flush (or none inside an import run)
            # Replace, never append: a re-import must not leave the old version's vectors behind.
            if parsed.file_path not in self._fresh_paths:
                self.store.delete_doc(doc_id)
            try:
                return self.store.add_chunks(
                    doc_id=doc_id,
                    file_path=parsed.file_path,
                    category=parsed.category,
                    chunks=chunks,
                )
            except Exception:
                self._drop_vectors(doc_id)
                raise

    def _drop_vectors(self, doc_id: str) -> None:
        try:
            self.store.delete_doc(doc_id)
        except Exception:
            log.warning("could not remove vectors of %s", doc_id, exc_info=True)

    async def _forget(self, row: ApiDocument) -> None:
        await asyncio.to_thread(self.store.delete_doc, row.doc_id)
        self.catalog.remove(row.doc_id)
        async with self.db.session() as s:
            await s.execute(sa.delete(ApiDocument).where(ApiDocument.doc_id == row.doc_id))
            await s.commit()

    # --- single-document operations -----------------------------------------------------------

    def check_upload(self, filename: str, category: str, size: int | None) -> tuple[str, str]:
        """Validate before anything is written; returns (relative path, category)."""
        return check_upload(filename, category, size, self.max_upload_bytes)

    async def upload(
        self, filename: str, data: bytes, category: str, *, replace: bool = False
    ) -> FileResult:
        """Check, store and index one file. Content that cannot be imported is refused before
        anything is written; the file and its row are written together or not at all."""
        rel, _ = self.check_upload(filename, category, len(data))
        target = self.kb_dir / rel
        if not await asyncio.to_thread(inside, target, self.kb_dir):
            raise InvalidUpload(f"{filename!r} would be stored outside the knowledge base")
        try:
            await parse_bounded(data, rel)
        except DocumentError as exc:
            raise InvalidDocument(f"{exc}; nothing was stored") from None
        async with self._write_lock:
            async with self.db.session() as s:
                existing = await repo.get_document_by_path(s, rel)
            if (existing or await asyncio.to_thread(target.exists)) and not replace:
                raise DocumentExists(
                    f"{rel} already exists; delete it first or upload with replace=true"
                )
            await store_file(
                target,
                data,
                record=lambda: self._mark_pending([rel], {rel: existing} if existing else {}),
            )
            result, category_touched = await self._import(
                rel, data, hashlib.sha256(data).hexdigest()
            )
            await self._changed({category_touched} if category_touched else set())
            return result

    async def _existing(self, doc_id: str) -> ApiDocument:
        async with self.db.session() as s:
            row = await repo.get_document(s, doc_id)
        if row is None:
            raise DocumentNotFound(f"document {doc_id} does not exist")
        return row

    async def reindex(self, doc_id: str) -> FileResult:
        async with self._write_lock:
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
        async with self._write_lock:
            row = await self._existing(doc_id)
            await self._forget(row)
            path = self.kb_dir / row.file_path
            if await asyncio.to_thread(inside, path, self.kb_dir):
                await asyncio.to_thread(path.unlink, missing_ok=True)
            await self._changed({row.category})
            return row

    async def stats(self) -> dict[str, Any]:
        """Documents per status and category, vectors, knowledge version, last import."""
        async with self.db.session() as s:
            out = await repo.document_stats(s)
        try:
            out["vectors"] = await asyncio.to_thread(self.store.count)
        except Exception:  # the vector store being down must not hide the rest
            out["vectors"] = None
        out["importing"] = self.busy
        return out
