"""The server's start, in the background: it listens at once, answers 503 ``starting`` until the
services are up, then serves while the first import of an empty knowledge base runs as an ordinary
import job (``importing`` on ``/healthz``, progress on the console).

Phases: ``starting`` → ``importing`` (first start, re-importing what a crash interrupted, or
rebuilding a vector store whose damaged files were set aside) → ``ready``; ``failed`` when the
services cannot start (the reason is logged and the server stops, as it did when start-up blocked).

Several workers: the first import runs under the start-up lock (``Services.start_holding_lock``),
so another worker starting meanwhile stays ``starting`` until it is done, then finds it done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from api.jobs import ImportJob, JobRegistry
from api.schemas import camelize
from retrieval.writing import failures
from retrieval.writing.errors import ImportInProgress
from services import Services
from settings import Settings

log = logging.getLogger("superbiz.server")


class Boot:
    def __init__(
        self,
        app: FastAPI,
        settings: Settings,
        services: Services | None,
        progress: Callable[[dict[str, Any]], Any] | None = None,
        embeddings: Any = None,
    ) -> None:
        self.app, self.settings, self.given = app, settings, services
        self.progress, self.embeddings = progress, embeddings
        self.phase = "starting"
        self.error: str | None = None
        self.job: ImportJob | None = None
        self._t0 = time.monotonic()
        self.timeline: dict[str, float] = {}  # phase → seconds since the app started
        self._task: asyncio.Task[None] | None = None
        self._background: list[Any] = []  # the sweeper and the periodic knowledge checks

    def start(self) -> Boot:
        if self.given is not None:  # tests pass a started stack: serve it from the first request
            self._publish(self.given)
            self._mark("ready")
        else:
            self._task = asyncio.create_task(self._run(), name="superbiz-boot")
        return self

    def _mark(self, phase: str) -> None:
        self.phase = phase
        self.timeline[phase] = round(time.monotonic() - self._t0, 2)

    async def _run(self) -> None:
        try:
            async with Services.start_holding_lock(
                self.settings, ingest_if_empty=False, embeddings=self.embeddings, recover=False
            ) as svc:
                # Decided before serving, so /healthz never says "ok" before "importing". The
                # start-up recovery round (imports a crash interrupted, stores out of step): with
                # nothing interrupted it is quick and ends before the API serves, as it always did;
                # with interrupted imports (re-embedding takes minutes) it runs like the first
                # import, as a job while the API serves.
                # A vector store whose damaged files were set aside is rebuilt the same way.
                first = await svc.kb.needs_first_import()
                interrupted = await svc.kb.recovery.interrupted()
                rebuild = svc.kb.recovery.rebuild.active
                if not (interrupted or rebuild):
                    await svc.kb.recovery.recover()
                if first or interrupted or rebuild:
                    self._mark("importing")
                self._publish(svc)
                if first:
                    await self._first_import(svc)
                if interrupted or rebuild:
                    await self._recover(svc, interrupted)
            self._mark("ready")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = failures.describe(exc)
            self._mark("failed")
            log.error("cannot start: %s", exc, exc_info=not isinstance(exc, ValueError))
            # Serving a server that can do nothing would hide the fault: stop, as start-up did
            # when it blocked (``main`` exits with status 3).
            os.kill(os.getpid(), signal.SIGTERM)

    def _publish(self, svc: Services) -> None:
        """From here on the API serves (from whatever is indexed)."""
        self.app.state.services = svc
        self.app.state.runner = svc.runner()  # the services' one runner; ``stop`` drains it
        self.app.state.jobs = JobRegistry(svc.kb.ingestion)
        self._background.append(svc.sweeper().start())  # a dead worker's sessions: resumable
        # Interrupted imports and stores out of step are repaired (or reported) while it runs; a
        # round skips while an import (the first one too) holds the write lock.
        self._background.append(svc.kb.recovery.start(self.settings.knowledge_check_seconds))
        log.info(
            "SuperBiz Agent ready on http://%s:%s (database=%s, vectors=%s, model=%s)",
            self.settings.host,
            self.settings.port,
            self.settings.database_kind,
            self.settings.milvus_kind,
            self.settings.chat_model_kind,
        )

    async def _recover(self, svc: Services, interrupted: int) -> None:
        """The start-up recovery round as a job: ``importing`` (with the job, ``recovery: true``)
        while it re-imports what a crash interrupted, so the console's banner and ``/healthz``
        say what is going on."""
        recovery = svc.kb.recovery
        if recovery.rebuild.active:
            log.warning("%s", recovery.rebuild.message())
        if interrupted:
            log.info(
                "re-importing %d document(s) an interrupted import left unfinished", interrupted
            )
        try:
            job = self.app.state.jobs.start(False, recovery=recovery.recover, also=self.progress)
        except ImportInProgress:  # someone's import got there first
            return
        self.job = job
        self._mark("importing")
        await job.finished.wait()
        if job.status == "failed":
            log.error("start-up recovery failed: %s", job.error)

    async def _first_import(self, svc: Services) -> None:
        note = svc.kb.first_import
        note.begin()

        def both(event: dict[str, Any]) -> None:
            note.on_event(event)
            if self.progress:
                self.progress(event)

        try:
            self.job = self.app.state.jobs.start(False, first=True, also=both)
            await self.job.finished.wait()
        except ImportInProgress:  # someone's import got there first; it imports the same files
            log.info("first import: another import is already running")
            return
        finally:
            note.end()
        if self.job.status == "failed":
            log.error("first import failed: %s", self.job.error)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for part in self._background:
            await part.stop()
        jobs = getattr(self.app.state, "jobs", None)
        if jobs is not None:
            await jobs.close()
        runner = getattr(self.app.state, "runner", None)
        if runner is not None:
            await runner.drain()
        svc = getattr(self.app.state, "services", None)
        if svc is not None and self.given is None:
            await svc.close()

    def health(self) -> dict[str, Any]:
        """What ``/healthz`` adds about the start."""
        body: dict[str, Any] = {"phase": self.phase, "timeline": self.timeline}
        if self.job is not None and self.phase == "importing":
            body["import"] = camelize(self.job.view())
        if self.error:
            body["error"] = self.error
        return body
