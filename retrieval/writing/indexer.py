"""The vector side of an import: chunk a parsed document, embed it and write its vectors, replacing
the old ones. Inside an import run, several files' chunks are embedded in one batch and Milvus
flushes once at the end. A chunk whose text is already stored keeps its vector, and a document whose
stored chunks are already what would be written is left alone (``embedding_cache.py``). Blocking
(model and Milvus calls): the async parts run it in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from retrieval.l1.embedding_cache import StoredChunk, unchanged
from retrieval.l1.store import ChunkStore
from retrieval.parsing.chunking import Chunk, card_text, chunk_document, with_card
from retrieval.parsing.doc_fields import (
    DEFAULT_VERSION,
    DocFields,
    chunking_problem,
    chunking_warnings,
)
from retrieval.parsing.documents import (
    DocumentError,
    ParsedDocument,
    parse_document,
    section_titles,
)

log = logging.getLogger(__name__)
PROGRESS_SLICE = 64  # chunks embedded between two progress reports (fewer, bigger calls ran faster)


class VectorIndexer:
    def __init__(self, store: ChunkStore, *, chunk_size: int, chunk_overlap: int) -> None:
        self.store = store
        self.chunk_size, self.chunk_overlap = chunk_size, chunk_overlap
        # Paths first seen by the running import: fresh doc_ids, so no vectors to delete yet.
        self._fresh_paths: set[str] = set()
        # Chunks computed ahead by a run's batch embedding, keyed by what they depend on.
        self._chunk_memo: dict[tuple[object, ...], list[Chunk]] = {}
        # Stored rows of a window's files, read back in one query by ``prepare``.
        self._stored_memo: dict[str, list[StoredChunk]] = {}
        self._in_run = False

    @contextlib.asynccontextmanager
    async def run(self, fresh_paths: Iterable[str] = ()) -> AsyncIterator[None]:
        """One vector batch for a whole import: Milvus flushes (and builds its indexes) once at
        the end, or every ``flush_rows`` rows, instead of after every file. Files in
        ``fresh_paths`` have no row before this run, so their Milvus delete (a scan of the
        collection) is skipped."""
        self._fresh_paths = set(fresh_paths)
        self._in_run = True
        self.store.begin_bulk()
        failing = False
        try:
            yield
        except BaseException:
            failing = True
            raise
        finally:
            self._fresh_paths, self._in_run = set(), False
            self.end_window()
            try:
                await asyncio.to_thread(self.store.end_bulk)
            except ConnectionError as exc:  # nothing was written if the store is down
                log.warning("vector store flush skipped: %s", exc)
            except Exception:
                if not failing:
                    raise
                # The run's own failure is what the caller must see, not this one's.
                log.warning("vector store flush after a failed import failed too", exc_info=True)

    def end_window(self) -> None:
        """Forget whatever a window's failed files left prepared."""
        self._chunk_memo.clear()
        self._stored_memo.clear()
        self.store.discard_prepared()

    @property
    def window(self) -> int | None:
        """The embedding model's window in its own tokens (None: unknown, no limit)."""
        return getattr(self.store.embeddings, "max_tokens", None)

    def chunking(self, parsed: ParsedDocument) -> tuple[int, int]:
        """(size, overlap) this document is chunked with: its own, else the configured ones;
        the size never above the model's window."""
        size = parsed.fields.chunk_size or self.chunk_size
        overlap = parsed.fields.chunk_overlap
        size = min(size, self.window or size)
        return size, min(self.chunk_overlap if overlap is None else overlap, size // 2)

    def check_chunking(self, fields: DocFields) -> str:
        """What is wrong with a document's chunk parameters for this model ('' if nothing)."""
        window = self.window or 10**9
        return chunking_problem(fields.chunk_size, fields.chunk_overlap, self.chunk_size, window)

    def with_fields(self, parsed: ParsedDocument, given: DocFields) -> ParsedDocument:
        """The document with the upload's fields over its frontmatter's (``doc_fields.py``);
        chunk parameters the model cannot take fail the import, naming the range."""
        merged, warnings = given.over(parsed.fields)
        if problem := self.check_chunking(merged):
            raise DocumentError(f"{parsed.file_path}: {problem}")
        window = self.window or 10**9
        capped = chunking_warnings(merged.chunk_size, merged.chunk_overlap, self.chunk_size, window)
        return replace(parsed, fields=merged, warnings=[*parsed.warnings, *warnings, *capped])

    def columns(self, parsed: ParsedDocument) -> dict[str, Any]:
        """The document's fields as its row records them: the chunking actually used."""
        size, overlap = self.chunking(parsed)
        f = parsed.fields
        return {
            "fault_source": f.fault_source,
            "api_name": f.api_name,
            "version": f.version or DEFAULT_VERSION,
            "chunk_size": size,
            "chunk_overlap": overlap,
        }

    def _key(self, parsed: ParsedDocument) -> tuple[object, ...]:
        return (parsed.file_path, parsed.title, parsed.body, self.chunking(parsed))

    def _chunks(self, parsed: ParsedDocument) -> list[Chunk]:
        emb = self.store.embeddings
        count = getattr(emb, "count_tokens", None) or (lambda t: len(t.split()))
        window = self.window
        size, overlap = self.chunking(parsed)
        body = chunk_document(
            parsed.title, parsed.body, size=size, overlap=overlap, count=count, window=window
        )
        card = card_text(
            file_stem=PurePosixPath(parsed.file_path).stem,
            keywords=parsed.keywords,
            summary=parsed.summary,
            covers=parsed.covers,
            sections=section_titles(parsed.body),
        )
        return with_card(body, parsed.title, card, size, count)

    def prepare(
        self,
        window: list[tuple[str, bytes, str]],
        on_embedded: Callable[[int, int], None] | None = None,
    ) -> None:
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
            self._chunk_memo[self._key(parsed)] = chunks
            texts += [c.indexed_text for c in chunks]
        self._read_stored([rel for rel, _, _ in window if rel not in self._fresh_paths])
        # Longest first, then in slices: the model sees the same length-sorted batches as in one
        # call, and ``on_embedded(done, total)`` reports each slice (a big window takes minutes).
        # ``prepare`` embeds only the texts no stored vector covers.
        texts = sorted(dict.fromkeys(texts), key=len, reverse=True)
        try:
            for start in range(0, len(texts), PROGRESS_SLICE):
                self.store.prepare(texts[start : start + PROGRESS_SLICE])
                if on_embedded:
                    on_embedded(min(start + PROGRESS_SLICE, len(texts)), len(texts))
        except Exception:
            log.warning("batch embedding failed; embedding file by file", exc_info=True)

    def _read_stored(self, paths: list[str]) -> None:
        """One query for the stored rows of a window's known files; their vectors become reusable."""
        if not paths:
            return
        try:
            rows = self.store.stored_chunks(file_paths=paths)
        except Exception:  # reuse is an optimisation: without it every chunk is embedded
            log.warning("could not read stored vectors; embedding every chunk", exc_info=True)
            return
        for path in paths:
            self._stored_memo[path] = []
        for row in rows:
            self._stored_memo.setdefault(row.file_path, []).append(row)
        self.store.vector_cache.remember(rows)

    def _stored(self, doc_id: str, path: str) -> list[StoredChunk]:
        if path in self._fresh_paths:
            return []
        if path in self._stored_memo:
            return self._stored_memo.pop(path)
        try:
            rows = self.store.stored_chunks(doc_id=doc_id)
        except Exception:  # the delete below reports what is wrong with the store
            log.warning("could not read stored vectors of %s", doc_id, exc_info=True)
            return []
        self.store.vector_cache.remember(rows)
        return rows

    def index(self, doc_id: str, parsed: ParsedDocument) -> int:
        """Write the document's vectors in place of its old ones; returns how many."""
        chunks = self._chunk_memo.pop(self._key(parsed), None)
        if chunks is None:
            chunks = self._chunks(parsed)
        try:
            return self._write(doc_id, parsed, chunks)
        finally:
            if not self._in_run:  # an upload: nothing else will reuse these vectors
                self.store.discard_prepared()

    def _write(self, doc_id: str, parsed: ParsedDocument, chunks: list[Chunk]) -> int:
        stored = self._stored(doc_id, parsed.file_path)
        # Against a Milvus server the rows are rewritten all the same (with their vectors reused):
        # there a forced re-import is how BM25 statistics get one segment again (docs/deploy.md).
        if self.store.local and unchanged(
            stored, doc_id, parsed.file_path, parsed.category, chunks
        ):
            self.store.vector_cache.count(hits=len(chunks))
            return len(chunks)
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
                self.drop(doc_id)
                raise

    def drop(self, doc_id: str) -> None:
        """Best effort: a document that failed must not keep half of its vectors."""
        try:
            self.store.delete_doc(doc_id)
        except Exception:
            log.warning("could not remove vectors of %s", doc_id, exc_info=True)
