"""The rows a folder import starts from: a new file's row, and whether a stored row's content was
refused (not a passing fault), so an unchanged refused file is not parsed again."""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath

from persistence.models import ApiDocument, DocumentStatus

REFUSED = "refused"  # doc_metadata flag: the content itself was refused (not a passing fault)


def is_refused(row: ApiDocument) -> bool:
    return row.status == DocumentStatus.FAILED and bool((row.doc_metadata or {}).get(REFUSED))


def new_document(rel: str) -> ApiDocument:
    """The row of a file seen for the first time (not stored yet)."""
    path = PurePosixPath(rel)
    return ApiDocument(
        doc_id=uuid.uuid4().hex,
        file_name=path.name,
        file_path=rel,
        category=path.parts[0] if len(path.parts) > 1 else "general",
        status=DocumentStatus.PENDING,
    )
