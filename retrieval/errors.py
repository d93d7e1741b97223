"""Errors a knowledge-base caller can act on; the HTTP layer maps ``status`` to the response."""

from __future__ import annotations


class KnowledgeError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnsupportedFileType(KnowledgeError):
    status, code = 415, "unsupported_file_type"


class FileTooLarge(KnowledgeError):
    status, code = 413, "file_too_large"


class InvalidUpload(KnowledgeError):
    status, code = 400, "invalid_upload"


class InvalidDocument(KnowledgeError):
    """The file's content cannot be imported (empty, not UTF-8, bad frontmatter, …)."""

    status, code = 422, "invalid_document"


class StorageFull(KnowledgeError):
    status, code = 507, "storage_full"


class DocumentExists(KnowledgeError):
    status, code = 409, "document_exists"


class DocumentNotFound(KnowledgeError):
    status, code = 404, "document_not_found"


class ImportInProgress(KnowledgeError):
    status, code = 409, "import_in_progress"
