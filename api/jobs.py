"""Import jobs: ``/api/knowledge/init`` runs in the background and reports per-file progress."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from retrieval.writing import failures
from retrieval.writing.errors import ImportInProgress
from retrieval.writing.ingestion import IngestionService
from retrieval.writing.uploads import ImportReport

log = logging.getLogger(__name__)
KEEP_JOBS = 20


@dataclass
class ImportJob:
    job_id: str
    force: bool
    status: str = "running"
    total: int = 0
    processed: int = 0
    files: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    error: str | None = None
    first: bool = False  # the server's first import of an empty knowledge base
    recovery: bool = False  # the start-up recovery: interrupted imports imported again
    work: Callable[[Callable[[dict[str, Any]], Any]], Awaitable[Any]] | None = None
    # Files first..last (1-based) are being embedded: done of total chunks (big files take minutes).
    embedding: dict[str, int] | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    also: Callable[[dict[str, Any]], Any] | None = None  # another listener (the lookups' note)
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    def view(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "status": self.status,
            "force": self.force,
            "total": self.total,
            "processed": self.processed,
            "files": list(self.files),
            "summary": self.summary,
            "error": self.error,
            "first": self.first,
            "recovery": self.recovery,
            "embedding": self.embedding,
        }

    def on_event(self, event: dict[str, Any]) -> None:
        if event["event"] == "start":
            self.total = event["total"]
        elif event["event"] == "chunks":
            self.embedding = {k: event[k] for k in ("done", "total", "first", "last")}
        elif event["event"] == "file" and event["status"] != "PROCESSING":
            self.processed = event["index"]
            self.files.append({k: event.get(k) for k in ("file", "status", "error", "chunks")})
        if self.also is not None:
            self.also(event)
        self.changed.set()


class JobRegistry:
    def __init__(self, ingestion: IngestionService) -> None:
        self.ingestion = ingestion
        self.jobs: dict[str, ImportJob] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def running(self) -> ImportJob | None:
        return next((j for j in self.jobs.values() if j.status == "running"), None)

    def start(
        self,
        force: bool,
        *,
        first: bool = False,
        also: Callable[[dict[str, Any]], Any] | None = None,
        recovery: Callable[[Callable[[dict[str, Any]], Any]], Awaitable[Any]] | None = None,
    ) -> ImportJob:
        """``recovery``: instead of an import of the folder, this round (given the progress
        callback; it returns an ImportReport or None) runs as the job."""
        if running := self.running():
            raise ImportInProgress(
                f"an import is already running; follow it at /api/knowledge/jobs/{running.job_id}"
            )
        if self.ingestion.busy:
            raise ImportInProgress("documents are being written right now; retry in a moment")
        job = ImportJob(
            uuid.uuid4().hex, force, first=first, also=also, recovery=recovery is not None
        )
        job.work = recovery
        self.jobs[job.job_id] = job
        for old in list(self.jobs)[:-KEEP_JOBS]:
            self.jobs.pop(old, None)
        task = asyncio.create_task(self._run(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job

    async def _run(self, job: ImportJob) -> None:
        try:
            if job.work is not None:
                report = await job.work(job.on_event) or ImportReport()
            else:
                report = await self.ingestion.init(force=job.force, progress=job.on_event)
            # Files that failed without being imported (unreadable, or refused before and
            # unchanged) have no progress event; list them with their reason too.
            listed = {f["file"] for f in job.files}
            job.files += [
                {"file": r.file_path, "status": r.status, "error": r.error, "chunks": 0}
                for r in report.results
                if r.status == "FAILED" and r.file_path not in listed
            ]
            job.summary = {
                "total": report.as_dict()["total"],
                "indexed": report.count("INDEXED"),
                "failed": report.count("FAILED"),
                "skipped": report.count("SKIPPED"),
                "removed": report.count("REMOVED"),
                "durationMs": round(report.duration_ms, 1),
            }
            job.status = "done"
        except Exception as exc:
            log.exception("import job %s failed", job.job_id)  # the raw error stays in the log
            job.status = "failed"
            job.error = failures.describe(exc, vector_store=self.ingestion.store.uri)
        finally:
            job.embedding = None
            job.finished.set()
        job.changed.set()

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
