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


class InvalidChunking(KnowledgeError):
    """Chunk size or overlap outside what the embedding model's window allows."""

    status, code = 422, "invalid_chunk_params"


class StorageFull(KnowledgeError):
    status, code = 507, "storage_full"


class DocumentExists(KnowledgeError):
    status, code = 409, "document_exists"


class DocumentNotFound(KnowledgeError):
    status, code = 404, "document_not_found"


class ImportInProgress(KnowledgeError):
    status, code = 409, "import_in_progress"


class VectorStoreDamaged(KnowledgeError):
    """The vector store answers but cannot be written to (its files were removed under it)."""

    status, code = 503, "vector_store_damaged"


class MilvusFileInUse(ValueError):
    """Another process holds the Milvus Lite file: this server refuses to start (the message says
    what to do); a ValueError, so start-up logs it without a traceback and exits."""


def store_files_removed(uri: str, *, lost: str = "") -> str:
    """What :class:`VectorStoreDamaged` says; ``lost``: how much is gone (e.g. "583 chunks of 49
    documents")."""
    gone = f": {lost} are gone from disk and" if lost else ", so"
    return (
        f"the vector store's files under {uri} were removed while the server was running{gone} "
        "nothing can be written to it; restart the server: at start-up every document is "
        "re-imported from its file"
    )
