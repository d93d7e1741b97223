"""Errors a knowledge-base caller can act on. Each says what happened in the knowledge base's own
terms: ``code`` is its kind (``document_not_found``, ``storage_full``, …), the message says what to
do. What a kind means over HTTP is the API's business (``api/errors.py``)."""

from __future__ import annotations


class KnowledgeError(Exception):
    code = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnsupportedFileType(KnowledgeError):
    code = "unsupported_file_type"


class FileTooLarge(KnowledgeError):
    code = "file_too_large"


class InvalidUpload(KnowledgeError):
    code = "invalid_upload"


class InvalidDocument(KnowledgeError):
    """The file's content cannot be imported (empty, not UTF-8, bad frontmatter, …)."""

    code = "invalid_document"


class InvalidChunking(KnowledgeError):
    """Chunk size or overlap outside what the embedding model's window allows."""

    code = "invalid_chunk_params"


class StorageFull(KnowledgeError):
    code = "storage_full"


class DocumentExists(KnowledgeError):
    code = "document_exists"


class DocumentNotFound(KnowledgeError):
    code = "document_not_found"


class ImportInProgress(KnowledgeError):
    code = "import_in_progress"


class VectorStoreDamaged(KnowledgeError):
    """The vector store answers but cannot be written to (its files were removed under it)."""

    code = "vector_store_damaged"


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
