"""An upload that a full disk stops is undone: its file, row and vectors go back to what they were.

``UploadUndo`` wraps storing and importing one upload. It sets room aside first (``reserve``: the
undo's own writes need space on a full disk) and keeps a replaced file as a hard link; when the disk
fills anywhere inside, it frees the room, puts the file back (which frees more space), forgets a new
document or re-indexes the replaced version, and raises ``StorageFull`` (507). Best effort: what it
cannot undo (a PENDING row), the next import repairs.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from types import TracebackType
from typing import Any

from persistence import document_repository as docs_repo
from persistence.models import ApiDocument
from retrieval.writing import failures
from retrieval.writing.errors import StorageFull
from retrieval.writing.uploads import keep_old, put_back, reserve

log = logging.getLogger(__name__)


class UploadUndo:
    def __init__(self, service: Any, rel: str, target: Path, existing: ApiDocument | None) -> None:
        self.service, self.rel, self.target, self.existing = service, rel, target, existing
        self.room: Path | None = None
        self.backup: Path | None = None
        self.stored = False

    async def __aenter__(self) -> UploadUndo:
        try:
            self.room = await asyncio.to_thread(reserve, self.service.kb_dir)
            self.backup = await asyncio.to_thread(keep_old, self.target)  # only when replacing
        except BaseException as exc:
            await self._cleanup()
            if isinstance(exc, StorageFull) or failures.is_disk_full(exc):
                raise self._full() from None
            raise
        self.stored = True  # from here on, a failure has something to undo
        return self

    async def __aexit__(
        self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc is None or not (isinstance(exc, StorageFull) or failures.is_disk_full(exc)):
                return
            log.warning("a full disk stopped the upload of %s", self.rel, exc_info=exc)
            if self.room is not None:  # the room the undo's writes need
                await asyncio.to_thread(self.room.unlink, missing_ok=True)
            if self.stored:
                await self._undo()
            raise self._full() from None
        finally:
            await self._cleanup()

    def _full(self) -> StorageFull:
        return StorageFull(
            f"{self.rel} was not stored: {failures.DISK_FULL_MESSAGE}; nothing was changed"
        )

    async def _cleanup(self) -> None:
        for path in (self.backup, self.room):
            if path is not None:
                await asyncio.to_thread(path.unlink, missing_ok=True)

    async def _undo(self) -> None:
        svc, rel = self.service, self.rel
        try:
            await asyncio.to_thread(put_back, self.target, self.backup, svc.kb_dir)
            async with svc.db.session() as s:
                row = await docs_repo.get_document_by_path(s, rel)
            if row is not None and self.existing is None:
                await svc._forget(row)
            elif row is not None and self.backup is not None:  # the replaced version, again
                raw = await asyncio.to_thread(self.target.read_bytes)
                await svc._import(rel, raw, hashlib.sha256(raw).hexdigest())
        except Exception:
            log.warning("could not undo the upload of %s", rel, exc_info=True)
