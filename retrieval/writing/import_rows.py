"""The rows a folder import starts from: a new file's row, whether a stored row's content was
refused (not a passing fault), so an unchanged refused file is not parsed again, and whether an
indexed row records all the judge reads."""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath

from persistence.models import ApiDocument, DocumentStatus

REFUSED = "refused"  # doc_metadata flag: the content itself was refused (not a passing fault)
# What an import records in ``doc_metadata`` for the judge (``DocInfo``); a document imported
# before a field existed is imported again (its chunks' vectors come from the embedding cache).
JUDGE_FIELDS = ("terms", "codes")


def is_refused(row: ApiDocument) -> bool:
    return row.status == DocumentStatus.FAILED and bool((row.doc_metadata or {}).get(REFUSED))


def is_current(row: ApiDocument) -> bool:
    """Indexed, with every field the judge reads: an unchanged file needs no import."""
    meta = row.doc_metadata or {}
    return row.status == DocumentStatus.INDEXED and all(k in meta for k in JUDGE_FIELDS)


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
