"""Turn a failure into a sentence a user can act on. The raw exception text goes to the server log.

Import results, document error messages and import jobs are read by operators in the console; a
Python class name or a driver's internal message there says nothing they can act on.
"""

from __future__ import annotations

import errno

from persistence.db import is_database_error
from retrieval.documents import DocumentError
from retrieval.errors import KnowledgeError

DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def describe(exc: BaseException, *, vector_store: str = "") -> str:
    """What went wrong, in words, with what to do next."""
    if isinstance(exc, DocumentError | KnowledgeError):
        return str(exc)
    if isinstance(exc, ConnectionError):  # the vector store's own "unreachable" error is one
        where = f" at {vector_store}" if vector_store else ""
        return f"the vector store{where} is unreachable; re-index the document when it is back"
    if is_database_error(exc):
        return "the database is unreachable or refused the write; retry when /healthz reports it ok"
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        return "the disk holding the knowledge base is full; free some space and retry"
    if isinstance(exc, OSError):
        return f"a file could not be read or written ({exc.strerror or 'input/output error'})"
    if isinstance(exc, TimeoutError):
        return "the operation timed out; retry, and check the server log if it keeps happening"
    if type(exc).__module__.startswith("pymilvus"):
        return "the vector store refused the operation; the server log has the reason"
    return "the operation failed unexpectedly; the server log has the details"
